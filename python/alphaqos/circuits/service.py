"""The reservation service's core: requests, admission, lifecycle, audit.

The HTTP routes (:mod:`.api`) and the tests call :class:`CircuitService`;
it owns the database engine, the topology and an in-memory index of every
link's bookings (:class:`.admission.LinkBookings`, the Rust admission core).

Admission (exact, per link)
    A request fits a path if on every link the highest booking over the
    request's interval plus its own rate (each step of a profile against
    the bookings under it) stays within the link's reservable share. The
    path is the shortest (fewest hops, :meth:`.topology.Topology.paths`,
    Yen's algorithm) over the links on which the request fits, so the first
    path found fits on every link.

Consistency across processes
    Every write is one explicit transaction. Each link's row carries a
    version that the transaction changing the link's bookings increases.
    Before deciding, a transaction locks the rows of the links it is to
    book (PostgreSQL: ``SELECT ... FOR UPDATE``, in link-id order so two
    transactions never wait on each other; SQLite: the database's write
    lock, taken by ``BEGIN IMMEDIATE``), then compares their versions with
    those its index was built from; a link another process changed is
    reloaded from the ``bookings`` table and the decision made again. So a
    link's bookings are never decided on a stale view, and the index stays
    O(log n) per request however many bookings there are.

The write path
    Its statements run on the driver's own connection (:mod:`.raw`, sqlite3
    or psycopg, kept prepared by the driver), not through SQLAlchemy's
    execution layer, which cost more than the statements; SQLAlchemy keeps
    the schema, the migrations, the pool and the cold paths.

Bytes and a deadline
    The smallest constant rate that moves ``bytes`` between ``start`` and
    ``deadline`` is ``8 bytes / (deadline - start)``; the service books that
    times ``margin`` (default 1.1) up to the deadline. Refused, it says the
    most it could book over the window (``max_bookable_bps``) and the
    earliest finish a constant rate from ``start`` could reach on any of the
    k shortest paths (``earliest_finish``, see :meth:`CircuitService._earliest_finish`).
"""

from __future__ import annotations

import functools
import hashlib
import math
import re
import secrets
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from fractions import Fraction
from pathlib import Path
from typing import Any

import orjson
from sqlalchemy import select
from sqlalchemy.orm import Session

from .. import units
from . import fsm
from .admission import LinkBookings
from .db import is_postgresql, make_engine, migrate
from .errors import Problem, field
from .models import Audit, BookingRow, Event, LinkRow, Reservation, Token
from .raw import Raw, placeholders
from .topology import DEFAULT_POLICING, POLICING_MODES, Topology

ROLES = ("user", "operator", "admin")
#: How far in the past a start may be (clock skew between client and service).
START_GRACE_NS = 60 * 10**9
#: Paths tried when a bytes+deadline request is refused (earliest finish, most bookable).
K_PATHS = 8
#: Seconds a token, once found, is taken as valid without a lookup.
TOKEN_CACHE_S = 30.0
#: Who an audit event names when the change came from the machine's command line (``token create``).
LOCAL = "local"
#: The last instant the service books (i64 nanoseconds reach year 2262).
FAR_NS = 2**62
NS = 10**9


# --- the write path's statements (qmark style, :class:`.raw.Raw`; the drivers keep them prepared)
_VERSIONS = "SELECT id, version, reservable_bps FROM links"
_VERSIONS_OF = "SELECT id, version, reservable_bps FROM links WHERE id IN ({}) ORDER BY id"
_BUMP = "UPDATE links SET version = version + 1 WHERE id IN ({})"
_UNBOOK = "DELETE FROM bookings WHERE reservation_id = ?"
_BOOK = "INSERT INTO bookings (reservation_id, link_id, profile, end_ns) VALUES (?, ?, ?, ?)"
_RESERVE = ("INSERT INTO reservations (version, owner, state, src, dst, path, start_ns, end_ns, rate_bps, profile, "
            "policing, bytes, deadline_ns, margin, hold_expires_ns, description, created_ns, updated_ns) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id")
_EVENT = ("INSERT INTO events (reservation_id, action, who, at_ns, old_state, new_state, old_version, new_version, detail) "
          "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)")
_LOG = "INSERT INTO booking_log (link_id, version, sign, profile, end_ns) VALUES (?, ?, ?, ?, ?)"
_LOG_SINCE = ("SELECT link_id, version, sign, CAST(profile AS TEXT), end_ns FROM booking_log "
              "WHERE link_id IN ({}) AND version > ? ORDER BY id")
#: Log rows every index may have passed: more than ``keep`` versions behind their link's.
_LOG_PRUNE = "DELETE FROM booking_log WHERE version <= (SELECT version FROM links WHERE links.id = booking_log.link_id) - ?"
_LINK_BOOKINGS = "SELECT CAST(profile AS TEXT), end_ns FROM bookings WHERE link_id = ?"
_REVOKED = "SELECT revoked_ns FROM tokens WHERE sha256 = ?"
_DUE = "SELECT id FROM reservations WHERE state = 'held' AND hold_expires_ns <= ?"
_AUDIT = "INSERT INTO audit (action, who, at_ns, target, old, new) VALUES (?, ?, ?, ?, ?, ?)"


def _dumps(value: Any) -> str:
    """JSON text as SQLAlchemy's JSON type stores it (both read it back)."""
    return orjson.dumps(value).decode()


# --- times and rates -----------------------------------------------------------------


def now_ns() -> int:
    return time.time_ns()


