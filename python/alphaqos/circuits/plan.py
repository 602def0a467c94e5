"""HNTES end to end: from the α prefix pairs ``alphaqos flows identify``
learnt to circuit requests, and to the filter terms that steer those
prefixes into the circuits.

::

    alphaqos circuits plan --prefixes prefixes.duckdb [--percentile 95] [--out requests.json]
        [--policy-out circuits-policy.yaml] [--topology scenario.yaml] [--endpoint PREFIX=NODE ...]
        [--min-days 2] [--after TIME] [--policing soft] [--submit URL --token T]

What it models
    Yan et al., "On How to Provision QoS for Large Dataset Transfers" (CTRQ
    2013), Section II: HNTES learns offline which source and destination
    prefixes carry α flows, and asks an advance-reservation system (OSCARS)
    for circuits into which the ingress routers redirect them. The paper
    leaves the request's rate and window open; here they come from what the
    flow records showed.

How
    *Pairs.* The ``alpha_flows`` sightings of the database (one row per
    α 5-tuple and interval, per exporter) are grouped by the (source
    prefix, destination prefix) pair, with the prefix lengths the
    ``prefixes`` table was built with (``settings``: ``prefix_v4``,
    ``prefix_v6``), keeping pairs whose two prefixes are still in the
    table (not aged out).

    *Rate.* A pair's α rate in an interval is its bytes in that interval
    (all its 5-tuples, seen at one exporter; the largest exporter's when
    several saw it, since one transfer crosses several routers) x 8 / the
    interval length. The request's rate is the ``--percentile`` (default
    95) of those rates over the intervals in the window's hours, by the
    nearest-rank method (the smallest observed rate that at least p% of
    the intervals do not exceed; Hyndman & Fan 1996, definition 1), rounded
    up to a whole Mbit/s.

    *Window.* An hour of the day (UTC) recurs for a pair when the pair had
    α intervals in it on at least ``--min-days`` distinct days (default
    2). Each run of consecutive recurring hours (wrapping at midnight) is a
    window and one request, starting at the first time that hour comes
    after ``--after`` (default: the later of now and the end of the data),
    lasting the run's hours.

    *Endpoints.* A reservation joins two nodes of the service's topology.
    ``--endpoint PREFIX=NODE`` names one; with ``--topology`` a prefix
    holding exactly one host's address maps to that host. A prefix left
    unmapped stays in the request as itself, marked ``unresolved``; such
    requests are written for review but not submitted.

Output
    ``--out`` (default standard output): a JSON list, one entry per
    request: ``request`` (the body of ``POST /api/v1/reservations``:
    ``src``, ``dst``, ``rate``, ``start``, ``end``, ``policing``,
    ``description``) and ``evidence`` (prefixes, hours, days seen,
    intervals, p50/p95/max rates, unresolved endpoints).
    ``--policy-out``: a policy document for ``alphaqos provision --policy
    FILE --alpha-class science-data``: OSCARS's classes and one filter term
    per prefix pair, matching the pair's prefixes, into ``science-data``,
    policed at the highest rate of the pair's requests with the bucket of
    :func:`.southbound.policer_bucket`. That is how ``alphaqos provision``
    renders the terms that steer the α prefixes into their circuits
    (Junos, Cisco, tc, nftables), beside its α term for the rest.

Submission (``--submit URL --token T``)
    Each resolved request is POSTed with ``Authorization: Bearer T``; the
    answer (201 and the reservation's id, or the problem's title and
    detail) is printed per request. Exit status 0 when all were booked, 1
    when the service refused some (409: they did not fit), 2 for bad input
    (a database that is not identify's, a bad option) or a service that
    cannot be reached or refuses the token.

Tests: ``tests/test_circuits_plan.py``.
"""

from __future__ import annotations

import ipaddress
import json
import math
import sys
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from .southbound import circuit_term, policer_bucket, policy_document

__all__ = ["PairPlan", "PlanError", "nearest_rank", "plan_requests", "recurring_windows", "resolve", "run_plan", "steering"]

DEFAULT_PERCENTILE = 95.0
DEFAULT_MIN_DAYS = 2
#: Requested rates are rounded up to whole units of this (bit/s).
RATE_STEP_BPS = 1_000_000
US = 1_000_000


class PlanError(ValueError):
    """Bad input to the plan (reported on one line, exit status 2)."""


