"""A reservation's lifecycle: one table of states and transitions.

After the NSI Connection Service 2.0 (OGF GFD.212), whose reservation,
provisioning and lifecycle state machines are folded here into one state
per reservation, as the service needs it:

============  ===========  ============  ========  ===========================
from          action       to            booking   notes
============  ===========  ============  ========  ===========================
(new)         reserve      held          booked    admitted; hold timer starts
held          commit       reserved      kept
held          abort        aborted       freed
held          expire       expired       freed     hold timeout (default 120 s)
reserved      provision    provisioned   kept      southbound rendered
provisioned   release      reserved      kept
reserved      modify       reserved      rebooked  new version, admitted against
provisioned   modify       provisioned   rebooked  everything but itself; rendered
held          terminate    terminated    freed
reserved      terminate    terminated    freed
provisioned   terminate    terminated    freed
============  ===========  ============  ========  ===========================

Terminal states (``aborted``, ``expired``, ``terminated``) accept no action.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class State(StrEnum):
    HELD = "held"
    RESERVED = "reserved"
    PROVISIONED = "provisioned"
    ABORTED = "aborted"
    EXPIRED = "expired"
    TERMINATED = "terminated"


class Booking(StrEnum):
    BOOKED = "booked"
    KEPT = "kept"
    FREED = "freed"
    REBOOKED = "rebooked"


@dataclass(frozen=True)
class Transition:
    to: State
    booking: Booking
    #: Render the southbound configuration (policer, host shaping) afterwards.
    render: bool = False


S, B = State, Booking
#: (from state or None for a new reservation, action) -> transition.
TABLE: dict[tuple[State | None, str], Transition] = {
    (None, "reserve"): Transition(S.HELD, B.BOOKED),
    (S.HELD, "commit"): Transition(S.RESERVED, B.KEPT),
    (S.HELD, "abort"): Transition(S.ABORTED, B.FREED),
    (S.HELD, "expire"): Transition(S.EXPIRED, B.FREED),
    (S.RESERVED, "provision"): Transition(S.PROVISIONED, B.KEPT, render=True),
    (S.PROVISIONED, "release"): Transition(S.RESERVED, B.KEPT),
    (S.RESERVED, "modify"): Transition(S.RESERVED, B.REBOOKED),
    (S.PROVISIONED, "modify"): Transition(S.PROVISIONED, B.REBOOKED, render=True),
    (S.HELD, "terminate"): Transition(S.TERMINATED, B.FREED),
    (S.RESERVED, "terminate"): Transition(S.TERMINATED, B.FREED),
    (S.PROVISIONED, "terminate"): Transition(S.TERMINATED, B.FREED),
}
ACTIONS = tuple(dict.fromkeys(action for _, action in TABLE))
TERMINAL = frozenset(State) - {s for s, _ in TABLE if s is not None}


class TransitionError(ValueError):
    """An action the reservation's state does not allow (HTTP 409)."""

    def __init__(self, state: State | None, action: str):
        allowed = [a for (s, a) in TABLE if s == state]
        where = f"a {state} reservation" if state else "a new reservation"
        hint = f"allowed: {', '.join(allowed)}" if allowed else "it is final"
        if action not in ACTIONS:
            message = f"unknown action {action!r}: expected one of {', '.join(ACTIONS)}"
        else:
            message = f"cannot {action} {where} ({hint})"
        super().__init__(message)
        self.state, self.action = state, action


def step(state: State | None, action: str) -> Transition:
    """The transition ``action`` takes from ``state``; :class:`TransitionError` if none."""
    try:
        return TABLE[(state, action)]
    except KeyError:
        raise TransitionError(state, action) from None


def holds_booking(state: State) -> bool:
    """Does a reservation in ``state`` keep its bandwidth booked?"""
    return state in (S.HELD, S.RESERVED, S.PROVISIONED)
