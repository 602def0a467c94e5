"""``alphaqos transfer serve`` and ``alphaqos transfer send`` (issue 23;
``docs/transfer.md``)."""

# The parser and thin handlers; what they run is alphaqos.transfer.mover.
# The docstring above is the parser's description (``alphaqos transfer --help``).

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ._common import options_from


def register(commands: argparse._SubParsersAction) -> None:
    transfer = commands.add_parser("transfer", help="move a file by its deadline over a reserved circuit (alphaqos-xfer)",
                                   description=__doc__)  # fmt: skip
    sub = transfer.add_subparsers(dest="transfer_command", required=True, metavar="ACTION")
    serve = sub.add_parser("serve", help="receive files into a directory")
    serve.add_argument("--listen", required=True, metavar="ADDR", help="HOST:PORT to listen on")
    serve.add_argument("--dir", required=True, type=Path, help="where files land")
    serve.add_argument("--json", action="store_true", help="the receiver's events as JSON lines")
    serve.add_argument("--once", type=int, default=0, metavar="N", help="exit after N complete transfers (0: never)")
    serve.add_argument("--threads", type=int, default=None, metavar="N",
                       help="receiving threads per transfer (default: one per core the receiver may run on but one, at least one; a transfer uses at most one per connection)")
    serve.set_defaults(handler=_serve)

    send = sub.add_parser("send", help="send a file by a deadline")
    send.add_argument("file", type=Path)
    send.add_argument("dest", metavar="HOST:PORT")
    when = send.add_mutually_exclusive_group(required=True)
    when.add_argument("--deadline", metavar="DURATION", help="time from now, e.g. 20m, 90s, 2h")
    when.add_argument("--by", metavar="TIME", help="RFC 3339 time (no zone: UTC)")
    send.add_argument("--circuit", metavar="URL", help="the circuits service (or a reservation's URL to take over)")
    send.add_argument("--token", help="the service's bearer token (default $ALPHAQOS_CIRCUITS_TOKEN)")
    send.add_argument("--src", help="the circuit's source node (with --circuit)")
    send.add_argument("--dst", help="the circuit's destination node (with --circuit)")
    send.add_argument("--rate", metavar="RATE", help="without a service: the rate the path allows, e.g. 1Gbps")
    send.add_argument("--streams", type=int, default=2, metavar="K", help="connections: one base, K-1 additional (default 2)")
    send.add_argument("--block", default="64MiB", help="block size (default 64MiB)")
    send.add_argument("--margin", type=float, default=1.1, help="needed rate x margin (default 1.1)")
    send.add_argument("--hysteresis", type=float, default=0.05,
                      help="modify the reservation when the need differs by more than this fraction (default 0.05)")  # fmt: skip
    send.add_argument("--interval", default="1s", help="deadline loop period (default 1s)")
    send.add_argument("--guard", default=None,
                      help="plan to finish this long before the deadline (default: two intervals)")  # fmt: skip
    send.add_argument("--cc", default=None,
                      help="base connection's congestion control: alphaqos_base, pacing-only, or a kernel one "
                           "(default: alphaqos_base when available, else pacing alone)")  # fmt: skip
    send.add_argument("--dscp", default="af11", help="base connection's DSCP (default af11; e.g. ef)")
    send.add_argument("--excess-dscp", default="be", help="additional connections' DSCP (default be; cs1 = scavenger)")
    send.add_argument("--force", action="store_true", help="overwrite the file at the receiver")
    send.add_argument("--json", action="store_true", help="one JSON line per interval and a final one")
    send.set_defaults(handler=_send)


def _serve(args: argparse.Namespace) -> int:
    from ..transfer.mover import ServeOptions, serve

    return _guarded(serve, ServeOptions, args)


def _send(args: argparse.Namespace) -> int:
    from ..transfer.mover import SendOptions, send

    return _guarded(send, SendOptions, args)


def _guarded(run, options, args: argparse.Namespace) -> int:
    """``run`` with the options of its dataclass ``options`` taken from
    ``args``; its refusal printed on one line with the exit status it
    carries (2 for bad input, 1 for a failure)."""
    from ..transfer.circuit import CircuitError
    from ..transfer.mover import TransferError

    try:
        return run(options_from(args, options))
    except (TransferError, CircuitError) as exc:
        print(f"alphaqos: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return exc.status