def nearest_rank(values: list[float], percentile: float) -> float:
    """The nearest-rank percentile: the ``ceil(p/100 * n)``-th smallest value
    (Hyndman & Fan 1996, definition 1); the smallest for p = 0."""
    if not values:
        raise PlanError("no values to take a percentile of")
    ordered = sorted(values)
    rank = max(1, math.ceil(percentile / 100 * len(ordered)))
    return ordered[rank - 1]


def recurring_windows(days_by_hour: dict[int, set], min_days: int) -> list[list[int]]:
    """Runs of consecutive hours (0-23, wrapping at midnight) each seen on
    at least ``min_days`` distinct days, in the order of their first hour."""
    hours = sorted(h for h, days in days_by_hour.items() if len(days) >= min_days)
    if not hours:
        return []
    if len(hours) == 24:
        return [list(range(24))]
    runs: list[list[int]] = []
    for h in hours:
        if runs and runs[-1][-1] == h - 1:
            runs[-1].append(h)
        else:
            runs.append([h])
    if len(runs) > 1 and runs[0][0] == 0 and runs[-1][-1] == 23:  # one run across midnight
        runs[0] = runs.pop() + runs[0]
    return sorted(runs, key=lambda r: r[0])


@dataclass
class PairPlan:
    src_prefix: str
    dst_prefix: str
    hours: list[int]
    rates_bps: list[float]
    days: int
    rate_bps: int
    start: datetime
    end: datetime
    src: str
    dst: str
    unresolved: list[str] = field(default_factory=list)

    def request(self, policing: str) -> dict:
        return {
            "src": self.src, "dst": self.dst, "rate": self.rate_bps,
            "start": _rfc3339(self.start), "end": _rfc3339(self.end), "policing": policing,
            "description": f"HNTES: α flows {self.src_prefix} -> {self.dst_prefix}, hours {_hours_text(self.hours)} UTC",
        }  # fmt: skip

    def evidence(self, percentile: float) -> dict:
        return {
            "src_prefix": self.src_prefix, "dst_prefix": self.dst_prefix, "hours_utc": self.hours,
            "days_seen": self.days, "intervals": len(self.rates_bps), "percentile": percentile,
            "p50_bps": round(nearest_rank(self.rates_bps, 50)), f"p{percentile:g}_bps": round(nearest_rank(self.rates_bps, percentile)),
            "max_bps": round(max(self.rates_bps)), "unresolved": self.unresolved,
        }  # fmt: skip


