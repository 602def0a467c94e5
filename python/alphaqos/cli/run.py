"""``alphaqos run SCENARIO``: simulate a scenario, write its run directory
and print a summary per flow and per queue."""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

from .. import columns as col
from .. import units
from .cmdline import EXIT_OK, time_argument
from ..output import default_run_dir, new_output_directory, saving
from ._common import notes
from ._tables import _console, _fit, _ms, _names, _seconds, _secs, _table


def register(commands: argparse._SubParsersAction) -> None:
    from ..scenario.loading import HOST_PROFILES

    p = commands.add_parser("run", help="simulate a scenario and write its results")
    p.add_argument("scenario", metavar="SCENARIO", help="scenario file (YAML)")
    p.add_argument("--out", metavar="DIR", type=Path, help="run directory to create (must not exist)")
    p.add_argument("--seed", metavar="N", type=int, help="override the scenario's seed")
    p.add_argument("--duration", metavar="D", type=time_argument, help="run for D instead (e.g. 10s): the timeline is cut, not rescaled; flows and workloads that start at or after D are left out (with a note)")
    p.add_argument("--host-profile", metavar="NAME", choices=HOST_PROFILES,
                   help=f"the host profile of every TCP connection whose tcp names none (default linux-6; one of {', '.join(HOST_PROFILES)})")  # fmt: skip
    p.add_argument("--quiet", action="store_true", help="no progress bar or summary; print the run directory")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from ..engine import simulate
    from ..scenario import load_scenario

    with notes():
        scenario = load_scenario(args.scenario, seed=args.seed, duration=args.duration, host_profile=args.host_profile)
    target = args.out if args.out is not None else default_run_dir(scenario.name)
    with new_output_directory(target) as staging:
        taps = staging / "taps" if any(link.tap or link.taps for link in scenario.links) else None
        results = simulate(scenario, progress=not args.quiet, command=args.invocation, tap_dir=taps)
        saving("the results", target, lambda: results.save(staging))
    if args.quiet:
        print(target)
    else:
        _print_summary(results, target)
    return EXIT_OK



def _print_summary(results, target: Path) -> None:
    from rich import box

    from ..results import PLOTS_DIR

    summary = results.summary
    flows = _table(f"Flows of {summary[col.NAME]}, seed {summary[col.SEED]}", box.SIMPLE_HEAD,
                   ["flow", "kind", "path"], ["rate", "loss", "delay mean", "delay p99", "ping RTT"])  # fmt: skip
    for name, flow in summary[col.FLOWS].items():
        ping = flow[col.KIND] == "ping"
        rtt = "-"
        if ping and flow[col.RTT_MEAN] is not None:
            # Median and spread, not a mean: probes that cross idle and
            # loaded times average to a delay no probe saw (per phase below).
            rtt = f"median {_ms(flow[col.RTT_P50])}, p90 {_ms(flow[col.RTT_P90])}, max {_ms(flow[col.RTT_MAX])}"
        flows.add_row(
            name,
            flow[col.KIND],
            f"{flow[col.SRC]}→{flow[col.DST]}",
            "-" if ping or flow[col.GOODPUT_BPS] is None else units.fmt_rate(flow[col.GOODPUT_BPS]),
            f"{flow[col.LOSS]:.2%}",
            "-" if ping else _ms(flow[col.DELAY_MEAN]),  # a ping's one-way delay would mislead beside its RTT
            "-" if ping else _ms(flow[col.DELAY_P99]),
            rtt,
        )
    phases = _table("Ping RTT while other traffic runs", box.SIMPLE_HEAD, ["ping", "from", "to", "running"],
                    ["pings", "lost", "RTT median", "RTT mean", "RTT max"])  # fmt: skip
    for name, flow in summary[col.FLOWS].items():
        for phase in flow.get(col.RTT_PHASES) or []:
            phases.add_row(
                name, _seconds(phase[col.START]), _seconds(phase[col.END]), _names(phase[col.ACTIVE]),
                f"{phase[col.PINGS_SENT]:,}", f"{phase[col.PINGS_LOST]:,}",
                *(_ms(phase[c]) for c in (col.RTT_P50, col.RTT_MEAN, col.RTT_MAX)),
            )  # fmt: skip
    tcp_flows = {name: flow for name, flow in summary[col.FLOWS].items() if flow[col.KIND] == "tcp"}
    tcp = _table("TCP loss recovery (sender) and arrivals out of sequence (receiver)", box.SIMPLE_HEAD, ["flow"],
                 ["retransmits", "fast rtx", "timeouts", "spurious", "out of seq.", "dup ACKs"])  # fmt: skip
    for name, flow in tcp_flows.items():
        tcp.add_row(name, *(f"{flow[c]:,}" for c in (
            col.RETRANSMITS, col.FAST_RETRANSMITS, col.TIMEOUTS, col.SPURIOUS_RETRANSMITS, col.OOO_ARRIVALS,
            col.DUP_ACKS_SENT,
        )))  # fmt: skip
    queues = _table("Queues that carried packets", box.SIMPLE_HEAD,
                    ["queue"], ["enqueued", "tail drops", "AQM drops", "policer drops", "max length"])  # fmt: skip
    busy = {name: queue for name, queue in summary[col.QUEUES].items() if queue[col.ENQ_PKTS]}
    for name, queue in busy.items():
        queues.add_row(
            name,
            f"{queue[col.ENQ_PKTS]:,}",
            f"{queue[col.DROP_TAIL_PKTS]:,}",
            f"{queue[col.DROP_AQM_PKTS]:,}",
            f"{queue[col.DROP_POLICER_PKTS]:,}",
            f"{queue[col.MAX_LEN_PKTS]:,} pkts, {units.fmt_size(queue[col.MAX_LEN_BYTES])}",
        )
    console = _console()
    if summary[col.FLOWS]:
        console.print(_fit(flows))
    if phases.row_count:
        console.print(_fit(phases))
    if tcp_flows:
        console.print(_fit(tcp))
    workloads = summary.get(col.WORKLOADS) or {}
    if workloads:
        console.print(_fit(_workload_table(workloads)))
    console.print(_fit(queues))
    if results.filter.height:
        terms = _table("Firewall filter terms", box.SIMPLE_HEAD, ["router", "term"],
                       ["matched", "out of profile", "discarded", "green", "yellow", "red"])  # fmt: skip
        for row in results.filter.iter_rows(named=True):
            terms.add_row(row[col.NODE], row[col.TERM], *(f"{row[c]:,}" for c in (
                col.MATCHED_PKTS, col.OUT_OF_PROFILE_PKTS, col.DISCARDED_PKTS, col.GREEN_PKTS, col.YELLOW_PKTS,
                col.RED_PKTS,
            )))  # fmt: skip
        console.print(_fit(terms))
    idle = len(summary[col.QUEUES]) - len(busy)
    if idle:
        console.print(f"({idle} idle queue{'s' if idle > 1 else ''} not shown)")
    for line in _unfinished(workloads):
        console.print(f"[bold yellow]{line}[/]", highlight=False)
    console.print(
        f"{summary[col.EVENTS]:,} events in {results.manifest.get('wall_time_s', 0):.1f} s of wall time "
        f"for {units.fmt_time_ns(results.scenario.duration)} simulated"
    )
    console.print(f"results: {target}/ (Parquet tables, summary.json, scenario.yaml, manifest.json)")
    console.print(f"plots:   {target / PLOTS_DIR}/")


