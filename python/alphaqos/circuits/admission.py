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

from collections.abc import Iterable, Sequence

from .._core import Bookings
from .topology import Topology

Profile = Sequence[tuple[int, int]]


class LinkBookings:
    """Bookings of every link of a topology, by link id: one core per link,
    so that one link's index can be rebuilt alone (:meth:`reset`) when
    another process changed its bookings."""

    def __init__(self, topology: Topology) -> None:
        self.topology = topology
        self._cores = {link.id: Bookings() for link in topology.links}
        self._caps = {link.id: link.reservable_bps for link in topology.links}

    def _core(self, link: str) -> Bookings:
        try:
            return self._cores[link]
        except KeyError:
            raise KeyError(f"no such link {link!r}") from None

    def peak(self, link: str, start: int, end: int) -> int:
        """The most booked on ``link`` at any instant of ``[start, end)``."""
        return self._core(link).peak(0, start, end)

    def fits_link(self, link: str, profile: Profile, end: int) -> bool:
        return self._core(link).fits_profile([(0, self._caps[link])], list(profile), end)

    def fits(self, path: Sequence[str], profile: Profile, end: int) -> bool:
        return all(self.fits_link(l, profile, end) for l in path)

    def book(self, path: Sequence[str], profile: Profile, end: int) -> None:
        for l in path:
            self._core(l).change_profile([(0, self._caps[l])], list(profile), end, 1)

    def release(self, path: Sequence[str], profile: Profile, end: int) -> None:
        for l in path:
            self._core(l).change_profile([(0, self._caps[l])], list(profile), end, -1)

    def cap(self, link: str) -> int:
        """The rate ``link`` may book (its reservable share, or an admin's setting)."""
        return self._caps[link]

    def set_cap(self, link: str, bps: int) -> None:
        """Change ``link``'s reservable rate (the caller checked the bookings fit)."""
        self._core(link)
        self._caps[link] = bps

    def reset(self, link: str, bookings: Iterable[tuple[Profile, int]] = ()) -> None:
        """Replace ``link``'s bookings by ``[(profile, end), ...]``."""
        core = self._cores[link] = Bookings()
        caps = [(0, self._caps[link])]
        for profile, end in bookings:
            core.change_profile(caps, [tuple(p) for p in profile], end, 1)

    def steps(self, link: str, start: int, end: int) -> list[tuple[int, int]]:
        """``[(time_ns, booked_bps from then on), ...]`` over ``[start, end)``."""
        return self._core(link).steps(0, start, end)

    def max_bookable(self, path: Sequence[str], start: int, end: int) -> int:
        """The largest constant rate that still fits on ``path`` over ``[start, end)``."""
        return max(0, min(self._caps[l] - self.peak(l, start, end) for l in path))
