"""The network a circuit service books: links, their reservable share, paths.

The topology is a scenario's (``nodes`` and ``links``, see
:mod:`alphaqos.scenario`), plus an optional top-level ``circuits`` section
that only this service reads::

    circuits:
      reservable_share: 0.8        # of every link's rate (default 0.8)
      links:                       # per link, either direction named
        R1-R2: {reservable_share: 0.5}
      policing:                    # per edge port (router-host): hard|soft|scavenger
        R1-H1: hard

Every scenario link is full duplex, so it gives two *directed* links, one
per direction, each booked on its own: ``"A-B"`` carries A towards B. The
default share of 80% follows OSCARS, which reserves that much of a link for
its science-data class (ESnet OSCARS 1.x ``ResvLibrary``); the policing of an
edge port is what its ingress policer does with traffic above the
reservation: ``hard`` discards, ``soft`` remarks to best effort,
``scavenger`` remarks to the less-than-best-effort class (RFC 8622).

Paths go through routers only (a host never forwards, as in the engine) and
are ranked by hop count, ties broken by the link ids in order so that the
choice is reproducible; :meth:`Topology.paths` yields the k shortest loopless
paths by Yen's algorithm (J. Y. Yen, "Finding the K Shortest Loopless Paths
in a Network", Management Science 17(11), 1971).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import FieldError, Issue, ScenarioError

POLICING_MODES = ("hard", "soft", "scavenger")
DEFAULT_RESERVABLE_SHARE = 0.8
DEFAULT_POLICING = "soft"


@dataclass(frozen=True)
class Link:
    """One direction of a scenario link: ``a`` sends towards ``b``."""

    id: str
    a: str
    b: str
    capacity_bps: int
    reservable_share: float = DEFAULT_RESERVABLE_SHARE
    #: The ingress policing at ``b`` when ``a`` is a host and ``b`` its edge
    #: router (the edge port the reservation enters by); ``None`` elsewhere.
    policing: str | None = None

    @property
    def reservable_bps(self) -> int:
        """The most the service books on this link at any instant (whole bit/s, rounded down)."""
        return int(self.capacity_bps * self.reservable_share)

    def as_json(self) -> dict[str, Any]:
        return {"id": self.id, "a": self.a, "b": self.b, "capacity_bps": self.capacity_bps,
                "reservable_bps": self.reservable_bps}  # fmt: skip


@dataclass(frozen=True)
class NodeInfo:
    name: str
    router: bool
    address: str | None = None


@dataclass
class Topology:
    """Nodes and directed links, with path search."""

    nodes: dict[str, NodeInfo]
    links: list[Link]
    _by_id: dict[str, Link] = field(init=False, repr=False)
    _out: dict[str, list[Link]] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._by_id = {link.id: link for link in self.links}
        self._out = {name: [] for name in self.nodes}
        for link in sorted(self.links, key=lambda l: l.id):
            self._out[link.a].append(link)

    # -- loading -----------------------------------------------------------
    @classmethod
    def from_scenario(cls, path: str | Path | dict) -> Topology:
        """Read a scenario YAML (or dict) and its optional ``circuits`` section.

        Raises :class:`~alphaqos.errors.ScenarioError` naming the file and
        field path of every problem.
        """
        import yaml

        from ..scenario import load_scenario

        where = str(path) if not isinstance(path, dict) else "<topology>"
        if isinstance(path, dict):
            data = dict(path)
        else:
            try:
                data = yaml.safe_load(Path(path).read_text())
            except OSError as exc:
                raise ScenarioError([Issue((), f"cannot read the topology: {exc.strerror}", where)]) from None
            except yaml.YAMLError as exc:
                raise ScenarioError([Issue((), f"not valid YAML: {exc}", where)]) from None
        if not isinstance(data, dict):
            raise ScenarioError([Issue((), "expected a mapping with nodes and links", where)])
        section = data.pop("circuits", None) or {}
        data.setdefault("name", "circuits")
        data.setdefault("duration", "1s")
        data.setdefault("flows", [])
        scenario = load_scenario(data)
        try:
            return cls._build(scenario, section)
        except FieldError as exc:
            raise ScenarioError([Issue(("circuits", *exc.loc), str(exc), where)]) from None

    @classmethod
    def _build(cls, scenario: Any, section: dict[str, Any]) -> Topology:
        if not isinstance(section, dict):
            raise FieldError((), "expected a mapping with reservable_share, links and policing")
        unknown = sorted(set(section) - {"reservable_share", "links", "policing"})
        if unknown:
            raise FieldError((unknown[0],), "unknown key: expected reservable_share, links or policing")
        default_share = _share(section.get("reservable_share", DEFAULT_RESERVABLE_SHARE), ("reservable_share",))
        nodes = {name: NodeInfo(name, bool(node.router), node.address) for name, node in scenario.nodes.items()}
        per_link = section.get("links") or {}
        policing = section.get("policing") or {}
        names = set()
        for link in scenario.links:
            a, b = link.between
            names |= {f"{a}-{b}", f"{b}-{a}"}
        for key in per_link:
            if key not in names:
                raise FieldError(("links", key), f"no such link: expected one of {', '.join(sorted(names))}")
        edge_ports = set()
        for link in scenario.links:
            a, b = link.between
            if nodes[a].router != nodes[b].router:
                router, host = (a, b) if nodes[a].router else (b, a)
                edge_ports.add(f"{router}-{host}")
        for key, mode in policing.items():
            if key not in edge_ports:
                raise FieldError(("policing", key), f"not an edge port (router-host): expected one of {', '.join(sorted(edge_ports)) or 'none'}")
            if mode not in POLICING_MODES:
                raise FieldError(("policing", key), f"unknown policing {mode!r}: expected one of {', '.join(POLICING_MODES)}")
        links = []
        for link in scenario.links:
            ends = link.between
            for a, b in (ends, ends[::-1]):
                options = per_link.get(f"{a}-{b}") or per_link.get(f"{b}-{a}") or {}
                loc = ("links", f"{a}-{b}" if f"{a}-{b}" in per_link else f"{b}-{a}")
                if not isinstance(options, dict) or set(options) - {"reservable_share"}:
                    raise FieldError(loc, "expected a mapping with reservable_share")
                share = _share(options.get("reservable_share", default_share), (*loc, "reservable_share"))
                police = None
                if not nodes[a].router and nodes[b].router:
                    police = policing.get(f"{b}-{a}", DEFAULT_POLICING)
                links.append(Link(f"{a}-{b}", a, b, int(link.rate), share, police))
        return cls(nodes, links)

    # -- queries -----------------------------------------------------------
    def link(self, link_id: str) -> Link:
        try:
            return self._by_id[link_id]
        except KeyError:
            raise KeyError(f"no such link {link_id!r}") from None

    def hosts(self) -> list[str]:
        return sorted(name for name, node in self.nodes.items() if not node.router)

    def edge_router_of(self, host: str) -> str:
        """The router a host is attached to (its first, by name, if several)."""
        if host not in self.nodes:
            raise KeyError(f"no such node {host!r}")
        if self.nodes[host].router:
            return host
        routers = sorted(l.b for l in self._out[host] if self.nodes[l.b].router)
        if not routers:
            raise KeyError(f"host {host!r} is attached to no router")
        return routers[0]

    def shortest_path(self, src: str, dst: str, usable: Callable[[Link], bool] | None = None,
                      _banned_links: frozenset[str] = frozenset(),
                      _banned_nodes: frozenset[str] = frozenset()) -> list[str] | None:  # fmt: skip
        """Fewest hops from ``src`` to ``dst`` over links ``usable`` accepts,
        forwarding only at routers; ties go to the smallest list of link ids."""
        for name in (src, dst):
            if name not in self.nodes:
                raise KeyError(f"no such node {name!r}")
        if src == dst:
            return None
        best: dict[str, tuple[int, list[str]]] = {src: (0, [])}
        heap: list[tuple[int, list[str], str]] = [(0, [], src)]
        while heap:
            hops, path, node = heapq.heappop(heap)
            if node == dst:
                return path
            if best.get(node, (hops, path)) < (hops, path):
                continue
            if node != src and not self.nodes[node].router:
                continue
            for link in self._out[node]:
                if link.id in _banned_links or link.b in _banned_nodes:
                    continue
                if usable is not None and not usable(link):
                    continue
                candidate = (hops + 1, [*path, link.id])
                if link.b not in best or candidate < best[link.b]:
                    best[link.b] = candidate
                    heapq.heappush(heap, (*candidate, link.b))
        return None

    def paths(self, src: str, dst: str, usable: Callable[[Link], bool] | None = None) -> Iterator[list[str]]:
        """The loopless paths from ``src`` to ``dst``, shortest first (Yen's algorithm)."""
        first = self.shortest_path(src, dst, usable)
        if first is None:
            return
        found = [first]
        yield first
        candidates: list[tuple[int, list[str]]] = []
        seen = {tuple(first)}
        while True:
            last = found[-1]
            for i in range(len(last)):
                root = last[:i]
                spur = src if i == 0 else self._by_id[last[i - 1]].b
                banned_links = frozenset(p[i] for p in found if p[:i] == root and len(p) > i)
                banned_nodes = frozenset([src, *(self._by_id[l].b for l in root[:-1])] if i else [])
                banned_nodes -= {spur}
                spur_path = self.shortest_path(spur, dst, usable, banned_links, banned_nodes | ({src} if i else set()))
                if spur_path is None:
                    continue
                total = root + spur_path
                if tuple(total) not in seen:
                    seen.add(tuple(total))
                    heapq.heappush(candidates, (len(total), total))
            if not candidates:
                return
            _, nxt = heapq.heappop(candidates)
            found.append(nxt)
            yield nxt


def _share(value: object, loc: tuple) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 1:
        raise FieldError(loc, f"expected a share in (0, 1], got {value!r}")
    return float(value)
