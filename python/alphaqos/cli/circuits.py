"""``alphaqos circuits``: the service, its tokens, and a client of its API.

``serve [--db URL] [--topology FILE] [--listen ADDR] [--hold-timeout S] [--state-dir DIR] [--backend B] [--device DEV] [--workers N]``
    Run the service (uvicorn). Every option is also an environment variable
    ``ALPHAQOS_CIRCUITS_<OPTION>`` (``ALPHAQOS_CIRCUITS_DB``, ...).
``token create --role user|operator|admin [--name NAME] [--db URL]``
    Store a new bearer token (hashed) and print it; the only time it is shown.
``reserve|list|show|modify|commit|abort|provision|release|terminate|watch``
    The API's client (``--url``, ``--token`` or ``ALPHAQOS_CIRCUITS_URL`` and
    ``ALPHAQOS_CIRCUITS_TOKEN``): tables for people, ``--json`` for scripts.
    A refusal is printed on one line (the problem's detail, the field) and
    the exit status is 2; a service that cannot be reached, 1.
``token list|revoke ID``, ``link list``, ``link share LINK 70%``, ``audit``
    The admin's routes through the API (same options as the client), and the
    audit log of the admin's changes (operator, admin).
``plan``
    Circuit requests from ``flows identify``'s α prefix pairs
    (:mod:`alphaqos.circuits.plan`).

The parsers and their handlers: options in, the service (or its API) called,
tables or JSON out; the service itself is :mod:`alphaqos.circuits`.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..errors import UsageError
from .cmdline import EXIT_FAILURE, EXIT_OK, EXIT_USAGE
from .cmdline import print_error as _error

ACTIONS = ("commit", "abort", "provision", "release", "terminate")


class ClientError(Exception):
    def __init__(self, message: str, status: int = EXIT_USAGE):
        super().__init__(message)
        self.status = status


def _guard(handler):
    """A client handler whose refusals are one line and exit status 2 (1 if the service is unreachable)."""

    def run(args: argparse.Namespace) -> int:
        try:
            return handler(args)
        except ClientError as exc:
            _error(str(exc))
            return exc.status

    return run


def register(commands: argparse._SubParsersAction) -> None:
    circuits = commands.add_parser("circuits", help="advance reservation of bandwidth: the service and its client",
                                   description="The reservation service, its tokens, and a client of its API (docs/circuits.md).")  # fmt: skip
    sub = circuits.add_subparsers(dest="circuits_command", required=True, metavar="COMMAND")

    serve = sub.add_parser("serve", help="run the reservation service (HTTP API, web page)")
    serve.add_argument("--db", metavar="URL", help="sqlite:///FILE (default sqlite:///circuits.db) or postgresql://...")
    serve.add_argument("--topology", metavar="FILE", help="scenario YAML: nodes, links, circuits section")
    serve.add_argument("--listen", metavar="HOST:PORT", help="address to listen on (default 127.0.0.1:8722)")
    serve.add_argument("--hold-timeout", metavar="S", type=float, help="seconds a held reservation waits for commit (default 120)")
    serve.add_argument("--state-dir", metavar="DIR", help="per-reservation southbound files (default circuits-state)")
    serve.add_argument("--backend", choices=("dry-run", "linux"), help="southbound back-end (default dry-run)")
    serve.add_argument("--device", metavar="DEV", help="the device the linux back-end shapes")
    serve.add_argument("--workers", metavar="N", type=int, help="server processes on the one database (default 1)")
    serve.set_defaults(handler=_serve)

    token = sub.add_parser("token", help="bearer tokens")
    token_sub = token.add_subparsers(dest="token_command", required=True, metavar="COMMAND")
    create = token_sub.add_parser("create", help="store a new token and print it")
    create.add_argument("--role", required=True, choices=("user", "operator", "admin"))
    create.add_argument("--name", help="the owner name its reservations carry (default ROLE-xxxxxx)")
    create.add_argument("--db", metavar="URL", help="the service's database (default as serve)")
    create.set_defaults(handler=_token_create)

    def client(name: str, help_: str, parent: argparse._SubParsersAction = sub) -> argparse.ArgumentParser:
        p = parent.add_parser(name, help=help_)
        p.add_argument("--url", help="the service (default $ALPHAQOS_CIRCUITS_URL or http://127.0.0.1:8722)")
        p.add_argument("--token", help="bearer token (default $ALPHAQOS_CIRCUITS_TOKEN)")
        p.add_argument("--json", action="store_true", help="print the API's JSON")
        return p

    reserve = client("reserve", "reserve bandwidth: a rate, a profile, or bytes by a deadline")
    reserve.add_argument("--src", required=True)
    reserve.add_argument("--dst", required=True)
    what = reserve.add_mutually_exclusive_group(required=True)
    what.add_argument("--rate", help="constant rate (2Gbps)")
    what.add_argument("--profile", metavar="TIME=RATE,...", help="steps: from each time on, its rate")
    what.add_argument("--bytes", help="bytes to move (900GB) by --deadline")
    reserve.add_argument("--start", help="RFC 3339 time (default: now)")
    reserve.add_argument("--end", help="RFC 3339 time (with --rate or --profile)")
    reserve.add_argument("--deadline", help="RFC 3339 time (with --bytes)")
    reserve.add_argument("--margin", type=float, help="rate = bytes / time x margin (default 1.1)")
    reserve.add_argument("--policing", choices=("hard", "soft", "scavenger"))
    reserve.add_argument("--description")
    reserve.add_argument("--commit", action="store_true", help="commit the held reservation at once")
    reserve.set_defaults(handler=_guard(_reserve))

    listing = client("list", "list reservations")
    listing.add_argument("--state")
    listing.set_defaults(handler=_guard(_list))

    show = client("show", "one reservation")
    show.add_argument("id", type=int)
    show.set_defaults(handler=_guard(_show))

    modify = client("modify", "a new version: rate (from now on), profile or end")
    modify.add_argument("id", type=int)
    modify.add_argument("--rate")
    modify.add_argument("--profile", metavar="TIME=RATE,...")
    modify.add_argument("--end")
    modify.set_defaults(handler=_guard(_modify))

    for action in ACTIONS:
        p = client(action, f"{action} a reservation")
        p.add_argument("id", type=int)
        p.set_defaults(handler=_guard(_act), action=action)

    watch = client("watch", "follow a reservation's events until it is final")
    watch.add_argument("id", type=int)
    watch.add_argument("--interval", type=float, default=1.0, help="seconds between polls (default 1)")
    watch.set_defaults(handler=_guard(_watch))

    # The admin's routes (tokens listed and revoked, a link's share) and the audit log.
    listed = client("list", "list the tokens (an admin's)", token_sub)
    listed.set_defaults(handler=_guard(_token_list))
    revoke = client("revoke", "revoke a token: refused from then on (an admin's)", token_sub)
    revoke.add_argument("id", type=int, help="the token's id (token list)")
    revoke.set_defaults(handler=_guard(_token_revoke))

    link = sub.add_parser("link", help="the links: list them, change a link's reservable share")
    link_sub = link.add_subparsers(dest="link_command", required=True, metavar="COMMAND")
    client("list", "the links, their capacity and reservable rate", link_sub).set_defaults(handler=_guard(_link_list))
    share = client("share", "set a link's reservable share of its capacity (an admin's)", link_sub)
    share.add_argument("link", help="the directed link, e.g. R1-R2")
    share.add_argument("share", help="a percentage (70%%) or a fraction (0.7), above 0 and at most 100%%")
    share.set_defaults(handler=_guard(_link_share))

    audit = client("audit", "the admin's changes: link shares, tokens created and revoked (operator, admin)")
    audit.add_argument("--after", type=int, default=0, help="only the events after this id")
    audit.set_defaults(handler=_guard(_audit))

    _add_plan(sub)


# --- serve and tokens ------------------------------------------------------------------


def _settings(args: argparse.Namespace, names: tuple[str, ...]):
    from pydantic import ValidationError

    from ..circuits.config import Settings

    given = {n: getattr(args, n) for n in names if getattr(args, n, None) is not None}
    try:
        return Settings(**given)
    except ValidationError as exc:
        e = exc.errors()[0]
        raise UsageError(f"{'.'.join(map(str, e['loc']))}: {e['msg']}") from None


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    from ..errors import ScenarioError
    from ..circuits.api import asgi
    from ..circuits.errors import Problem
    from ..circuits.service import CircuitService
    from ..circuits.topology import Topology

    settings = _settings(args, ("db", "topology", "listen", "hold_timeout", "state_dir", "backend", "device", "workers"))
    if settings.topology is None:
        raise UsageError("--topology (or ALPHAQOS_CIRCUITS_TOPOLOGY): the scenario whose nodes and links to book")
    if settings.workers < 1:
        raise UsageError(f"--workers: expected 1 or more, got {settings.workers}")
    if settings.backend not in ("dry-run", "linux"):
        raise UsageError(f"backend: expected dry-run or linux, got {settings.backend!r}")
    host, _, port = settings.listen.rpartition(":")
    if not host or not port.isdigit():
        raise UsageError(f"--listen: expected HOST:PORT, got {settings.listen!r}")
    topology = Topology.from_scenario(settings.topology)  # a ScenarioError is reported by the main CLI
    try:
        service = CircuitService(settings.db, topology, hold_timeout=settings.hold_timeout, state_dir=settings.state_dir,
                                 backend=settings.backend, device=settings.device, margin=settings.margin)  # fmt: skip
    except (ScenarioError, Problem) as exc:
        raise UsageError(str(exc)) from None
    except Exception as exc:  # the database: a bad URL, unreachable, no permission
        raise UsageError(f"--db {settings.db}: {' '.join(str(exc).split())[:300]}") from None
    print(f"alphaqos circuits: serving {len(topology.links)} links on http://{host}:{port} (db {settings.db}"
          f"{f', {settings.workers} processes' if settings.workers > 1 else ''})", file=sys.stderr, flush=True)  # fmt: skip
    # uvloop and httptools when installed (the Makefile installs them): less CPU per request.
    options = dict(host=host.strip("[]"), port=int(port), log_level="warning", access_log=False, loop="auto", http="auto")
    if settings.workers == 1:
        uvicorn.run(asgi(service), **options)
        service.close()
        return EXIT_OK
    # Several processes: each builds its own service from the settings (checked
    # above, the database migrated), passed down as the environment.
    service.close()
    for name, value in settings.model_dump().items():
        if value is not None and name not in ("url", "token"):
            os.environ[f"ALPHAQOS_CIRCUITS_{name.upper()}"] = str(value)
    uvicorn.run("alphaqos.circuits.api.app:app_from_env", factory=True, workers=settings.workers, **options)
    return EXIT_OK


def _token_create(args: argparse.Namespace) -> int:
    from ..circuits.db import make_engine, migrate
    from ..circuits.service import create_token, now_ns

    settings = _settings(args, ("db",))
    try:
        engine = make_engine(settings.db)
        migrate(engine)
        token, name = create_token(engine, args.role, args.name, now_ns())
    except Exception as exc:
        raise UsageError(f"--db {settings.db}: {' '.join(str(exc).split())[:300]}") from None
    print(f"created {args.role} token for {name}:", file=sys.stderr)
    print(token)
    return EXIT_OK


# --- the client ------------------------------------------------------------------------


def _call(args: argparse.Namespace, method: str, path: str, body: dict | None = None, params: dict | None = None) -> Any:
    import httpx

    from ..circuits.errors import one_line

    settings = _settings(args, ("url", "token"))
    headers = {"Authorization": f"Bearer {settings.token}"} if settings.token else {}
    try:
        answer = httpx.request(method, settings.url.rstrip("/") + path, json=body, params=params, headers=headers,
                               timeout=60)  # fmt: skip
    except httpx.HTTPError as exc:
        raise ClientError(f"cannot reach the circuits service at {settings.url}: {exc}", EXIT_FAILURE) from None
    try:
        doc = answer.json()
    except ValueError:
        doc = None
    if answer.status_code >= 400:
        text = one_line(doc) if isinstance(doc, dict) else f"HTTP {answer.status_code}"
        raise ClientError(f"{answer.status_code}: {text}", EXIT_USAGE if answer.status_code < 500 else EXIT_FAILURE)
    return doc


def _number(text: str) -> int | str:
    """A bare whole number is bit/s (or bytes) as the API takes it; anything else goes as written."""
    return int(text) if text.strip().lstrip("-").isdigit() else text


def _profile_arg(text: str) -> list[list[str]]:
    steps = []
    for part in text.split(","):
        when, sep, rate = part.strip().rpartition("=")
        if not sep or not when or not rate:
            raise UsageError(f"--profile: expected TIME=RATE,... (2026-01-01T10:00:00Z=2Gbps), got {part!r}")
        steps.append([when, _number(rate)])
    return steps


def _print_reservations(rows: list[dict], as_json: bool) -> None:
    if as_json:
        print(json.dumps(rows, indent=2))
        return
    from rich import box
    from rich.console import Console
    from rich.table import Table

    from .. import units

    table = Table(box=box.SIMPLE_HEAD)
    for name in ("id", "v", "state", "owner", "src", "dst", "start", "end", "peak rate", "policing", "path"):
        table.add_column(name, justify="right" if name in ("id", "v", "peak rate") else "left")
    for r in rows:
        table.add_row(str(r["id"]), str(r["version"]), r["state"], r["owner"], r["src"], r["dst"], r["start"], r["end"],
                      units.fmt_rate(r["rate_bps"]), r["policing"], " ".join(r["path"]))  # fmt: skip
    Console().print(table)


def _reserve(args: argparse.Namespace) -> int:
    from ..circuits.service import iso, now_ns

    body: dict[str, Any] = {"src": args.src, "dst": args.dst, "start": args.start or iso(now_ns())}
    if args.rate is not None:
        body["rate"] = _number(args.rate)
    elif args.profile is not None:
        body["profile"] = _profile_arg(args.profile)
        if args.start is None:
            body["start"] = body["profile"][0][0]
    else:
        body["bytes"] = _number(args.bytes)
    for key in ("end", "deadline", "margin", "policing", "description"):
        if getattr(args, key) is not None:
            body[key] = getattr(args, key)
    resv = _call(args, "POST", "/api/v1/reservations", body)
    if args.commit:
        resv = _call(args, "POST", f"/api/v1/reservations/{resv['id']}/commit")
    _print_reservations([resv], args.json) if args.json else _print_one(resv)
    return EXIT_OK


def _print_one(resv: dict) -> None:
    from .. import units

    print(f"reservation {resv['id']} version {resv['version']}: {resv['state']}, {resv['src']} -> {resv['dst']} "
          f"over {' '.join(resv['path'])}, {units.fmt_rate(resv['rate_bps'])} from {resv['start']} to {resv['end']}"
          + (f", hold expires {resv['hold_expires']}" if resv.get("hold_expires") else ""))  # fmt: skip
    if len(resv["profile"]) > 1:
        for t, bps in resv["profile"]:
            print(f"  from {t}: {units.fmt_rate(bps)}")


def _list(args: argparse.Namespace) -> int:
    rows = _call(args, "GET", "/api/v1/reservations", params={"state": args.state} if args.state else None)
    _print_reservations(rows, args.json)
    return EXIT_OK


def _show(args: argparse.Namespace) -> int:
    resv = _call(args, "GET", f"/api/v1/reservations/{args.id}")
    print(json.dumps(resv, indent=2)) if args.json else _print_one(resv)
    return EXIT_OK


def _modify(args: argparse.Namespace) -> int:
    body: dict[str, Any] = {}
    if args.rate is not None:
        body["rate"] = _number(args.rate)
    if args.profile is not None:
        body["profile"] = _profile_arg(args.profile)
    if args.end is not None:
        body["end"] = args.end
    if not body:
        raise UsageError("modify: give --rate, --profile or --end")
    resv = _call(args, "PATCH", f"/api/v1/reservations/{args.id}", body)
    print(json.dumps(resv, indent=2)) if args.json else _print_one(resv)
    return EXIT_OK


def _act(args: argparse.Namespace) -> int:
    resv = _call(args, "POST", f"/api/v1/reservations/{args.id}/{args.action}")
    print(json.dumps(resv, indent=2)) if args.json else _print_one(resv)
    return EXIT_OK


def _print_event(e: dict, as_json: bool) -> None:
    if as_json:
        print(json.dumps(e), flush=True)
    else:
        versions = f"v{e['old_version']}->v{e['new_version']}" if e["old_version"] else f"v{e['new_version']}"
        print(f"{e['at']}  {e['action']:<9} {e['old_state'] or '(new)'} -> {e['new_state']}  {versions}  by {e['who']}",
              flush=True)  # fmt: skip


def _watch(args: argparse.Namespace) -> int:
    from ..circuits.fsm import TERMINAL

    after = 0
    while True:
        for e in _call(args, "GET", f"/api/v1/reservations/{args.id}/events", params={"after": after}):
            _print_event(e, args.json)
            after = e["id"]
        if _call(args, "GET", f"/api/v1/reservations/{args.id}")["state"] in TERMINAL:
            return EXIT_OK
        time.sleep(args.interval)


# --- the admin's routes ------------------------------------------------------------------


def _table(columns: tuple[str, ...], rows: list[tuple], right: tuple[str, ...] = ()) -> None:
    from rich import box
    from rich.console import Console
    from rich.table import Table

    table = Table(box=box.SIMPLE_HEAD)
    for name in columns:
        table.add_column(name, justify="right" if name in right else "left")
    for row in rows:
        table.add_row(*("-" if v is None else str(v) for v in row))
    Console().print(table)


def _token_list(args: argparse.Namespace) -> int:
    tokens = _call(args, "GET", "/api/v1/tokens")
    if args.json:
        print(json.dumps(tokens, indent=2))
    else:
        _table(("id", "name", "role", "created", "revoked"),
               [(t["id"], t["name"], t["role"], t["created"], t["revoked"]) for t in tokens], ("id",))  # fmt: skip
    return EXIT_OK


def _token_revoke(args: argparse.Namespace) -> int:
    token = _call(args, "DELETE", f"/api/v1/tokens/{args.id}")
    print(json.dumps(token, indent=2) if args.json else f"token {token['id']} ({token['name']}, {token['role']}) "
          f"revoked at {token['revoked']}")  # fmt: skip
    return EXIT_OK


def _link_list(args: argparse.Namespace) -> int:
    from .. import units

    links = _call(args, "GET", "/api/v1/links")
    if args.json:
        print(json.dumps(links, indent=2))
    else:
        _table(("link", "capacity", "reservable", "share"),
               [(l["id"], units.fmt_rate(l["capacity_bps"]), units.fmt_rate(l["reservable_bps"]),
                 f"{100 * l['reservable_bps'] / l['capacity_bps']:g}%") for l in links], ("capacity", "reservable", "share"))  # fmt: skip
    return EXIT_OK


def parse_share(text: str) -> float:
    """``70%`` or ``0.7`` -> 0.7, above 0 and at most 1 (a UsageError otherwise)."""
    value = text.strip()
    try:
        share = float(value[:-1]) / 100 if value.endswith("%") else float(value)
    except ValueError:
        share = math.nan
    if not 0 < share <= 1:  # also NaN
        raise UsageError(f"share: expected a percentage above 0 and at most 100% (70%) or a fraction (0.7), got {text!r}")
    return share


def _link_share(args: argparse.Namespace) -> int:
    from .. import units

    link = _call(args, "PUT", f"/api/v1/links/{args.link}", {"reservable_share": parse_share(args.share)})
    print(json.dumps(link, indent=2) if args.json else f"link {link['id']}: reservable {units.fmt_rate(link['reservable_bps'])} "
          f"({link['reservable_share'] * 100:g}% of {units.fmt_rate(link['capacity_bps'])}), set by {link['changed_by']}")  # fmt: skip
    return EXIT_OK


def _audit(args: argparse.Namespace) -> int:
    events = _call(args, "GET", "/api/v1/audit", params={"after": args.after} if args.after else None)
    if args.json:
        print(json.dumps(events, indent=2))
    else:
        change = lambda e: ", ".join(f"{k} {(e['old'] or {}).get(k, '-')} -> {v}" for k, v in (e["new"] or {}).items())  # noqa: E731
        _table(("id", "at", "action", "who", "target", "change"),
               [(e["id"], e["at"], e["action"], e["who"], e["target"], change(e)) for e in events], ("id",))  # fmt: skip
    return EXIT_OK


# --- plan -----------------------------------------------------------------------------


def _add_plan(commands: argparse._SubParsersAction) -> None:
    """``plan`` under ``alphaqos circuits`` (:mod:`alphaqos.circuits.plan`)."""
    from ..circuits.plan import DEFAULT_MIN_DAYS, DEFAULT_PERCENTILE
    from ..circuits.southbound import POLICING

    p = commands.add_parser("plan", help="turn the α prefix pairs of 'flows identify' into circuit requests (HNTES)",
                            description="Circuit requests from an identify database: rate a percentile of each α "
                            "prefix pair's observed rate, window its recurring hours.")  # fmt: skip
    p.add_argument("--prefixes", metavar="DB", type=Path, required=True, help="database of 'alphaqos flows identify'")
    p.add_argument("--percentile", metavar="P", type=float, default=DEFAULT_PERCENTILE, help="rate percentile (default 95)")
    p.add_argument("--min-days", metavar="N", type=int, default=DEFAULT_MIN_DAYS,
                   help="an hour recurs when seen on at least N days (default 2)")
    p.add_argument("--after", metavar="TIME", type=_rfc3339, help="windows start after this (default: now, or the data's end)")
    p.add_argument("--policing", choices=tuple(POLICING), default="soft", help="the requests' policing (default soft)")
    p.add_argument("--topology", metavar="FILE", type=Path, help="scenario YAML: a prefix with one host maps to it")
    p.add_argument("--endpoint", metavar="PREFIX=NODE", action="append", default=[], help="map a prefix to a node")
    p.add_argument("--out", metavar="FILE", type=Path, help="requests (JSON); default standard output")
    p.add_argument("--policy-out", metavar="FILE", type=Path,
                   help="policy document for 'alphaqos provision --policy FILE --alpha-class science-data'")
    p.add_argument("--submit", metavar="URL", help="POST the resolved requests to this circuits service")
    p.add_argument("--token", metavar="T", help="bearer token for --submit")
    p.set_defaults(handler=_plan)


def _rfc3339(text: str) -> datetime:
    try:
        t = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an RFC 3339 time like 2026-01-31T00:00:00Z, got {text!r}") from None
    return t.replace(tzinfo=UTC) if t.tzinfo is None else t.astimezone(UTC)


def _plan(args: argparse.Namespace) -> int:
    from ..circuits.plan import PlanError, run_plan

    try:
        return run_plan(args.prefixes, percentile=args.percentile, min_days=args.min_days, after=args.after,
                        policing=args.policing, topology=args.topology, endpoints=args.endpoint, out=args.out,
                        policy_out=args.policy_out, submit=args.submit, token=args.token)  # fmt: skip
    except PlanError as exc:
        raise UsageError(str(exc)) from None
