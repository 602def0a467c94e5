"""Every reproduction runs the hosts of its document, named in its
scenarios: a TCP connection that left ``host_profile`` to the engine's
default would move with that default (issue 21: the default becomes a
Linux of today, while a document's results belong to its own hosts).

Only the plans are built and validated here (no run): well under a second
each."""

from __future__ import annotations

from typing import Any, Iterator

import pytest

alphaqos = pytest.importorskip("alphaqos")

from alphaqos import load_scenario  # noqa: E402
from alphaqos.deadline import expand  # noqa: E402
from alphaqos.reproduce import REPRODUCTIONS, bouras, deadline_af, liberatore, yan2013, zurawski  # noqa: E402

#: The reproduction module, and the profile (with the keys that go with it)
#: each of its TCP connections must name, by run key prefix.
EXPECTED: dict[str, tuple[Any, dict[str, dict[str, Any]]]] = {
    # ns-2.1b9a's "TCP Sack/DelAck" on the dumbbell; the simulated OC-3
    # traces stand in for real hosts' captures.
    "liberatore-yaqs": (liberatore, {"sim/": {"host_profile": "ns2", "sack": True, "delayed_ack": True},
                                     "trace/": {"host_profile": "default"}}),
    # ns-2, no agent nor sink named: Sack1 with NewReno's window rule, a sink without delayed ACKs.
    "bouras-relative": (bouras, {"": {"host_profile": "ns2", "cc": "newreno", "delayed_ack": False}}),
    # NS2's NewReno: no SACK, ns-2's plain sink.
    "deadline-af": (deadline_af, {"": {"host_profile": "ns2", "sack": False, "delayed_ack": False}}),
    # Linux 2.6.33's receiver (GRO) and the engine's RFC sender.
    "yan2013": (yan2013, {"": {"host_profile": "default", "gro": True}}),
    # CentOS 5's 2.6.18 as the engine's 2.6.33 profile less what 2.6.18 lacked (the simulated runs).
    "zurawski-tc": (zurawski, {"": {"host_profile": "linux-2.6.33", "rack": False, "tso": "0B", "gro": False}}),
}


def test_every_reproduction_is_checked():
    """A new reproduction must say here which hosts its document ran."""
    assert set(EXPECTED) == set(REPRODUCTIONS)


def tcp_options(scenario: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(where, options) of every TCP connection a scenario dict declares:
    TCP flows, workloads (all TCP) and deadline transfers."""
    for flow in scenario.get("flows", []):
        if "tcp" in flow:
            yield f"flows[{flow['name']}].tcp", flow["tcp"]
    for workload in scenario.get("workloads", []):
        yield f"workloads[{workload['name']}].tcp", workload.get("tcp", {})
    for transfer in scenario.get("deadline_transfers", []):
        yield f"deadline_transfers[{transfer['name']}].tcp", transfer.get("tcp", {})


def plans(module: Any) -> Iterator[Any]:
    for quick in (True, False):
        yield from (spec for spec in module.plan(quick=quick) if spec.scenario is not None)


@pytest.mark.parametrize("name", list(EXPECTED))
def test_every_tcp_connection_of_a_reproduction_names_its_documents_host_profile(name):
    module, expected = EXPECTED[name]
    checked = 0
    for spec in plans(module):
        want = next(v for prefix, v in sorted(expected.items(), key=lambda kv: -len(kv[0])) if spec.key.startswith(prefix))
        connections = list(tcp_options(spec.scenario))
        assert connections, f"{name} {spec.key}: no TCP connection found"
        for where, options in connections:
            assert "host_profile" in options, f"{name} {spec.key} {where}: no host_profile, so it runs the engine's default"
            for key, value in want.items():
                assert options.get(key) == value, f"{name} {spec.key} {where}: {key} {options.get(key)!r}, expected {value!r}"
            checked += 1
    assert checked > 0


def test_the_pins_reach_the_engine_deadline_transfers_included():
    """What the engine resolves carries the profile set explicitly: a
    deadline transfer's ``tcp`` reaches both of its connections."""
    spec = next(s for s in deadline_af.plan(quick=True) if s.key.startswith("queue/"))
    scenario = expand(load_scenario(spec.scenario))
    for workload in scenario.workloads:
        assert workload.tcp.host_profile == "ns2" and "host_profile" in workload.tcp.model_fields_set
        assert workload.tcp.sack is False and workload.tcp.delayed_ack is False
        assert workload.tcp.cc == "newreno"
    spec = next(s for s in liberatore.plan(quick=True) if s.key == "sim/n1/red")
    red = load_scenario(spec.scenario).links[0].queue.red
    assert red.wait is True  # ns-2's wait_ default


@pytest.mark.parametrize(("tcp", "message"), [
    ({"cc": "cubic"}, "deadline_transfers[0].tcp.cc: set by the transfer itself"),
    ({"host_profile": "ns3"}, "deadline_transfers[0].tcp.host_profile"),
    ({"sack": "maybe"}, "deadline_transfers[0].tcp.sack"),
])  # fmt: skip
def test_a_deadline_transfers_bad_tcp_option_is_named_by_its_path(tcp, message):
    spec = next(s for s in deadline_af.plan(quick=True) if s.key.startswith("queue/"))
    scenario = dict(spec.scenario)
    scenario["deadline_transfers"] = [{**scenario["deadline_transfers"][0], "tcp": tcp}]
    with pytest.raises(ValueError) as err:
        load_scenario(scenario)
    assert message in str(err.value)