def iso(ns: int | None) -> str | None:
    """RFC 3339 UTC: ``2026-11-27T10:00:00Z``, with as many fraction digits as
    the nanoseconds need (times round-trip exactly through :func:`parse_time`)."""
    if ns is None:
        return None
    seconds, rest = divmod(ns, NS)
    return _iso_seconds(seconds) + (f".{rest:09d}".rstrip("0") if rest else "") + "Z"


@functools.lru_cache(maxsize=4096)
def _iso_seconds(seconds: int) -> str:
    # strftime is a good share of a reserve's answer; the same seconds recur.
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S")


_FRACTION = re.compile(r"(\.\d+)")


def parse_time(value: Any, loc: tuple) -> int:
    """An RFC 3339 time (without a zone: UTC) -> integer nanoseconds (up to
    nine fraction digits kept)."""
    message = f"expected an RFC 3339 time like 2026-01-01T10:00:00Z, got {value!r}"
    if not isinstance(value, str):
        raise field(loc, message)
    text = value.strip().replace("z", "Z")
    fraction = _FRACTION.search(text[10:])
    nanos = 0
    if fraction:
        digits = fraction.group(1)[1:]
        if len(digits) > 9:
            raise field(loc, f"{message} (at most nine fraction digits)")
        nanos = int(digits.ljust(9, "0"))
        text = text[:10] + text[10:].replace(fraction.group(1), "", 1)
    try:
        t = datetime.fromisoformat(text)
    except ValueError:
        raise field(loc, message) from None
    if t.tzinfo is None:
        t = t.replace(tzinfo=UTC)
    delta = t - datetime(1970, 1, 1, tzinfo=UTC)
    ns = (delta.days * 86400 + delta.seconds) * NS + nanos
    if not 0 <= ns < FAR_NS:
        raise field(loc, f"out of range: {value!r}")
    return ns


def parse_rate(value: Any, loc: tuple) -> int:
    """``"2Gbps"`` or an integer of bit/s -> bit/s, above zero."""
    if isinstance(value, bool):
        raise field(loc, f"expected a rate like 2Gbps or bit/s as a whole number, got {value!r}")
    if isinstance(value, int):
        bps = value
    elif isinstance(value, float) and value.is_integer():
        bps = int(value)
    else:
        try:
            bps = units.parse_rate(value)
        except ValueError as exc:
            raise field(loc, str(exc)) from None
    if bps <= 0:
        raise field(loc, f"must be above 0 bit/s, got {value!r}")
    return bps


# --- who asks ------------------------------------------------------------------------


@dataclass(frozen=True)
class Principal:
    name: str
    role: str
    #: The SHA-256 of the token it came with ("" for in-process callers).
    token: str = ""

    @property
    def sees_all(self) -> bool:
        return self.role in ("operator", "admin")


def token_hash(token: str) -> str:
    """Tokens are 256 random bits, so one SHA-256 is enough to store them
    (no dictionary to guess from; a slow hash would only slow every request)."""
    return hashlib.sha256(token.encode()).hexdigest()


def create_token(engine, role: str, name: str | None, at_ns: int, who: str = LOCAL) -> tuple[str, str]:
    """Store a new token of ``role`` (its SHA-256 only) and its audit event
    (``token_create`` by ``who``); returns (token, name)."""
    if role not in ROLES:
        raise field(("body", "role"), f"expected one of {', '.join(ROLES)}, got {role!r}")
    token = "aqc_" + secrets.token_urlsafe(32)
    name = name or f"{role}-{secrets.token_hex(3)}"
    with Session(engine) as s, s.begin():
        row = Token(name=name, role=role, sha256=token_hash(token), created_ns=at_ns)
        s.add(row)
        s.flush()
        s.add(Audit(action="token_create", who=who, at_ns=at_ns, target=str(row.id), old=None,
                    new={"id": row.id, "name": name, "role": role}))  # fmt: skip
    return token, name


# --- a request, checked --------------------------------------------------------------


@dataclass
class Request:
    src: str
    dst: str
    start: int
    end: int
    profile: list[tuple[int, int]]
    policing: str | None
    bytes: int | None = None
    deadline: int | None = None
    margin: float | None = None
    description: str | None = None

    @property
    def rate(self) -> int:
        return max(r for _, r in self.profile)


def _profile(value: Any, start: int | None, loc: tuple) -> list[tuple[int, int]]:
    if not isinstance(value, list) or not value:
        raise field(loc, "expected a list of [from_time, rate] pairs, ascending in time")
    out: list[tuple[int, int]] = []
    for i, item in enumerate(value):
        if not isinstance(item, list | tuple) or len(item) != 2:
            raise field((*loc, i), "expected a [from_time, rate] pair")
        t = parse_time(item[0], (*loc, i, 0))
        r = parse_rate(item[1], (*loc, i, 1))
        if out and t <= out[-1][0]:
            raise field((*loc, i, 0), f"not after the step before it ({iso(out[-1][0])}): a profile is ordered in time")
        out.append((t, r))
    if start is not None and out[0][0] != start:
        raise field((*loc, 0, 0), f"the first step must be at the start ({iso(start)})")
    return out


# --- the service ---------------------------------------------------------------------


