"""The deadline loop: the reservation a transfer needs now, and what it
reserved over time.

Every interval the needed rate is (bytes left x 8) / (time to the
deadline) x margin, the "dynamic control of reserved bandwidth" of the
third source document (slides, "deadline-driven file transfer over
DiffServ AF networks"; the simulator's ``deadline_reservation`` agent does
the same in :mod:`alphaqos.deadline`). The reservation follows it only when
the two differ by more than a hysteresis (a fraction of the reservation),
so that a steady transfer does not modify its circuit every second.

:class:`DeadlineLoop` also integrates the reservation over time (bits
reserved) for the final report, against the constant reservation
size x 8 / deadline held from the start to the deadline (= size x 8 bits).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

#: The smallest reservation the loop asks for, bit/s (a circuit of 0 bit/s is
#: refused by the service; near the end the needed rate tends to 0).
MIN_RATE_BPS = 1_000_000


def needed_rate_bps(bytes_left: int, time_left_s: float, margin: float) -> int:
    """(bytes left x 8) / (time left) x margin, rounded up to a whole bit/s;
    ``math.inf`` when no time is left and bytes are."""
    if bytes_left <= 0:
        return 0
    if time_left_s <= 0:
        return math.inf  # type: ignore[return-value]
    return math.ceil(bytes_left * 8 / time_left_s * margin)


@dataclass
class DeadlineLoop:
    """The loop's state. Times are seconds from the transfer's start
    (``t = 0``, when the first reservation holds); ``deadline_s`` is the
    deadline on that clock; rates are bit/s."""

    size: int
    deadline_s: float
    margin: float = 1.1
    hysteresis: float = 0.05
    #: The largest rate the path or the flags allow (None: the service decides).
    cap_bps: int | None = None
    reserved_bps: int = 0
    #: Aim to finish this long before the deadline (seconds): the loop reacts
    #: an interval late and the service's answer takes time, so a plan for
    #: the deadline itself would end just after it.
    guard_s: float = 0.0
    #: The reservation's steps: (t, bit/s), ascending.
    steps: list[tuple[float, int]] = field(default_factory=list)

    def start(self, reserved_bps: int) -> None:
        self.reserved_bps = reserved_bps
        self.steps = [(0.0, reserved_bps)]

    def proposal(self, t: float, bytes_done: int) -> int | None:
        """The rate to reserve at ``t`` with ``bytes_done`` delivered, or None
        when the reservation is within the hysteresis of the need."""
        left = self.deadline_s - t
        if left <= 0:
            return None  # past the deadline: the reservation has ended, nothing to modify
        need = needed_rate_bps(self.size - bytes_done, max(left - self.guard_s, min(left, self.guard_s / 2)), self.margin)
        if need == 0:
            return None
        need = max(MIN_RATE_BPS, need if math.isfinite(need) else self.cap_bps or self.reserved_bps)
        if self.cap_bps is not None:
            need = min(need, self.cap_bps)
        if abs(need - self.reserved_bps) <= self.hysteresis * self.reserved_bps:
            return None
        return int(need)

    def applied(self, t: float, bps: int) -> None:
        """The reservation changed to ``bps`` at ``t``."""
        self.reserved_bps = bps
        self.steps.append((t, bps))

    def integral_bits(self, until_s: float) -> float:
        """Bits reserved from 0 to ``until_s`` (the step function's integral)."""
        total = 0.0
        for (t, bps), nxt in zip(self.steps, [*self.steps[1:], (math.inf, 0)]):
            if t >= until_s:
                break
            total += bps * (min(nxt[0], until_s) - t)
        return total

    def mean_bps(self, until_s: float) -> float:
        return self.integral_bits(until_s) / until_s if until_s > 0 else float(self.reserved_bps)

    @property
    def constant_bps(self) -> float:
        """size x 8 / deadline: the constant rate that just meets the deadline."""
        return self.size * 8 / self.deadline_s
