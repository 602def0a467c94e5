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

Bytes and a deadline
    The smallest constant rate that moves ``bytes`` between ``start`` and
    ``deadline`` is ``8 bytes / (deadline - start)``; the service books that
    times ``margin`` (default 1.1) up to the deadline. Refused, it says the
    most it could book over the window (``max_bookable_bps``) and the
    earliest finish a constant rate from ``start`` could reach on any of the
    k shortest paths (``earliest_finish``, see :meth:`CircuitService._earliest_finish`).
"""

from __future__ import annotations

import hashlib
import json
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

from sqlalchemy import Text, bindparam, delete, insert, select, update
from sqlalchemy import cast as sa_cast
from sqlalchemy.orm import Session

from .. import units
from . import fsm
from .admission import LinkBookings
from .db import is_postgresql, make_engine, migrate
from .errors import Problem, field
from .models import BookingLog, BookingRow, Event, LinkRow, Reservation, Token
from .topology import DEFAULT_POLICING, POLICING_MODES, Topology

ROLES = ("user", "operator", "admin")
#: How far in the past a start may be (clock skew between client and service).
START_GRACE_NS = 60 * 10**9
#: Paths tried when a bytes+deadline request is refused (earliest finish, most bookable).
K_PATHS = 8
#: Seconds a token, once found, is taken as valid without a lookup.
TOKEN_CACHE_S = 30.0
#: The last instant the service books (i64 nanoseconds reach year 2262).
FAR_NS = 2**62
NS = 10**9


# --- the hot path's statements, built once (SQLAlchemy then reuses their
# compiled form: building an expression per request cost more than running it)
_LINKS, _BOOKINGS, _RESERVATIONS, _EVENTS = LinkRow.__table__, BookingRow.__table__, Reservation.__table__, Event.__table__
_VERSIONS = select(_LINKS.c.id, _LINKS.c.version, _LINKS.c.reservable_bps)
_VERSIONS_OF = _VERSIONS.where(_LINKS.c.id.in_(bindparam("ids", expanding=True))).order_by(_LINKS.c.id)
_VERSIONS_OF_LOCKED = _VERSIONS_OF.with_for_update()
_BUMP = update(_LINKS).where(_LINKS.c.id.in_(bindparam("ids", expanding=True))).values(version=_LINKS.c.version + 1)
_UNBOOK = delete(_BOOKINGS).where(_BOOKINGS.c.reservation_id == bindparam("rid"))
_BOOK = insert(_BOOKINGS)
_RESERVE = insert(_RESERVATIONS).returning(_RESERVATIONS.c.id)
_EVENT = insert(_EVENTS)
_LOG = insert(BookingLog.__table__)
_LOG_SINCE = (select(BookingLog.__table__.c.version, BookingLog.__table__.c.sign,
                     sa_cast(BookingLog.__table__.c.profile, Text), BookingLog.__table__.c.end_ns)
              .where(BookingLog.__table__.c.link_id == bindparam("link"), BookingLog.__table__.c.version > bindparam("since"),
                     BookingLog.__table__.c.version <= bindparam("upto"))
              .order_by(BookingLog.__table__.c.id))  # fmt: skip
_REVOKED = select(Token.__table__.c.revoked_ns).where(Token.__table__.c.sha256 == bindparam("digest"))


# --- times and rates -----------------------------------------------------------------


def now_ns() -> int:
    return time.time_ns()


def iso(ns: int | None) -> str | None:
    """RFC 3339 UTC: ``2026-11-27T10:00:00Z``, with as many fraction digits as
    the nanoseconds need (times round-trip exactly through :func:`parse_time`)."""
    if ns is None:
        return None
    seconds, rest = divmod(ns, NS)
    text = datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S")
    return text + (f".{rest:09d}".rstrip("0") if rest else "") + "Z"


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


def create_token(engine, role: str, name: str | None, at_ns: int) -> tuple[str, str]:
    """Store a new token of ``role`` (its SHA-256 only); returns (token, name)."""
    if role not in ROLES:
        raise field(("body", "role"), f"expected one of {', '.join(ROLES)}, got {role!r}")
    token = "aqc_" + secrets.token_urlsafe(32)
    name = name or f"{role}-{secrets.token_hex(3)}"
    with Session(engine) as s, s.begin():
        s.add(Token(name=name, role=role, sha256=token_hash(token), created_ns=at_ns))
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
                 clock: Callable[[], int] = now_ns) -> None:  # fmt: skip
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
        #: Links brought up to date from the change log (not reloaded): a count for tests.
        self.followed = 0
        migrate(self.engine)
        with self._write() as s:
            have = set(s.scalars(select(LinkRow.id)))
            for link in topology.links:
                if link.id not in have:
                    s.add(LinkRow(id=link.id, version=0))
        with self._lock:
            with Session(self.engine) as s, s.begin():
                self._sync(s)

    def close(self) -> None:
        self.engine.dispose()
        self.reader.dispose()

    # -- transactions and the index --------------------------------------------------
    @contextmanager
    def _write(self) -> Iterator[Session]:
        """One write transaction, serialised in this process (the index is shared)."""
        with self._lock:
            try:
                with Session(self.engine, expire_on_commit=False) as s, s.begin():
                    yield s
            except BaseException:
                # The index may hold changes of a transaction that did not
                # commit: reload the links it touched before the next use.
                for link in self._dirty:
                    self._known[link] = -1
                raise
            finally:
                self._dirty.clear()

    def _reload(self, s: Session, link: str, version: int, cap: int | None = None) -> None:
        # The rows as the driver gives them (JSON as text, parsed here): at
        # 10^5 bookings SQLAlchemy's per-row type processing would dominate.
        table = BookingRow.__table__
        query = select(sa_cast(table.c.profile, Text), table.c.end_ns).where(table.c.link_id == link)
        rows = s.connection().execute(query)
        self._index.set_cap(link, self.topology.link(link).reservable_bps if cap is None else cap)
        self._index.reset(link, ((json.loads(profile), end) for profile, end in rows))
        self._known[link] = version

    def _sync(self, s: Session, subset: list[str] | None = None, lock: bool = False) -> bool:
        """Bring the index of the links ``subset`` (default all) to the database's
        versions, locking their rows first if ``lock``; True if any was stale."""
        if subset is None:
            assert not lock, "locks are taken on the links to book"
            rows = s.connection().execute(_VERSIONS)
        else:
            rows = s.connection().execute(_VERSIONS_OF_LOCKED if lock else _VERSIONS_OF, {"ids": sorted(set(subset))})
        stale = False
        for link, version, cap in rows.all():
            if link in self._index._cores and self._known.get(link) != version:
                if not self._follow(s, link, version, cap):
                    self._reload(s, link, version, cap)
                stale = True
        return stale

    def _follow(self, s: Session, link: str, version: int, cap: int | None) -> bool:
        """Bring ``link``'s index from the version it holds to ``version`` by the
        log's changes in between (O(changes log n), not a reload of every
        booking); False if it cannot (never loaded, a failed transaction's
        leftovers, or a version without its log rows), then the caller reloads."""
        known = self._known.get(link)
        if known is None or known < 0 or known > version:
            return False
        rows = s.connection().execute(_LOG_SINCE, {"link": link, "since": known, "upto": version}).all()
        if {v for v, *_ in rows} != set(range(known + 1, version + 1)):
            return False
        self._index.set_cap(link, self.topology.link(link).reservable_bps if cap is None else cap)
        for _, sign, profile, end in rows:
            if sign > 0:
                self._index.book([link], [tuple(p) for p in json.loads(profile)], end)
            elif sign < 0:
                self._index.release([link], [tuple(p) for p in json.loads(profile)], end)
        self._known[link] = version
        self.followed += 1
        return True

    def _change(self, s: Session, resv_id: int, path: list[str], old: tuple | None, new: tuple | None) -> None:
        """Replace a reservation's bookings (``(profile, end)`` or None) on
        ``path``, in the database and the index; the links' versions go up."""
        self._dirty.update(path)
        c = s.connection()
        if old is not None:
            self._index.release(path, old[0], old[1])
            c.execute(_UNBOOK, {"rid": resv_id})
        if new is not None:
            self._index.book(path, new[0], new[1])
            profile = [list(p) for p in new[0]]
            c.execute(_BOOK, [{"reservation_id": resv_id, "link_id": link, "profile": profile, "end_ns": new[1]}
                                         for link in path])  # fmt: skip
        c.execute(_BUMP, {"ids": list(path)})
        log = []
        for link in path:
            version = self._known[link] = self._known.get(link, 0) + 1
            if old is not None:
                log.append({"link_id": link, "version": version, "sign": -1, "profile": [list(p) for p in old[0]], "end_ns": old[1]})
            if new is not None:
                log.append({"link_id": link, "version": version, "sign": 1, "profile": [list(p) for p in new[0]], "end_ns": new[1]})
        c.execute(_LOG, log)

    # -- tokens ------------------------------------------------------------------------
    def create_token(self, role: str, name: str | None = None) -> tuple[str, str]:
        """A new bearer token for ``role``; returns (token, name). Only its hash is stored."""
        return create_token(self.engine, role, name, self.clock())

    def tokens(self) -> list[dict]:
        with Session(self.reader) as s, s.begin():
            return [{"id": t.id, "name": t.name, "role": t.role, "created": iso(t.created_ns), "revoked": iso(t.revoked_ns)}
                    for t in s.scalars(select(Token).order_by(Token.id))]  # fmt: skip

    def revoke_token(self, token_id: int) -> dict:
        """Revoke a token: refused from now on (this process forgets it at once)."""
        with self._write() as s:
            row = s.get(Token, token_id, with_for_update=True)
            if row is None:
                raise field(("path", "id"), f"no token {token_id}", status=404)
            if row.revoked_ns is None:
                row.revoked_ns = self.clock()
            self._principals.pop(row.sha256, None)
            return {"id": row.id, "name": row.name, "role": row.role, "revoked": iso(row.revoked_ns)}

    def _check_token(self, s: Session, who: Principal) -> None:
        """Inside a write transaction: refuse a token revoked since it was cached
        (by any process), so no revoked token changes anything."""
        if not who.token:
            return
        revoked = s.connection().execute(_REVOKED, {"digest": who.token}).scalar()
        if revoked is not None:
            self._principals.pop(who.token, None)
            raise Problem(401, f"token revoked at {iso(revoked)}")

    def authenticate(self, authorization: str | None) -> Principal:
        """The token's owner and role. A token found is remembered for
        :data:`TOKEN_CACHE_S` seconds (a lookup per request would cost a
        transaction). A token revoked in this process is forgotten at once; one
        revoked by another process is refused by every write transaction here
        (:meth:`_check_token`) and by reads once its cache entry runs out."""
        if not authorization:
            raise Problem(401, "a bearer token is needed (Authorization: Bearer ...)")
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise Problem(401, "expected Authorization: Bearer TOKEN")
        digest = token_hash(token.strip())
        cached = self._principals.get(digest)
        if cached is not None and cached[1] > time.monotonic():
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
        now = self.clock()
        req = self.parse_request(body, now)
        self.expire_due()
        with self._write() as s:
            self._check_token(s, who)
            self._sync(s)
            while True:
                path = self._find_path(req.src, req.dst, req.profile, req.end)
                if path is None:
                    raise self._refusal(req)
                # PostgreSQL: lock the path's links; another process may have
                # booked them since. (SQLite: BEGIN IMMEDIATE holds the
                # database's write lock, so the sync above is still current.)
                if not self.postgresql or not self._sync(s, path, lock=True):
                    break
            resv = Reservation(version=1, owner=who.name, state=fsm.State.HELD.value, src=req.src, dst=req.dst,
                               path=path, start_ns=req.start, end_ns=req.end, rate_bps=req.rate,
                               profile=[list(p) for p in req.profile], bytes=req.bytes,
                               # Unless asked otherwise, the edge port's policing (the topology's).
                               policing=req.policing or self.topology.link(path[0]).policing or DEFAULT_POLICING,
                               deadline_ns=req.deadline, margin=req.margin, hold_expires_ns=now + self.hold_timeout_ns,
                               description=req.description, created_ns=now, updated_ns=now)  # fmt: skip
            columns = {c.name: getattr(resv, c.name) for c in Reservation.__table__.columns if c.name != "id"}
            resv.id = s.connection().execute(_RESERVE, columns).scalar_one()
            self._change(s, resv.id, path, None, (req.profile, req.end))
            self._event(s, resv, "reserve", who.name, now, None, None)
            return self.as_json(resv)

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
                self._sync(s)
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
        with self._write() as s:
            self._check_token(s, who)
            self._sync(s, [link], lock=True)
            peak = self._index.peak(link, now, FAR_NS)
            if peak > bps:
                raise Problem(409, f"link {link}: {peak} bit/s are booked at some instant from now on, above the "
                              f"{bps} bit/s a share of {share} gives; terminate or modify bookings first",
                              booked_peak_bps=peak)  # fmt: skip
            links = LinkRow.__table__
            self._dirty.add(link)
            s.connection().execute(update(links).where(links.c.id == link)
                                   .values(version=links.c.version + 1, reservable_bps=bps))  # fmt: skip
            version = self._known[link] = self._known.get(link, 0) + 1
            s.connection().execute(_LOG, {"link_id": link, "version": version, "sign": 0, "profile": [], "end_ns": 0})
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
                self._sync(s, [link])
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
        s.connection().execute(_EVENT, {"reservation_id": r.id, "action": action, "who": who, "at_ns": at,
                                            "old_state": old_state, "new_state": r.state, "old_version": old_version,
                                            "new_version": r.version, "detail": detail})  # fmt: skip

    def act(self, who: Principal, resv_id: int, action: str) -> dict:
        """commit, abort, provision, release or terminate."""
        if action not in fsm.ACTIONS or action in ("reserve", "modify", "expire"):
            raise field(("path", "action"), f"expected one of commit, abort, provision, release, terminate, got {action!r}",
                        status=404)  # fmt: skip
        self.expire_due()
        now = self.clock()
        with self._write() as s:
            self._check_token(s, who)
            r = self._get(s, who, resv_id, lock=True)
            old_state = r.state
            try:
                step = fsm.step(fsm.State(r.state), action)
            except fsm.TransitionError as exc:
                raise Problem(409, f"reservation {resv_id}: {exc}", state=r.state) from None
            if step.booking == fsm.Booking.FREED:
                self._sync(s, list(r.path), lock=True)
                self._change(s, r.id, list(r.path), ([tuple(p) for p in r.profile], r.end_ns), None)
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
            self._check_token(s, who)
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
            self._sync(s, path, lock=True)
            self._index.release(path, old_profile, r.end_ns)
            fits = self._index.fits(path, profile, end)
            since = max(r.start_ns, now)
            most = None if fits else self._index.max_bookable(path, since, end)  # besides itself
            self._index.book(path, old_profile, r.end_ns)
            if not fits:
                raise Problem(409, f"reservation {resv_id}: the new version does not fit on its path {' '.join(path)}",
                              max_bookable_bps=most)  # fmt: skip
            self._change(s, r.id, path, (old_profile, r.end_ns), (profile, end))
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
        with Session(self.reader) as s, s.begin():
            due = s.scalars(select(Reservation.id).where(Reservation.state == fsm.State.HELD.value,
                                                         Reservation.hold_expires_ns <= now)).all()  # fmt: skip
        if not due:
            return 0
        count = 0
        with self._write() as s:
            rows = s.scalars(select(Reservation).where(Reservation.id.in_(due)).order_by(Reservation.id).with_for_update()).all()
            rows = [r for r in rows if r.state == fsm.State.HELD.value and r.hold_expires_ns <= now]
            self._sync(s, sorted({l for r in rows for l in r.path}), lock=True)
            for r in rows:
                self._change(s, r.id, list(r.path), ([tuple(p) for p in r.profile], r.end_ns), None)
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
