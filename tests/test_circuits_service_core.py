"""The circuits service's core in-process (no HTTP, SQLite): random
reserve/commit/modify/terminate/expire sequences checked by brute force
against every link's reservable share, and the same arrival sequence
decided alike by the service and by a scenario's ``call_admission`` agent."""

from __future__ import annotations

import pytest
import yaml
from _circuits import TOPOLOGY
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from alphaqos.circuits.errors import Problem
from alphaqos.circuits.service import NS, CircuitService, Principal, iso, token_hash
from alphaqos.circuits.topology import Topology

MBPS = 10**6
HOLD_S = 10
STEP_NS = 100 * NS  # request times are whole multiples of 100 s from the example's base
USER = Principal("pat", "user")


class Clock:
    def __init__(self, t: int):
        self.t = t

    def __call__(self) -> int:
        return self.t


@pytest.fixture(scope="module")
def core(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("circuits-core")
    clock = Clock(1_900_000_000 * NS)
    service = CircuitService(f"sqlite:///{tmp / 'core.db'}", Topology.from_scenario(yaml.safe_load(TOPOLOGY)),
                             hold_timeout=HOLD_S, state_dir=tmp / "state", clock=clock)  # fmt: skip
    yield service, clock
    service.close()


def _level(booked, link, t):
    """What the brute-force model has on ``link`` at ``t``: every booking's step in force."""
    total = 0
    for path, profile, end in booked:
        if link in path and profile[0][0] <= t < end:
            total += [r for s, r in profile if s <= t][-1]
    return total


def _fits(booked, topo, path, profile, end):
    times = {t for _, p, e in booked for t, _ in p} | {e for _, _, e in booked} | {t for t, _ in profile}
    for link in path:
        cap = topo.link(link).reservable_bps
        for t in times:
            if profile[0][0] <= t < end:
                own = [r for s, r in profile if s <= t][-1]
                if _level(booked, link, t) + own > cap:
                    return False
    return True


def _simple_paths(topo, src, dst):
    return list(topo.paths(src, dst))  # Yen's over the bare topology gives every loopless path here


op = st.one_of(
    st.tuples(st.just("reserve"), st.sampled_from(["H1", "H3"]), st.integers(0, 5), st.integers(1, 4),
              st.lists(st.sampled_from([100, 200, 300, 400]), min_size=1, max_size=3)),  # fmt: skip
    st.tuples(st.just("commit"), st.integers(0, 20)),
    st.tuples(st.just("modify"), st.integers(0, 20), st.sampled_from([100, 200, 400, 600])),
    st.tuples(st.just("terminate"), st.integers(0, 20)),
    st.tuples(st.just("expire")),
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(op, min_size=1, max_size=14))
def test_random_sequences_never_overbook_and_refuse_only_what_does_not_fit(core, ops):
    service, clock = core
    topo = service.topology
    clock.t += 10**5 * NS  # a window of its own for each example
    base = clock.t + 600 * NS
    model: dict[int, dict] = {}  # id -> {path, profile, end, state}
    made: list[int] = []

    def booked():
        return [(m["path"], m["profile"], m["end"]) for m in model.values() if m["state"] in ("held", "reserved")]

    for o in ops:
        if o[0] == "reserve":
            _, src, k, length, rates = o
            start, end = base + k * STEP_NS, base + (k + length) * STEP_NS
            profile = [(start + i * STEP_NS // len(rates), r * MBPS) for i, r in enumerate(rates)]
            body = {"src": src, "dst": "H2", "start": iso(start), "end": iso(end)}
            if len(rates) == 1:
                body["rate"] = rates[0] * MBPS
            else:
                body["profile"] = [[iso(t), r] for t, r in profile]
            fitting = [p for p in _simple_paths(topo, src, "H2") if _fits(booked(), topo, p, profile, end)]
            try:
                r = service.reserve(USER, body)
            except Problem as exc:
                assert exc.status == 409, exc.document()
                assert not fitting, f"refused, but {fitting[0]} fits"
                continue
            assert r["path"] == fitting[0]  # the shortest that fits (ties by link ids)
            model[r["id"]] = {"path": r["path"], "profile": profile, "end": end, "state": "held"}
            made.append(r["id"])
        elif o[0] in ("commit", "terminate") and made:
            rid = made[o[1] % len(made)]
            try:
                r = service.act(USER, rid, o[0])
            except Problem as exc:
                assert exc.status == 409 and model[rid]["state"] not in (("held",) if o[0] == "commit" else ("held", "reserved"))
                continue
            model[rid]["state"] = "reserved" if o[0] == "commit" else "terminated"
        elif o[0] == "modify" and made:
            rid = made[o[1] % len(made)]
            m = model[rid]
            new = [(m["profile"][0][0], o[2] * MBPS)]
            others = [(x["path"], x["profile"], x["end"]) for i, x in model.items()
                      if i != rid and x["state"] in ("held", "reserved")]  # fmt: skip
            try:
                service.modify(USER, rid, {"rate": o[2] * MBPS})
            except Problem as exc:
                assert exc.status == 409
                assert m["state"] != "reserved" or not _fits(others, topo, m["path"], new, m["end"])
                continue
            assert m["state"] == "reserved" and _fits(others, topo, m["path"], new, m["end"])
            m["profile"] = new
        elif o[0] == "expire":
            clock.t += (HOLD_S + 1) * NS
            service.expire_due()
            for m in model.values():
                if m["state"] == "held":
                    m["state"] = "expired"
        # Invariants: the database holds exactly the model's bookings, within every share.
        for link in topo.links:
            rows = [(link.id, [tuple(p) for p in profile], end) for profile, end in service.booked_in_db(link.id)
                    if profile[0][0] >= base]  # fmt: skip
            mine = [(link.id, p, e) for path, p, e in booked() if link.id in path]
            assert sorted(rows) == sorted(mine)
            for t in {t for _, p, _ in mine for t, _ in p}:
                assert _level(booked(), link.id, t) <= link.reservable_bps
                assert service._index.peak(link.id, t, t + 1) == _level(booked(), link.id, t)


def test_equal_reservations_starting_at_the_same_instant_count_twice(core):
    service, clock = core
    clock.t += 10**5 * NS
    start, end = clock.t + 600 * NS, clock.t + 1200 * NS
    body = {"src": "H1", "dst": "H2", "start": iso(start), "end": iso(end), "rate": 400 * MBPS}
    paths = [service.reserve(USER, body)["path"] for _ in range(4)]
    assert paths[0] == paths[1] and paths[2] == paths[3] and paths[0] != paths[2]
    with pytest.raises(Problem) as refused:
        service.reserve(USER, {**body, "rate": 1})
    assert refused.value.status == 409 and refused.value.extra["max_bookable_bps"] == 0


AGENT_SCENARIO = """\
name: admission-equivalence
duration: 8s
seed: 7
nodes:
  s1: {address: 10.0.1.1}
  d1: {address: 10.0.2.1}
  E: {router: true}
  C: {router: true}
links:
  - {between: [s1, E], rate: 1Gbps, delay: 1ms}
  - {between: [E, C], rate: 100Mbps, delay: 2ms}
  - {between: [C, d1], rate: 1Gbps, delay: 1ms}
workloads:
  - name: calls
    poisson: {rate: 5, pairs: {from: [s1], to: [d1]}, size: 400MB}
    tcp: {cc: newreno}
control:
  # 400 MB take at least 32 s at 100 Mbit/s: no transfer ends (and frees its
  # booking early) within the 8 s, so each booking is [arrival, +1.5 s).
  - call_admission: {workload: calls, rate: 30Mbps, duration: 1500ms, capacity_fraction: 0.8}
"""


def test_same_arrivals_same_decisions_as_the_call_admission_agent(tmp_path):
    import alphaqos

    scenario = yaml.safe_load(AGENT_SCENARIO)
    table = alphaqos.run(scenario).admission
    # Times are seconds (float64); below 8 s they round back to the engine's nanoseconds exactly.
    rows = [(round(t * NS), rate, round(end * NS), ok) for t, rate, end, ok in table.select("time", "rate_bps", "end", "admitted").rows()]
    assert len(rows) >= 20 and 0 < sum(r[3] for r in rows) < len(rows)  # both kinds of decision
    clock = Clock(1_900_000_000 * NS)
    topo = Topology.from_scenario({**scenario, "circuits": {"reservable_share": 0.8}})
    service = CircuitService(f"sqlite:///{tmp_path / 'eq.db'}", topo, state_dir=tmp_path / "state", clock=clock)
    base = clock.t + NS
    try:
        decisions = []
        for time_ns, rate, end_ns, _ in rows:
            clock.t = base + time_ns
            try:
                service.reserve(USER, {"src": "s1", "dst": "d1", "rate": rate, "start": iso(base + time_ns),
                                       "end": iso(base + end_ns)})  # fmt: skip
                decisions.append(1)
            except Problem as exc:
                assert exc.status == 409
                decisions.append(0)
        assert decisions == [r[3] for r in rows]
    finally:
        service.close()



def test_admin_share_change_and_revocation_reach_another_process(tmp_path):
    """An admin's new share is refused while bookings exceed it, and once set
    it bounds the next decision of a second service on the same database (as
    another process would); a revoked token is refused at once though cached."""
    clock = Clock(1_900_000_000 * NS)
    topo = Topology.from_scenario(yaml.safe_load(TOPOLOGY))
    url = f"sqlite:///{tmp_path / 'admin.db'}"
    one, two = (CircuitService(url, topo, state_dir=tmp_path / "state", clock=clock) for _ in range(2))
    admin = Principal("ada", "admin")
    try:
        start = clock.t + 1000 * NS
        body = {"src": "H1", "dst": "H2", "rate": 300 * MBPS, "start": iso(start), "end": iso(start + 3600 * NS)}
        first = two.reserve(USER, body)
        link = first["path"][1]  # R1-R2 or R1-R3, 800 Mbit/s reservable
        with pytest.raises(Problem) as refused:
            one.set_link_share(admin, link, 0.25)  # 250 Mbit/s < the 300 booked (by the other process)
        assert refused.value.status == 409 and refused.value.document()["booked_peak_bps"] == 300 * MBPS
        assert one.bookings(link, None, None)["reservable_bps"] == 800 * MBPS
        assert one.set_link_share(admin, link, 0.5)["reservable_bps"] == 500 * MBPS
        # The other service's index still holds 800 Mbit/s; the version tells it
        # otherwise, and it follows the change log rather than reloading.
        followed = two.followed
        second = two.reserve(USER, {**body, "rate": 200 * MBPS})
        assert two.followed > followed
        assert second["path"] == first["path"]  # 300 + 200 = 500 fits exactly
        third = two.reserve(USER, {**body, "rate": 100 * MBPS})
        assert link not in third["path"]  # the other route
        assert two.bookings(link, None, None)["reservable_bps"] == 500 * MBPS
        # Releases follow too: both indexes equal a fresh load of the database.
        one.act(USER, second["id"], "terminate")
        followed = two.followed
        fresh = CircuitService(url, topo, state_dir=tmp_path / "state", clock=clock)
        try:
            for spec in topo.links:
                want = fresh.bookings(spec.id, None, None)
                assert one.bookings(spec.id, None, None) == want and two.bookings(spec.id, None, None) == want
            assert two.followed > followed and fresh.followed == 0
            assert max(bps for _, bps in two.bookings(link, None, None)["steps"]) == 300 * MBPS  # 200 released
        finally:
            fresh.close()
        # Revocation.
        token, _ = one.create_token("user", "carol", admin.name)
        carol = two.authenticate(f"Bearer {token}")  # now cached by the other process
        assert one.authenticate(f"Bearer {token}").name == "carol"
        token_id = next(t["id"] for t in one.tokens() if t["name"] == "carol")
        assert one.revoke_token(admin, token_id)["revoked"] is not None
        assert one.revoke_token(admin, token_id)["revoked"] is not None  # again: no second event
        with pytest.raises(Problem) as gone:
            one.authenticate(f"Bearer {token}")
        assert gone.value.status == 401
        # The other process has it cached: it refuses it at once all the same,
        # for a read as for a write (the write's own transaction checks too).
        assert token_hash(token) in two._principals
        with pytest.raises(Problem) as refused:
            two.authenticate(f"Bearer {token}")
        assert refused.value.status == 401 and "revoked" in refused.value.detail
        assert token_hash(token) not in two._principals  # the cache entry is gone
        with pytest.raises(Problem) as refused:
            two.reserve(carol, {**body, "rate": MBPS})
        assert refused.value.status == 401 and len(two.list(admin)) == 3
        # The admin's changes are audit events, read by either process: the
        # refused share change is not one.
        audit = two.audit()
        assert [(a["action"], a["who"], a["target"]) for a in audit] == [
            ("link_share", "ada", link), ("token_create", "ada", str(token_id)), ("token_revoke", "ada", str(token_id))]
        assert audit[0]["old"] == {"reservable_bps": 800 * MBPS, "reservable_share": 0.8}
        assert audit[0]["new"] == {"reservable_bps": 500 * MBPS, "reservable_share": 0.5}
        assert audit[0]["at"] == iso(clock.t)
        assert audit[1]["new"] == {"id": token_id, "name": "carol", "role": "user"}
        assert audit[2]["old"] == {"name": "carol", "revoked": None}
        assert audit[2]["new"]["revoked"] == one.tokens()[-1]["revoked"]
        assert two.audit(after=audit[1]["id"]) == audit[2:]
    finally:
        one.close()
        two.close()


def test_booking_log_stays_bounded_and_an_index_behind_its_prune_point_reloads(tmp_path):
    """booking_log is pruned to the last ``log_keep`` versions of each link
    every ``prune_every`` changes; a second process whose index fell behind
    the pruned rows cannot follow the log and reloads the link, and both end
    equal to a fresh load of the database."""
    from sqlalchemy import create_engine, text

    clock = Clock(1_900_000_000 * NS)
    topo = Topology.from_scenario(yaml.safe_load(TOPOLOGY))
    url = f"sqlite:///{tmp_path / 'log.db'}"
    writer = CircuitService(url, topo, state_dir=tmp_path / "state", clock=clock, log_keep=4, prune_every=8)
    behind = CircuitService(url, topo, state_dir=tmp_path / "state", clock=clock)
    engine = create_engine(url)

    def log_rows() -> int:
        with engine.connect() as c:
            return c.execute(text("SELECT count(*) FROM booking_log")).scalar_one()

    try:
        start = clock.t + 1000 * NS
        body = {"src": "H1", "dst": "H2", "rate": MBPS, "start": iso(start), "end": iso(start + 3600 * NS)}
        # A few changes the other process follows from the log.
        for _ in range(2):
            writer.reserve(USER, body)
        followed = behind.followed
        behind.bookings("H1-R1", None, None)
        assert behind.followed == followed + 1
        sizes = []
        for i in range(120):
            made = writer.reserve(USER, {**body, "rate": MBPS + i})
            if i % 3 == 0:
                writer.act(USER, made["id"], "terminate")
            sizes.append(log_rows())
        # Bounded: at most log_keep versions per link kept plus what the
        # changes between two prunes add (two rows a version at most).
        links = len(topo.links)
        bound = links * 4 * 2 + 8 * 4 * 2
        assert max(sizes) <= bound, (max(sizes), bound)
        assert sizes[-1] < sizes[0] + bound
        # The other index is far behind the prune point: it reloads, and ends
        # equal to the writer's and to a fresh load.
        reloaded, followed = behind.reloaded, behind.followed
        fresh = CircuitService(url, topo, state_dir=tmp_path / "state", clock=clock)
        try:
            for spec in topo.links:
                want = fresh.bookings(spec.id, None, None)
                assert behind.bookings(spec.id, None, None) == want == writer.bookings(spec.id, None, None)
        finally:
            fresh.close()
        assert behind.reloaded > reloaded and behind.followed == followed
        peak = max(bps for _, bps in behind.bookings("H1-R1", None, None)["steps"])
        assert peak == sum(MBPS + i for i in range(120) if i % 3) + 2 * MBPS
    finally:
        engine.dispose()
        writer.close()
        behind.close()