class CircuitService:
    """Everything the API does, callable in-process."""

    def __init__(self, db: str, topology: Topology, *, hold_timeout: float = 120.0, state_dir: Path | None = None,
                 backend: str = "dry-run", device: str | None = None, margin: float = 1.1,
                 clock: Callable[[], int] = now_ns, log_keep: int = 1000, prune_every: int = 1000) -> None:  # fmt: skip
        self.engine = make_engine(db)
        self.postgresql = is_postgresql(self.engine)
        # Reads need no write lock (SQLite: deferred transactions, a snapshot each).
        self.reader = self.engine if self.postgresql else make_engine(db, immediate=False)
        self._principals: dict[str, tuple[Principal, float]] = {}
        self.topology = topology
        self.hold_timeout_ns = int(hold_timeout * NS)
        self.state_dir = Path(state_dir) if state_dir is not None else Path("circuits-state")
        self.backend, self.device, self.margin = backend, device, margin
        self.clock = clock
        self._lock = threading.RLock()
        self._index = LinkBookings(topology)
        self._known: dict[str, int] = {}
        self._dirty: set[str] = set()
        self._next_expiry_check = 0
        #: booking_log: rows more than ``log_keep`` versions behind their link's are
        #: deleted every ``prune_every`` changes this process writes (an index
        #: further behind reloads the link instead of following it).
        self.log_keep, self.prune_every = log_keep, prune_every
        self._writes_since_prune = 0
        #: Links brought up to date from the change log (not reloaded), and reloaded: counts for tests.
        self.followed = 0
        self.reloaded = 0
        migrate(self.engine)
        with self._write() as s:
            have = set(s.scalars(select(LinkRow.id)))
            for link in topology.links:
                if link.id not in have:
                    s.add(LinkRow(id=link.id, version=0))
        # The write path's own connection (the driver's, see .raw), used under self._lock.
        self._hot_record = self.engine.raw_connection()
        self._hot = Raw(self._hot_record.driver_connection, self.postgresql)
        with self._tx() as raw:
            self._sync(raw)

    def close(self) -> None:
        with self._lock:
            self._hot_record.close()
        self.engine.dispose()
        self.reader.dispose()

    # -- transactions and the index --------------------------------------------------
    def _failed(self) -> None:
        # The index may hold changes of a transaction that did not commit:
        # reload the links it touched before their next use.
        for link in self._dirty:
            self._known[link] = -1

    @contextmanager
    def _write(self) -> Iterator[Session]:
        """One write transaction through a SQLAlchemy session (the cold paths),
        serialised in this process (the index is shared); :meth:`raw` gives
        the statements of the write path on its connection."""
        with self._lock:
            try:
                with Session(self.engine, expire_on_commit=False) as s, s.begin():
                    yield s
            except BaseException:
                self._failed()
                raise
            finally:
                self._dirty.clear()

    @contextmanager
    def _tx(self) -> Iterator[Raw]:
        """One write transaction on the driver's connection (the hot path:
        reserve, expiry), serialised in this process."""
        with self._lock:
            raw = self._hot
            try:
                raw.begin()
                yield raw
                raw.commit()
            except BaseException:
                self._failed()
                try:
                    raw.rollback()
                except Exception:  # the connection is gone: take a new one
                    self._hot_record.invalidate()
                    self._hot_record = self.engine.raw_connection()
                    self._hot = Raw(self._hot_record.driver_connection, self.postgresql)
                raise
            finally:
                self._dirty.clear()

    def raw(self, s: Session) -> Raw:
        """The session's transaction, on the driver's connection."""
        return Raw(s.connection().connection.driver_connection, self.postgresql)

    def _reload(self, raw: Raw, link: str, version: int, cap: int | None = None) -> None:
        # The rows as the driver gives them (JSON as text, parsed here): at
        # 10^5 bookings any per-row type processing would dominate.
        rows = raw.execute(_LINK_BOOKINGS, (link,))
        self._index.set_cap(link, self.topology.link(link).reservable_bps if cap is None else cap)
        self._index.reset(link, ((orjson.loads(profile), end) for profile, end in rows))
        self._known[link] = version
        self.reloaded += 1

    def _sync(self, raw: Raw, subset: list[str] | None = None, lock: bool = False) -> bool:
        """Bring the index of the links ``subset`` (default all) to the database's
        versions, locking their rows first if ``lock`` (PostgreSQL: ``FOR
        UPDATE``, in link-id order); True if any was stale."""
        if subset is None:
            assert not lock, "locks are taken on the links to book"
            rows = raw.rows(_VERSIONS)
        else:
            ids = sorted(set(subset))
            query = _VERSIONS_OF.format(placeholders(len(ids)))
            rows = raw.rows(query + " FOR UPDATE" if lock and self.postgresql else query, ids)
        stale = {link: (version, cap) for link, version, cap in rows
                 if link in self._index._cores and self._known.get(link) != version}  # fmt: skip
        if stale:
            self._follow(raw, stale)
        return bool(stale)

    def _follow(self, raw: Raw, stale: dict[str, tuple[int, int | None]]) -> None:
        """Bring each stale link's index (``{link: (version, reservable_bps)}``)
        from the version it holds to the database's by the log's changes in
        between, read for all of them in one query (O(changes log n), not a
        reload of every booking); a link that cannot follow is reloaded: never
        loaded, a failed transaction's leftovers, or a version without its
        log rows (written otherwise, or pruned)."""
        known = {link: self._known.get(link) for link in stale}
        followable = {link: k for link, k in known.items() if k is not None and 0 <= k <= stale[link][0]}
        changes: dict[str, list[tuple]] = {link: [] for link in followable}
        if followable:
            ids = sorted(followable)
            for link, version, sign, profile, end in raw.rows(_LOG_SINCE.format(placeholders(len(ids))),
                                                              (*ids, min(followable.values()))):  # fmt: skip
                if followable[link] < version <= stale[link][0]:
                    changes[link].append((version, sign, profile, end))
        for link, (version, cap) in stale.items():
            rows = changes.get(link)
            if rows is None or {v for v, *_ in rows} != set(range(followable[link] + 1, version + 1)):
                self._reload(raw, link, version, cap)
                continue
            self._index.set_cap(link, self.topology.link(link).reservable_bps if cap is None else cap)
            for _, sign, profile, end in rows:
                if sign > 0:
                    self._index.book([link], [tuple(p) for p in orjson.loads(profile)], end)
                elif sign < 0:
                    self._index.release([link], [tuple(p) for p in orjson.loads(profile)], end)
            self._known[link] = version
            self.followed += 1

    def _change(self, raw: Raw, resv_id: int, path: list[str], old: tuple | None, new: tuple | None) -> None:
        """Replace a reservation's bookings (``(profile, end)`` or None) on
        ``path``, in the database and the index; the links' versions go up."""
        self._dirty.update(path)
        old_json = _dumps([list(p) for p in old[0]]) if old is not None else None
        new_json = _dumps([list(p) for p in new[0]]) if new is not None else None
        if old is not None:
            self._index.release(path, old[0], old[1])
            raw.execute(_UNBOOK, (resv_id,))
        if new is not None:
            self._index.book(path, new[0], new[1])
            raw.executemany(_BOOK, [(resv_id, link, new_json, new[1]) for link in path])
        raw.execute(_BUMP.format(placeholders(len(path))), path)
        log = []
        for link in path:
            version = self._known[link] = self._known.get(link, 0) + 1
            if old is not None:
                log.append((link, version, -1, old_json, old[1]))
            if new is not None:
                log.append((link, version, 1, new_json, new[1]))
        raw.executemany(_LOG, log)
        self._logged(raw)

    def _logged(self, raw: Raw) -> None:
        """After a change written to booking_log: every ``prune_every`` changes,
        delete the rows more than ``log_keep`` versions behind their link's."""
        self._writes_since_prune += 1
        if self._writes_since_prune >= self.prune_every:
            self._writes_since_prune = 0
            raw.execute(_LOG_PRUNE, (self.log_keep,))

    def _audit(self, raw: Raw, action: str, who: str, at: int, target: str, old: dict | None, new: dict | None) -> None:
        raw.execute(_AUDIT, (action, who, at, target, None if old is None else _dumps(old),
                             None if new is None else _dumps(new)))  # fmt: skip

    # -- tokens ------------------------------------------------------------------------
    def create_token(self, role: str, name: str | None = None, who: str = LOCAL) -> tuple[str, str]:
        """A new bearer token for ``role``; returns (token, name). Only its hash is stored."""
        return create_token(self.engine, role, name, self.clock(), who)

    def tokens(self) -> list[dict]:
        with Session(self.reader) as s, s.begin():
            return [{"id": t.id, "name": t.name, "role": t.role, "created": iso(t.created_ns), "revoked": iso(t.revoked_ns)}
                    for t in s.scalars(select(Token).order_by(Token.id))]  # fmt: skip

    def revoke_token(self, who: Principal, token_id: int) -> dict:
        """Revoke a token: refused from now on (this process forgets it at once);
        an audit event ``token_revoke`` (none if it was revoked already)."""
        now = self.clock()
        with self._write() as s:
            self._check_token(self.raw(s), who)
            row = s.get(Token, token_id, with_for_update=True)
            if row is None:
                raise field(("path", "id"), f"no token {token_id}", status=404)
            if row.revoked_ns is None:
                row.revoked_ns = now
                self._audit(self.raw(s), "token_revoke", who.name, now, str(row.id), {"name": row.name, "revoked": None},
                            {"name": row.name, "revoked": iso(now)})  # fmt: skip
            self._principals.pop(row.sha256, None)
            return {"id": row.id, "name": row.name, "role": row.role, "revoked": iso(row.revoked_ns)}

    def audit(self, after: int = 0, limit: int = 1000) -> list[dict]:
        """The admin's changes (link shares, tokens created and revoked), oldest
        first, after the event ``after``."""
        with Session(self.reader) as s, s.begin():
            rows = s.scalars(select(Audit).where(Audit.id > after).order_by(Audit.id).limit(limit))
            return [{"id": a.id, "action": a.action, "who": a.who, "at": iso(a.at_ns), "target": a.target,
                     "old": a.old, "new": a.new} for a in rows]  # fmt: skip

    def _check_token(self, raw: Raw, who: Principal) -> None:
        """Inside a write transaction: refuse a token revoked since it was cached
        (by any process), so no revoked token changes anything."""
        if not who.token:
            return
        row = raw.one(_REVOKED, (who.token,))
        if row is not None and row[0] is not None:
            self._principals.pop(who.token, None)
            raise Problem(401, f"token revoked at {iso(row[0])}")

    def authenticate(self, authorization: str | None, *, checked_later: bool = False) -> Principal:
        """The token's owner and role. A token found is remembered for
        :data:`TOKEN_CACHE_S` seconds (its role and name: no session, no ORM
        row per request); a cached token is still checked against revocation
        at every request, by one indexed lookup on the write path's
        connection, so a token revoked by any process is refused at once
        everywhere. ``checked_later``: the caller's write transaction checks
        it (:meth:`_check_token`), so the lookup is not made twice."""
        if not authorization:
            raise Problem(401, "a bearer token is needed (Authorization: Bearer ...)")
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise Problem(401, "expected Authorization: Bearer TOKEN")
        digest = token_hash(token.strip())
        cached = self._principals.get(digest)
        if cached is not None and cached[1] > time.monotonic():
            if not checked_later:
                with self._lock:
                    row = self._hot.one(_REVOKED, (digest,))
                    self._hot.rollback()
                if row is None or row[0] is not None:
                    self._principals.pop(digest, None)
                    raise Problem(401, "unknown token" if row is None else f"token revoked at {iso(row[0])}")
            return cached[0]
        with Session(self.reader) as s, s.begin():
            row = s.scalars(select(Token).where(Token.sha256 == digest)).first()
            if row is None:
                raise Problem(401, "unknown token")
            if row.revoked_ns is not None:
                raise Problem(401, f"token revoked at {iso(row.revoked_ns)}")
            principal = Principal(row.name, row.role, digest)
        self._principals[digest] = (principal, time.monotonic() + TOKEN_CACHE_S)
        return principal

    # -- requests ------------------------------------------------------------------------
    def parse_request(self, body: dict[str, Any], now: int) -> Request:
        loc = ("body",)
        for name in ("src", "dst"):
            value = body.get(name)
            if not isinstance(value, str) or not value:
                raise field((*loc, name), "required: a host or router of the topology")
            if value not in self.topology.nodes:
                raise field((*loc, name), f"unknown endpoint {value!r}: expected one of {', '.join(sorted(self.topology.nodes))}")
        if body["src"] == body["dst"]:
            raise field((*loc, "dst"), "the same as src")
        kinds = [k for k in ("rate", "profile", "bytes") if body.get(k) is not None]
        if len(kinds) != 1:
            raise field(loc, "give exactly one of rate, profile, or bytes with a deadline" +
                        (f" (got {', '.join(kinds)})" if kinds else ""))  # fmt: skip
        policing = body.get("policing")
        if policing is not None and policing not in POLICING_MODES:
            raise field((*loc, "policing"), f"expected one of {', '.join(POLICING_MODES)}, got {policing!r}")
        start = None
        if body.get("start") is not None:
            start = parse_time(body["start"], (*loc, "start"))
        elif kinds == ["profile"] and isinstance(body["profile"], list) and body["profile"]:
            first = body["profile"][0]
            start = parse_time(first[0] if isinstance(first, list | tuple) and first else None, (*loc, "profile", 0, 0))
        else:
            raise field((*loc, "start"), "required: an RFC 3339 time")
        if start < now - START_GRACE_NS:
            raise field((*loc, "start"), f"in the past ({iso(start)}, now {iso(now)})")
        description = body.get("description")
        if description is not None and not isinstance(description, str):
            raise field((*loc, "description"), "expected a string")
        req = Request(body["src"], body["dst"], start, 0, [], policing, description=description)
        if kinds == ["bytes"]:
            nbytes = body["bytes"]
            if isinstance(nbytes, str):
                try:
                    nbytes = units.parse_size(nbytes)
                except ValueError as exc:
                    raise field((*loc, "bytes"), str(exc)) from None
            if isinstance(nbytes, bool) or not isinstance(nbytes, int) or nbytes <= 0:
                raise field((*loc, "bytes"), f"must be a whole number of bytes above 0, got {body['bytes']!r}")
            if body.get("deadline") is None:
                raise field((*loc, "deadline"), "required with bytes")
            if body.get("end") is not None:
                raise field((*loc, "end"), "not with bytes: the reservation ends at the deadline")
            deadline = parse_time(body["deadline"], (*loc, "deadline"))
            if deadline <= start:
                raise field((*loc, "deadline"), f"at or before the start ({iso(start)}): no rate can meet it")
            margin = body.get("margin", self.margin)
            if isinstance(margin, bool) or not isinstance(margin, int | float) or not 1 <= margin <= 10:
                raise field((*loc, "margin"), f"expected a number from 1 to 10, got {margin!r}")
            rate = math.ceil(Fraction(8 * nbytes * NS) * Fraction(str(margin)) / (deadline - start))
            req.bytes, req.deadline, req.margin, req.end = nbytes, deadline, float(margin), deadline
            req.profile = [(start, rate)]
            return req
        if body.get("end") is None:
            raise field((*loc, "end"), "required with a rate or a profile")
        req.end = parse_time(body["end"], (*loc, "end"))
        if req.end <= start:
            raise field((*loc, "end"), f"at or before the start ({iso(start)})")
        if kinds == ["rate"]:
            req.profile = [(start, parse_rate(body["rate"], (*loc, "rate")))]
        else:
            req.profile = _profile(body["profile"], start, (*loc, "profile"))
            if req.profile[-1][0] >= req.end:
                raise field((*loc, "profile", len(req.profile) - 1, 0), f"at or after the end ({iso(req.end)})")
        return req

    # -- reserve -------------------------------------------------------------------------
    def reserve(self, who: Principal, body: dict[str, Any]) -> dict:
        """Admit and book a request: one transaction on the driver's connection
        (the hot path, see :mod:`.raw`); the reservation is ``held``."""
        now = self.clock()
        req = self.parse_request(body, now)
        self.expire_due()
        with self._tx() as raw:
            self._check_token(raw, who)
            self._sync(raw)
            while True:
                path = self._find_path(req.src, req.dst, req.profile, req.end)
                if path is None:
                    raise self._refusal(req)
                # PostgreSQL: lock the path's links; another process may have
                # booked them since. (SQLite: BEGIN IMMEDIATE holds the
                # database's write lock, so the sync above is still current.)
                if not self.postgresql or not self._sync(raw, path, lock=True):
                    break
            # Unless asked otherwise, the edge port's policing (the topology's).
            policing = req.policing or self.topology.link(path[0]).policing or DEFAULT_POLICING
            profile = [list(p) for p in req.profile]
            hold = now + self.hold_timeout_ns
            resv_id = raw.one(_RESERVE, (1, who.name, fsm.State.HELD.value, req.src, req.dst, _dumps(path), req.start,
                                         req.end, req.rate, _dumps(profile), policing, req.bytes, req.deadline,
                                         req.margin, hold, req.description, now, now))[0]  # fmt: skip
            self._change(raw, resv_id, path, None, (req.profile, req.end))
            raw.execute(_EVENT, (resv_id, "reserve", who.name, now, None, fsm.State.HELD.value, None, 1, None))
        return {"id": resv_id, "version": 1, "owner": who.name, "state": fsm.State.HELD.value, "src": req.src,
                "dst": req.dst, "path": path, "start": iso(req.start), "end": iso(req.end), "rate_bps": req.rate,
                "profile": [[iso(t), bps] for t, bps in req.profile], "policing": policing, "bytes": req.bytes,
                "deadline": iso(req.deadline), "margin": req.margin, "hold_expires": iso(hold),
                "description": req.description, "created": iso(now), "updated": iso(now)}  # fmt: skip

    def _find_path(self, src: str, dst: str, profile: list[tuple[int, int]], end: int) -> list[str] | None:
        fits = lambda link: self._index.fits_link(link.id, profile, end)  # noqa: E731
        return next(self.topology.paths(src, dst, fits), None)

    def _refusal(self, req: Request) -> Problem:
        paths = [p for _, p in zip(range(K_PATHS), self.topology.paths(req.src, req.dst))]
        if not paths:
            return field(("body", "dst"), f"no path from {req.src} to {req.dst} in the topology", status=422)
        most = max(self._index.max_bookable(p, req.start, req.end) for p in paths)
        extra: dict[str, Any] = {"max_bookable_bps": most}
        what = f"{units.fmt_rate(req.rate)} from {iso(req.start)} to {iso(req.end)}"
        if req.bytes is not None:
            need = Fraction(8 * req.bytes) * Fraction(str(req.margin))
            finish = min((self._earliest_finish(p, req.start, need) for p in paths), default=None)
            extra["earliest_finish"] = iso(finish) if finish is not None else None
            what = f"{req.bytes} bytes by {iso(req.deadline)} ({what})"
        return Problem(409, f"does not fit: {what} from {req.src} to {req.dst}; the most bookable over the "
                       f"window on any of the {len(paths)} shortest paths is {most} bit/s", **extra)  # fmt: skip

    def _earliest_finish(self, path: list[str], start: int, need_bits: Fraction) -> int | None:
        """The earliest ``T`` at which a constant rate over ``[start, T)`` fitting
        every link of ``path`` moves ``need_bits``: between two changes of the
        bookings the free rate ``a`` is constant (the least over the links of
        the reservable share less the peak from ``start``), and ``T = start +
        need / a`` if that falls before the next change. ``a`` only falls as
        ``T`` grows, so the first interval that works gives the answer."""
        times = sorted({t for l in path for t, _ in self._index.steps(l, start, FAR_NS) if t > start} | {FAR_NS})
        lo = start
        for t in times:
            free = min(self._index.cap(l) - self._index.peak(l, start, lo + 1) for l in path)
            if free <= 0:
                return None
            finish = start + math.ceil(need_bits * NS / free)
            if finish <= t:
                return max(finish, lo)
            lo = t
        return None

    # -- reading ---------------------------------------------------------------------------
    def _get(self, s: Session, who: Principal, resv_id: int, lock: bool = False) -> Reservation:
        query = select(Reservation).where(Reservation.id == resv_id)
        if lock:
            query = query.with_for_update()
        resv = s.scalars(query).first()
        if resv is None:
            raise field(("path", "id"), f"no reservation {resv_id}", status=404)
        if not who.sees_all and resv.owner != who.name:
            raise Problem(403, f"reservation {resv_id} belongs to another user")
        return resv

    def get(self, who: Principal, resv_id: int) -> dict:
        self.expire_due()
        with Session(self.reader) as s, s.begin():
            return self.as_json(self._get(s, who, resv_id))

    def list(self, who: Principal, state: str | None = None) -> list[dict]:
        if state is not None and state not in set(fsm.State):
            raise field(("query", "state"), f"expected one of {', '.join(fsm.State)}, got {state!r}")
        self.expire_due()
        with Session(self.reader) as s, s.begin():
            query = select(Reservation).order_by(Reservation.id)
            if not who.sees_all:
                query = query.where(Reservation.owner == who.name)
            if state is not None:
                query = query.where(Reservation.state == state)
            return [self.as_json(r) for r in s.scalars(query)]

    def events(self, who: Principal, resv_id: int, after: int = 0) -> list[dict]:
        with Session(self.reader) as s, s.begin():
            self._get(s, who, resv_id)
            rows = s.scalars(select(Event).where(Event.reservation_id == resv_id, Event.id > after).order_by(Event.id))
            return [{"id": e.id, "reservation": e.reservation_id, "action": e.action, "who": e.who, "at": iso(e.at_ns),
                     "old_state": e.old_state, "new_state": e.new_state, "old_version": e.old_version,
                     "new_version": e.new_version, "detail": e.detail} for e in rows]  # fmt: skip

    def links(self) -> list[dict]:
        with self._lock:
            with Session(self.reader) as s, s.begin():
                self._sync(self.raw(s))
            return [{**link.as_json(), "reservable_bps": self._index.cap(link.id)} for link in self.topology.links]

    def _link_spec(self, link: str):
        try:
            return self.topology.link(link)
        except KeyError:
            raise field(("path", "id"), f"no such link {link!r}", status=404) from None

    def set_link_share(self, who: Principal, link: str, share: Any) -> dict:
        """An admin's new reservable share of ``link`` (a fraction of its
        capacity, above 0 and at most 1). Refused (409) if the bookings from
        now on would exceed it at any instant; the link's version goes up, so
        every process takes the new rate at its next decision on the link."""
        spec = self._link_spec(link)
        if isinstance(share, bool) or not isinstance(share, int | float) or not 0 < share <= 1:
            raise field(("body", "reservable_share"), f"expected a fraction above 0 and at most 1, got {share!r}")
        bps = int(spec.capacity_bps * share)  # as Link.reservable_bps rounds
        self.expire_due()
        now = self.clock()
        with self._tx() as raw:
            self._check_token(raw, who)
            self._sync(raw, [link], lock=True)
            peak = self._index.peak(link, now, FAR_NS)
            if peak > bps:
                raise Problem(409, f"link {link}: {peak} bit/s are booked at some instant from now on, above the "
                              f"{bps} bit/s a share of {share} gives; terminate or modify bookings first",
                              booked_peak_bps=peak)  # fmt: skip
            old_bps = self._index.cap(link)
            self._dirty.add(link)
            raw.execute("UPDATE links SET version = version + 1, reservable_bps = ? WHERE id = ?", (bps, link))
            version = self._known[link] = self._known.get(link, 0) + 1
            raw.execute(_LOG, (link, version, 0, "[]", 0))
            self._logged(raw)
            self._audit(raw, "link_share", who.name, now, link,
                        {"reservable_bps": old_bps, "reservable_share": old_bps / spec.capacity_bps},
                        {"reservable_bps": bps, "reservable_share": share})  # fmt: skip
            self._index.set_cap(link, bps)
        return {**spec.as_json(), "reservable_bps": bps, "reservable_share": share, "changed_by": who.name}

    def bookings(self, link: str, start: int | None, end: int | None) -> dict:
        self._link_spec(link)
        now = self.clock()
        start = now if start is None else start
        end = now + 3650 * 86400 * NS if end is None else end
        if end <= start:
            raise field(("query", "to"), "at or before from")
        self.expire_due()
        with self._lock:
            with Session(self.reader) as s, s.begin():
                self._sync(self.raw(s), [link])
            steps = self._index.steps(link, start, end)
        return {"id": link, "reservable_bps": self._index.cap(link), "steps": [[iso(t), int(bps)] for t, bps in steps]}

    def as_json(self, r: Reservation) -> dict:
        return {
            "id": r.id, "version": r.version, "owner": r.owner, "state": r.state, "src": r.src, "dst": r.dst,
            "path": list(r.path), "start": iso(r.start_ns), "end": iso(r.end_ns), "rate_bps": r.rate_bps,
            "profile": [[iso(t), bps] for t, bps in r.profile], "policing": r.policing,
            "bytes": r.bytes, "deadline": iso(r.deadline_ns), "margin": r.margin,
            "hold_expires": iso(r.hold_expires_ns) if r.state == fsm.State.HELD else None,
            "description": r.description, "created": iso(r.created_ns), "updated": iso(r.updated_ns),
        }  # fmt: skip

    # -- the lifecycle -------------------------------------------------------------------
    def _event(self, s: Session, r: Reservation, action: str, who: str, at: int, old_state: str | None,
               old_version: int | None, detail: dict | None = None) -> None:  # fmt: skip
        s.flush()  # the reservation's row first (the event's foreign key)
        self.raw(s).execute(_EVENT, (r.id, action, who, at, old_state, r.state, old_version, r.version,
                                     None if detail is None else _dumps(detail)))  # fmt: skip

    def act(self, who: Principal, resv_id: int, action: str) -> dict:
        """commit, abort, provision, release or terminate."""
        if action not in fsm.ACTIONS or action in ("reserve", "modify", "expire"):
            raise field(("path", "action"), f"expected one of commit, abort, provision, release, terminate, got {action!r}",
                        status=404)  # fmt: skip
        self.expire_due()
        now = self.clock()
        with self._write() as s:
            self._check_token(self.raw(s), who)
            r = self._get(s, who, resv_id, lock=True)
            old_state = r.state
            try:
                step = fsm.step(fsm.State(r.state), action)
            except fsm.TransitionError as exc:
                raise Problem(409, f"reservation {resv_id}: {exc}", state=r.state) from None
            if step.booking == fsm.Booking.FREED:
                self._sync(self.raw(s), list(r.path), lock=True)
                self._change(self.raw(s), r.id, list(r.path), ([tuple(p) for p in r.profile], r.end_ns), None)
            r.state = step.to.value
            r.updated_ns = now
            if r.state != fsm.State.HELD:
                r.hold_expires_ns = None
            detail = None
            if step.render:
                detail = self._render(r)
            elif old_state == fsm.State.PROVISIONED and action in ("release", "terminate"):
                detail = self._unrender(r)
            self._event(s, r, action, who.name, now, old_state, r.version, detail)
            return self.as_json(r)

    def modify(self, who: Principal, resv_id: int, body: dict[str, Any]) -> dict:
        """A new version with a new rate, profile or end, admitted against
        everything but the reservation's own current booking."""
        unknown = sorted(set(body) - {"rate", "profile", "end"})
        if unknown:
            raise field(("body", unknown[0]), "cannot be modified: expected rate, profile or end")
        if not body:
            raise field(("body",), "nothing to modify: give rate, profile or end")
        if body.get("rate") is not None and body.get("profile") is not None:
            raise field(("body",), "give rate or profile, not both")
        self.expire_due()
        now = self.clock()
        with self._write() as s:
            self._check_token(self.raw(s), who)
            r = self._get(s, who, resv_id, lock=True)
            try:
                step = fsm.step(fsm.State(r.state), "modify")
            except fsm.TransitionError as exc:
                raise Problem(409, f"reservation {resv_id}: {exc}", state=r.state) from None
            end = r.end_ns if body.get("end") is None else parse_time(body["end"], ("body", "end"))
            old_profile = [tuple(p) for p in r.profile]
            if body.get("profile") is not None:
                profile = _profile(body["profile"], r.start_ns, ("body", "profile"))
            elif body.get("rate") is not None:
                rate = parse_rate(body["rate"], ("body", "rate"))
                # A new rate holds from now on (or from the start if it is still ahead).
                since = max(r.start_ns, now)
                profile = [p for p in old_profile if p[0] < since] + [(since, rate)]
            else:
                profile = old_profile
            if body.get("end") is not None and end <= max(r.start_ns, now):
                raise field(("body", "end"), f"at or before {iso(max(r.start_ns, now))}")
            if profile[-1][0] >= end:
                raise field(("body", "end"), f"at or before the profile's last step ({iso(profile[-1][0])})")
            path = list(r.path)
            self._sync(self.raw(s), path, lock=True)
            self._index.release(path, old_profile, r.end_ns)
            fits = self._index.fits(path, profile, end)
            since = max(r.start_ns, now)
            most = None if fits else self._index.max_bookable(path, since, end)  # besides itself
            self._index.book(path, old_profile, r.end_ns)
            if not fits:
                raise Problem(409, f"reservation {resv_id}: the new version does not fit on its path {' '.join(path)}",
                              max_bookable_bps=most)  # fmt: skip
            self._change(self.raw(s), r.id, path, (old_profile, r.end_ns), (profile, end))
            old_version = r.version
            r.version += 1
            r.profile = [list(p) for p in profile]
            r.rate_bps = max(bps for _, bps in profile)
            r.end_ns = end
            r.updated_ns = now
            detail = {"rate_bps": r.rate_bps, "end": iso(end)}
            if step.render:
                detail["southbound"] = self._render(r)["southbound"]
            self._event(s, r, "modify", who.name, now, r.state, old_version, detail)
            return self.as_json(r)

    def expire_due(self, *, every_ns: int = NS // 5) -> int:
        """Free the booking of every held reservation whose hold has run out
        (looked for at most every ``every_ns`` of the clock; the server also
        sweeps every second)."""
        now = self.clock()
        if now < self._next_expiry_check:
            return 0
        self._next_expiry_check = now + every_ns
        with self._lock:  # one indexed query on the write path's connection, no transaction kept
            due = [row[0] for row in self._hot.rows(_DUE, (now,))]
            self._hot.rollback()
        if not due:
            return 0
        count = 0
        with self._write() as s:
            rows = s.scalars(select(Reservation).where(Reservation.id.in_(due)).order_by(Reservation.id).with_for_update()).all()
            rows = [r for r in rows if r.state == fsm.State.HELD.value and r.hold_expires_ns <= now]
            self._sync(self.raw(s), sorted({l for r in rows for l in r.path}), lock=True)
            for r in rows:
                self._change(self.raw(s), r.id, list(r.path), ([tuple(p) for p in r.profile], r.end_ns), None)
                r.state, r.hold_expires_ns, r.updated_ns = fsm.State.EXPIRED.value, None, now
                self._event(s, r, "expire", "service", now, fsm.State.HELD.value, r.version)
                count += 1
        return count

    # -- southbound ------------------------------------------------------------------------
    def _out_dir(self, r: Reservation) -> Path:
        return self.state_dir / "reservations" / str(r.id)

    def _render(self, r: Reservation) -> dict:
        from .southbound import SouthboundError, render_southbound

        try:
            files = render_southbound(self.as_json(r), self.topology, self._out_dir(r), self.backend, self.device)
        except SouthboundError as exc:
            raise Problem(502, f"reservation {r.id}: southbound: {exc}") from None
        return {"southbound": {k: str(v) for k, v in files.items()}}

    def _unrender(self, r: Reservation) -> dict:
        from .southbound import SouthboundError, release_southbound

        try:
            files = release_southbound(self.as_json(r), self._out_dir(r), self.backend, self.device)
        except SouthboundError as exc:
            raise Problem(502, f"reservation {r.id}: southbound: {exc}") from None
        return {"southbound": {k: str(v) for k, v in files.items()}}

    # -- checks for tests and operators ---------------------------------------------------
    def booked_in_db(self, link: str) -> list[tuple[list[tuple[int, int]], int]]:
        with Session(self.reader) as s, s.begin():
            rows = s.execute(select(BookingRow.profile, BookingRow.end_ns).where(BookingRow.link_id == link)).all()
            return [([tuple(p) for p in profile], end) for profile, end in rows]
