"""The circuit service's topology: directed links, shares, policing, Yen's paths."""

import itertools

import pytest

from alphaqos.circuits.topology import Topology
from alphaqos.errors import ScenarioError

# A square of routers R1-R2-R3-R4-R1 plus a diagonal R1-R3, hosts H1 at R1 and H2 at R3.
SQUARE = {
    "nodes": {
        "H1": {"address": "10.0.1.1"}, "H2": {"address": "10.0.2.1"},
        "R1": {"router": True}, "R2": {"router": True}, "R3": {"router": True}, "R4": {"router": True},
    },
    "links": [
        {"between": ["H1", "R1"], "rate": "10Gbps", "delay": "1ms"},
        {"between": ["R1", "R2"], "rate": "10Gbps", "delay": "1ms"},
        {"between": ["R2", "R3"], "rate": "10Gbps", "delay": "1ms"},
        {"between": ["R3", "R4"], "rate": "10Gbps", "delay": "1ms"},
        {"between": ["R4", "R1"], "rate": "10Gbps", "delay": "1ms"},
        {"between": ["R1", "R3"], "rate": "1Gbps", "delay": "1ms"},
        {"between": ["R3", "H2"], "rate": "10Gbps", "delay": "1ms"},
    ],
    "circuits": {"links": {"R3-R1": {"reservable_share": 0.5}}, "policing": {"R1-H1": "hard"}},
}


def _all_simple_paths(topo, src, dst):
    """Brute force: every loopless path forwarding only at routers."""
    out = []

    def walk(node, seen, path):
        if node == dst:
            out.append(path)
            return
        if node != src and not topo.nodes[node].router:
            return
        for link in topo.links:
            if link.a == node and link.b not in seen:
                walk(link.b, seen | {link.b}, [*path, link.id])

    walk(src, {src}, [])
    return sorted(out, key=lambda p: (len(p), p))


def test_links_are_directed_with_shares_and_edge_policing():
    topo = Topology.from_scenario(SQUARE)
    assert len(topo.links) == 14
    diag = topo.link("R1-R3")
    assert diag.capacity_bps == 10**9 and diag.reservable_bps == 5 * 10**8  # either direction named
    assert topo.link("R1-R2").reservable_bps == 8 * 10**9  # default 80%
    assert topo.link("H1-R1").policing == "hard"
    assert topo.link("H2-R3").policing == "soft"
    assert topo.link("R1-H1").policing is None
    assert topo.edge_router_of("H1") == "R1" and topo.edge_router_of("H2") == "R3"


def test_yen_yields_every_loopless_path_shortest_first():
    topo = Topology.from_scenario(SQUARE)
    got = list(topo.paths("H1", "H2"))
    want = _all_simple_paths(topo, "H1", "H2")
    assert got[0] == ["H1-R1", "R1-R3", "R3-H2"]
    assert sorted(got) == sorted(want) and len(got) == len(set(map(tuple, got)))
    assert [len(p) for p in got] == sorted(len(p) for p in got)


def test_unusable_links_are_pruned():
    topo = Topology.from_scenario(SQUARE)
    path = topo.shortest_path("H1", "H2", usable=lambda link: link.id != "R1-R3")
    assert path in (["H1-R1", "R1-R2", "R2-R3", "R3-H2"], ["H1-R1", "R1-R4", "R4-R3", "R3-H2"])
    assert path == ["H1-R1", "R1-R2", "R2-R3", "R3-H2"]  # ties: smallest link ids
    assert list(itertools.islice(topo.paths("H1", "H2", usable=lambda l: not l.id.startswith("H1")), 3)) == []


@pytest.mark.parametrize("section, where", [
    ({"reservable_share": 1.5}, "circuits.reservable_share"),
    ({"links": {"R1-R9": {}}}, "circuits.links.R1-R9"),
    ({"policing": {"R1-R2": "hard"}}, "circuits.policing.R1-R2"),
    ({"policing": {"R1-H1": "drop"}}, "circuits.policing.R1-H1"),
])
def test_bad_circuits_section_names_the_field(section, where):
    with pytest.raises(ScenarioError, match=where.replace(".", r"\.")):
        Topology.from_scenario({**SQUARE, "circuits": section})
