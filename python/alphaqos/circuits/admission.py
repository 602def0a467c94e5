"""Exact admission per link: a thin wrapper over the engine's admission core.

The step functions live in Rust (``alphaqos_sim::bookings``, exposed as
``alphaqos._core.Bookings``), the same code the simulator's
``call_admission`` agent books with; this module only maps the topology's
link ids to the core's integer indices and their reservable rates. A
request fits if on every link of its path the highest booking over its
interval plus its own rate stays within the link's reservable share.

Times are integer nanoseconds, rates whole bit/s; a profile is
``[(from_ns, bps), ...]`` ascending in time, each rate holding until the next
time (the last one until ``end``).
"""

from __future__ import annotations

from collections.abc import Sequence

from .._core import Bookings
from .topology import Topology

Profile = Sequence[tuple[int, int]]


class LinkBookings:
    """Bookings of every link of a topology, by link id."""

    def __init__(self, topology: Topology) -> None:
        self.topology = topology
        self._index = {link.id: i for i, link in enumerate(topology.links)}
        self._core = Bookings()

    def _links(self, path: Sequence[str]) -> list[tuple[int, int]]:
        return [(self._index[l], self.topology.link(l).reservable_bps) for l in path]

    def peak(self, link: str, start: int, end: int) -> int:
        """The most booked on ``link`` at any instant of ``[start, end)``."""
        return self._core.peak(self._index[link], start, end)

    def fits(self, path: Sequence[str], profile: Profile, end: int) -> bool:
        return self._core.fits_profile(self._links(path), list(profile), end)

    def book(self, path: Sequence[str], profile: Profile, end: int) -> None:
        self._core.change_profile(self._links(path), list(profile), end, 1)

    def release(self, path: Sequence[str], profile: Profile, end: int) -> None:
        self._core.change_profile(self._links(path), list(profile), end, -1)

    def steps(self, link: str, start: int, end: int) -> list[tuple[int, int]]:
        """``[(time_ns, booked_bps from then on), ...]`` over ``[start, end)``."""
        return self._core.steps(self._index[link], start, end)

    def max_bookable(self, path: Sequence[str], start: int, end: int) -> int:
        """The largest constant rate that still fits on ``path`` over ``[start, end)``."""
        return max(0, min(self.topology.link(l).reservable_bps - self.peak(l, start, end) for l in path))
