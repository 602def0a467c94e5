"""The reservation lifecycle table: what it allows, what it frees, and that
the documentation's table is the code's."""

import itertools
import re

import pytest

from alphaqos.circuits import fsm
from alphaqos.circuits.fsm import Booking, State, TransitionError, holds_booking, step


def test_lifecycle_follows_nsi_cs2():
    s = step(None, "reserve").to
    assert s is State.HELD
    s = step(s, "commit").to
    assert step(s, "provision").render and step(s, "provision").to is State.PROVISIONED
    assert step(State.PROVISIONED, "release").to is State.RESERVED
    assert step(State.PROVISIONED, "modify") == fsm.Transition(State.PROVISIONED, Booking.REBOOKED, render=True)
    assert step(State.HELD, "expire").to is State.EXPIRED


def test_every_transition_keeps_the_booking_consistent_with_the_states():
    for (src, action), t in fsm.TABLE.items():
        before = src is not None and holds_booking(src)
        after = holds_booking(t.to)
        assert {Booking.BOOKED: (not before and after), Booking.FREED: (before and not after),
                Booking.KEPT: (before and after), Booking.REBOOKED: (before and after)}[t.booking], (src, action)


@pytest.mark.parametrize("state, action", [(s, a) for s, a in itertools.product([None, *State], fsm.ACTIONS) if (s, a) not in fsm.TABLE])
def test_everything_else_is_refused_with_what_is_allowed(state, action):
    with pytest.raises(TransitionError, match=f"cannot {action}"):
        step(state, action)


def test_terminal_states_and_unknown_actions():
    assert fsm.TERMINAL == {State.ABORTED, State.EXPIRED, State.TERMINATED}
    with pytest.raises(TransitionError, match="it is final"):
        step(State.TERMINATED, "modify")
    with pytest.raises(TransitionError, match="unknown action 'delete'"):
        step(State.HELD, "delete")


def test_the_documented_table_is_the_code():
    rows = re.findall(r"^(\(new\)|\w+)\s+(\w+)\s+(\w+)\s+(\w+)", fsm.__doc__, re.M)
    doc = {(None if a == "(new)" else State(a), act): (State(to), Booking(b)) for a, act, to, b in rows if act in fsm.ACTIONS}
    assert doc == {k: (t.to, t.booking) for k, t in fsm.TABLE.items()}
