"""The admission core through ``alphaqos._core.Bookings`` and the service's
wrapper: exact against a brute-force scan of every admitted booking."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from alphaqos.circuits.admission import LinkBookings
from alphaqos.circuits.topology import Topology

# H1 - R1 - R3 - H2, the middle link reservable at half its 1 Gbit/s.
SQUARE = {
    "nodes": {"H1": {"address": "10.0.1.1"}, "H2": {"address": "10.0.2.1"}, "R1": {"router": True}, "R3": {"router": True}},
    "links": [{"between": [a, b], "rate": rate, "delay": "1ms"} for a, b, rate in
              (("H1", "R1", "10Gbps"), ("R1", "R3", "1Gbps"), ("R3", "H2", "10Gbps"))],
    "circuits": {"reservable_share": 0.8, "links": {"R1-R3": {"reservable_share": 0.5}}},
}

CAP = 1000


def _booked(admitted, link, t):
    return sum(rate for links, profile, end in admitted if link in links
               for i, (s, rate) in enumerate(profile) if s <= t < (profile[i + 1][0] if i + 1 < len(profile) else end))


@st.composite
def _request(draw):
    links = draw(st.lists(st.integers(0, 3), min_size=1, max_size=4, unique=True))
    times = sorted(draw(st.lists(st.integers(0, 60), min_size=2, max_size=4, unique=True)))
    profile = [(t, draw(st.integers(1, 700))) for t in times[:-1]]
    return links, profile, times[-1]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(_request(), st.booleans()), min_size=1, max_size=40))
def test_random_profiles_never_overbook_and_refuse_only_what_does_not_fit(ops):
    from alphaqos._core import Bookings

    core, admitted = Bookings(), []
    for (links, profile, end), release in ops:
        caps = [(l, CAP) for l in links]
        fits = all(_booked(admitted, l, t) + rate <= CAP for l in links
                   for i, (s, rate) in enumerate(profile) for t in range(s, profile[i + 1][0] if i + 1 < len(profile) else end))
        assert core.fits_profile(caps, profile, end) == fits
        if fits:
            core.change_profile(caps, profile, end, 1)
            admitted.append((links, profile, end))
        if release and admitted:
            links2, profile2, end2 = admitted.pop(0)
            core.change_profile([(l, CAP) for l in links2], profile2, end2, -1)
        for l in range(4):
            for t in range(0, 62):
                assert core.peak(l, t, t + 1) == _booked(admitted, l, t) <= CAP
            # The step function lists exactly the levels where they change.
            steps = core.steps(l, 0, 62)
            levels = [_booked(admitted, l, t) for t in range(62)]
            want = [(0, levels[0])] + [(t, levels[t]) for t in range(1, 62) if levels[t] != levels[t - 1]]
            assert steps == want


def test_equal_reservations_at_the_same_instant_count_twice():
    b = LinkBookings(Topology.from_scenario(SQUARE))
    path = ["H1-R1", "R1-R3", "R3-H2"]  # R1-R3 reservable 0.5 Gbit/s
    assert b.fits(path, [(0, 250_000_000)], 10)
    b.book(path, [(0, 250_000_000)], 10)
    assert b.fits(path, [(0, 250_000_000)], 10)
    b.book(path, [(0, 250_000_000)], 10)
    assert not b.fits(path, [(5, 1)], 6)
    assert b.peak("R1-R3", 0, 10) == 500_000_000 and b.max_bookable(path, 0, 10) == 0
    assert b.max_bookable(path, 10, 20) == 500_000_000
    b.release(path, [(0, 250_000_000)], 10)
    assert b.steps("R1-R3", 0, 20) == [(0, 250_000_000), (10, 0)]


def test_unknown_link_is_a_key_error():
    b = LinkBookings(Topology.from_scenario(SQUARE))
    with pytest.raises(KeyError):
        b.peak("R9-R1", 0, 1)