def _rfc3339(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _hours_text(hours: list[int]) -> str:
    return f"{hours[0]:02d}:00-{(hours[-1] + 1) % 24:02d}:00"


def _prefix(address: str, v4: int, v6: int) -> str:
    ip = ipaddress.ip_address(address)
    return str(ipaddress.ip_network(f"{address}/{v4 if ip.version == 4 else v6}", strict=False))


def _read(path: Path):
    """(sightings, prefix lengths, interval seconds, live prefixes, data end) of an identify database."""
    import duckdb

    from ..provision.model import InputError, read_prefix_db

    try:  # the prefix table (what has not aged out) and the data's end, as provision reads them
        entries, _aging, data_end = read_prefix_db(path)
    except InputError as exc:
        raise PlanError(f"--prefixes {exc}") from None
    live = {(e.prefix, e.role) for e in entries}
    con = duckdb.connect(str(path), read_only=True)
    try:
        settings = dict(con.execute("SELECT name, value FROM settings").fetchall())
        rows = con.execute(
            "SELECT src_addr, dst_addr, exporter, interval_start_us, sum(bytes) FROM alpha_flows "
            "GROUP BY ALL ORDER BY interval_start_us"
        ).fetchall()
    except duckdb.Error as exc:
        raise PlanError(f"--prefixes {str(path)!r}: not a database of 'alphaqos flows identify': {exc}") from None
    finally:
        con.close()
    try:
        v4, v6 = int(settings.get("prefix_v4", 24)), int(settings.get("prefix_v6", 48))
        interval_s = int(settings["interval_us"]) / US
    except (KeyError, ValueError):
        raise PlanError(f"--prefixes {str(path)!r}: its settings table has no interval_us") from None
    return rows, v4, v6, interval_s, live, data_end


def _next_occurrence(hour: int, after: datetime) -> datetime:
    t = after.astimezone(UTC).replace(minute=0, second=0, microsecond=0, hour=hour)
    return t if t >= after else t + timedelta(days=1)


def plan_requests(path: Path, *, percentile: float = DEFAULT_PERCENTILE, min_days: int = DEFAULT_MIN_DAYS,
                  after: datetime | None = None) -> list[PairPlan]:  # fmt: skip
    """The circuit requests the database's α pairs call for (see the module doc)."""
    if not 0 < percentile <= 100:
        raise PlanError(f"--percentile must be above 0 and at most 100, got {percentile:g}")
    if min_days < 1:
        raise PlanError(f"--min-days must be at least 1, got {min_days}")
    rows, v4, v6, interval_s, live, data_end = _read(path)
    # Per pair: bytes per (interval, exporter); then the largest exporter's per interval.
    per: dict[tuple[str, str], dict[int, dict[str, float]]] = {}
    for src, dst, exporter, start_us, total in rows:
        pair = (_prefix(src, v4, v6), _prefix(dst, v4, v6))
        if (pair[0], "src") not in live or (pair[1], "dst") not in live:
            continue
        slot = per.setdefault(pair, {}).setdefault(int(start_us), {})
        slot[exporter] = slot.get(exporter, 0.0) + float(total)
    now = datetime.now(UTC)
    after = after or max(now, data_end or now)
    out = []
    for (sp, dp), intervals in sorted(per.items()):
        rate_at = {us: max(by_exporter.values()) * 8 / interval_s for us, by_exporter in intervals.items()}
        days_by_hour: dict[int, set] = {}
        for us in rate_at:
            t = datetime.fromtimestamp(us / US, UTC)
            days_by_hour.setdefault(t.hour, set()).add(t.date())
        for hours in recurring_windows(days_by_hour, min_days):
            chosen = set(hours)
            rates = [r for us, r in rate_at.items() if datetime.fromtimestamp(us / US, UTC).hour in chosen]
            rate = math.ceil(nearest_rank(rates, percentile) / RATE_STEP_BPS) * RATE_STEP_BPS
            start = _next_occurrence(hours[0], after)
            days = len(set().union(*(days_by_hour[h] for h in hours)))
            out.append(PairPlan(sp, dp, hours, rates, days, rate, start, start + timedelta(hours=len(hours)),
                                sp, dp, [sp, dp]))  # fmt: skip
    return out


def resolve(pairs: list[PairPlan], endpoints: dict[str, str]) -> None:
    """Give each request the nodes ``endpoints`` maps its prefixes to."""
    for p in pairs:
        p.src, p.dst = endpoints.get(p.src_prefix, p.src_prefix), endpoints.get(p.dst_prefix, p.dst_prefix)
        p.unresolved = [x for x in (p.src_prefix, p.dst_prefix) if x not in endpoints]
        if not p.unresolved and p.src == p.dst:  # both prefixes behind one node: no circuit to ask for
            p.unresolved = [f"{p.src_prefix} and {p.dst_prefix} map to the same node {p.src}"]


def steering(pairs: list[PairPlan]) -> dict[tuple[str, str], int]:
    """One filter term per prefix pair, policed at the highest rate of its
    requests: a router's filter has no time windows, and a second term for
    the same pair would never match."""
    out: dict[tuple[str, str], int] = {}
    for p in pairs:
        key = (p.src_prefix, p.dst_prefix)
        out[key] = max(out.get(key, 0), p.rate_bps)
    return out


def endpoints_from(topology: Path | None, pairs: list[str]) -> dict[str, str]:
    """``PREFIX -> NODE`` for the prefixes that hold exactly one host of the
    scenario ``topology`` (its ``nodes``, each host with an ``address``)."""
    if topology is None:
        return {}
    import yaml

    try:
        data = yaml.safe_load(Path(topology).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise PlanError(f"--topology {str(topology)!r}: cannot read it: {getattr(exc, 'strerror', None) or exc}") from None
    nodes = data.get("nodes") if isinstance(data, dict) else None
    if not isinstance(nodes, dict):
        raise PlanError(f"--topology {str(topology)!r}: no 'nodes' mapping")
    hosts = {name: n["address"] for name, n in nodes.items() if isinstance(n, dict) and n.get("address") and not n.get("router")}
    out = {}
    for prefix in pairs:
        net = ipaddress.ip_network(prefix)
        inside = [name for name, addr in hosts.items() if ipaddress.ip_address(addr) in net]
        if len(inside) == 1:
            out[prefix] = inside[0]
    return out


# --- the command --------------------------------------------------------------------


def _endpoint_map(items: list[str]) -> dict[str, str]:
    out = {}
    for item in items:
        prefix, sep, node = (x.strip() for x in item.partition("="))
        try:
            net = str(ipaddress.ip_network(prefix, strict=False))
        except ValueError:
            net = None
        if not sep or not node or net is None:
            raise PlanError(f"--endpoint: expected PREFIX=NODE like 198.51.100.0/24=H1, got {item!r}")
        out[net] = node
    return out


def run_plan(db: Path, *, percentile: float = DEFAULT_PERCENTILE, min_days: int = DEFAULT_MIN_DAYS,
             after: datetime | None = None, policing: str = "soft", topology: Path | None = None,
             endpoints: list[str] = (), out: Path | None = None, policy_out: Path | None = None,
             submit: str | None = None, token: str | None = None) -> int:
    """``alphaqos circuits plan``: the requests from the identify database
    ``db`` (and, with ``policy_out``, a
    policy document) written to ``out`` or standard output, then submitted
    to the service at ``submit``; ``endpoints`` are ``PREFIX=NODE`` items.
    Returns the exit status (1 if the service refused a request); bad input
    is a :class:`PlanError`."""
    from ..output import write_atomic

    if submit and not token:
        raise PlanError("--submit needs --token (a bearer token of the circuits service)")
    given = _endpoint_map(endpoints)
    pairs = plan_requests(db, percentile=percentile, min_days=min_days, after=after)
    prefixes = sorted({p for x in pairs for p in (x.src_prefix, x.dst_prefix)})
    resolve(pairs, {**endpoints_from(topology, prefixes), **given})
    entries = [{"request": p.request(policing), "evidence": p.evidence(percentile)} for p in pairs]
    text = json.dumps(entries, indent=2) + "\n"
    policy_text = None
    if policy_out is not None:
        import yaml

        terms = [circuit_term(f"hntes-{i + 1}", sp, dp, rate, policer_bucket(rate), policing)
                 for i, ((sp, dp), rate) in enumerate(steering(pairs).items())]  # fmt: skip
        head = ("# alphaqos circuits plan: one term per planned circuit, steering its α prefix pair into science-data,\n"
                "# policed at the circuit's rate. Render with: alphaqos provision --prefixes DB --policy THIS "
                "--alpha-class science-data --out DIR\n")  # fmt: skip
        policy_text = head + yaml.safe_dump(policy_document(terms), sort_keys=False)
    try:
        if out is not None:
            write_atomic(out, text)
        if policy_text is not None:
            write_atomic(policy_out, policy_text)
    except OSError as exc:
        raise PlanError(f"cannot write: {exc.strerror or exc}: {exc.filename}") from None
    if out is None:
        sys.stdout.write(text)
    else:
        print(f"{out}: {len(entries)} circuit requests ({sum(bool(p.unresolved) for p in pairs)} with unresolved endpoints)")
    if not submit:
        return 0
    return _submit(submit, token, [p for p in pairs if not p.unresolved], policing,
                   [p for p in pairs if p.unresolved])  # fmt: skip


def _submit(url: str, token: str, pairs: list[PairPlan], policing: str, skipped: list[PairPlan]) -> int:
    import urllib.error
    import urllib.request

    for p in skipped:
        print(f"skipped {p.src_prefix} -> {p.dst_prefix}: unresolved: {'; '.join(p.unresolved)} (--endpoint PREFIX=NODE)")
    refused = 0
    for p in pairs:
        body = json.dumps(p.request(policing)).encode()
        req = urllib.request.Request(f"{url.rstrip('/')}/api/v1/reservations", data=body, method="POST",
                                     headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"})  # fmt: skip
        what = f"{p.src} -> {p.dst} {p.rate_bps} bit/s {_rfc3339(p.start)}..{_rfc3339(p.end)}"
        try:
            with urllib.request.urlopen(req, timeout=30) as answer:
                resv = json.loads(answer.read() or b"{}")
            print(f"booked {what}: reservation {resv.get('id')} ({resv.get('state')})")
        except urllib.error.HTTPError as exc:
            try:
                problem = json.loads(exc.read() or b"{}")
            except ValueError:
                problem = {}
            reason = f"{exc.code} {problem.get('title') or exc.reason}: {problem.get('detail') or ''}".strip(": ")
            if exc.code in (401, 403):
                raise PlanError(f"--submit {url}: the service refused the token: {reason}") from None
            if exc.code in (400, 422):
                raise PlanError(f"--submit {url}: the service rejected a request ({what}): {reason}") from None
            print(f"refused {what}: {reason}")
            refused += 1
        except (urllib.error.URLError, OSError) as exc:
            raise PlanError(f"--submit {url}: cannot reach the service: {getattr(exc, 'reason', exc)}") from None
    return 1 if refused else 0