#: Workload rows of the summary table; beyond, the rest are added up.
WORKLOAD_ROWS = 10


def _workload_table(workloads: dict[str, dict]):
    """Workloads with unfinished transfers first, then the largest; beyond
    WORKLOAD_ROWS, one row adds up the others."""
    from rich import box

    table = _table("Workloads (transfers started in the run)", box.SIMPLE_HEAD, ["workload", "kind"],
                   ["started", "completed", "unfinished", "failed", "delivered", "of", "FCT p50", "FCT p99",
                    "slowdown mean"])  # fmt: skip
    order = sorted(workloads, key=lambda n: (-workloads[n][col.TRANSFERS_UNFINISHED], -workloads[n][col.BYTES_OFFERED]))
    shown = order if len(order) <= WORKLOAD_ROWS + 1 else order[:WORKLOAD_ROWS]
    for name in shown:
        w = workloads[name]
        table.add_row(
            name, w[col.KIND], *_counts(w), _secs(w[col.FCT_P50]), _secs(w[col.FCT_P99]),
            "-" if w[col.SLOWDOWN_MEAN] is None else f"{w[col.SLOWDOWN_MEAN]:.3g}",
        )  # fmt: skip
    rest = [workloads[name] for name in order[len(shown):]]
    if rest:
        total = {c: sum(w[c] for w in rest) for c in _COUNTED}
        kinds = Counter(w[col.KIND] for w in rest)
        table.add_row(f"{len(rest):,} others", ", ".join(f"{n} {k}" for k, n in kinds.items()), *_counts(total),
                      "-", "-", "-")  # fmt: skip
    return table


_COUNTED = (col.TRANSFERS_STARTED, col.TRANSFERS_COMPLETED, col.TRANSFERS_UNFINISHED, col.TRANSFERS_FAILED,
            col.BYTES_DELIVERED, col.BYTES_OFFERED)  # fmt: skip


def _counts(w: dict) -> list[str]:
    return [*(f"{w[c]:,}" for c in _COUNTED[:4]), units.fmt_size(w[col.BYTES_DELIVERED]), units.fmt_size(w[col.BYTES_OFFERED])]


def _unfinished(workloads: dict[str, dict]) -> list[str]:
    """One line per workload whose transfers had not all finished when the
    run ended (a transfer of 20 GB cut by the end of a 10 s run)."""
    lines = []
    for name, w in workloads.items():
        if w[col.TRANSFERS_UNFINISHED]:
            n = w[col.TRANSFERS_UNFINISHED]
            lines.append(
                f"workload {name}: {n:,} of {w[col.TRANSFERS_STARTED]:,} transfer{'s' if n > 1 else ''} unfinished "
                f"when the run ended ({units.fmt_size(w[col.BYTES_DELIVERED])} of "
                f"{units.fmt_size(w[col.BYTES_OFFERED])} delivered)"
            )
    if len(lines) > WORKLOAD_ROWS:
        more = len(lines) - WORKLOAD_ROWS
        lines = [*lines[:WORKLOAD_ROWS], f"... and {more:,} more workloads with unfinished transfers"]
    return lines
