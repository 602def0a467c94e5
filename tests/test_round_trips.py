"""Round trips, as hypothesis properties with shrinking (issue 24):

- units: what a formatter writes, the parser reads back to the same integer;
  tc's spellings (``10gbit``, ``1Kibit``, ``3MBps``, any case) read as tc
  reads them; anything else is a ValueError on one line that says what was
  expected;
- scenarios: a scenario resolved (stops, router addresses), dumped as YAML
  and loaded again is the same scenario, and resolves to the same engine
  configuration.

Small budgets (``max_examples``) keep the file to a few seconds; the
seeded sweeps of tests/test_units.py cover the full 64-bit range too."""

from __future__ import annotations

import pytest
import yaml

hypothesis = pytest.importorskip("hypothesis", reason="hypothesis is installed by make (the pip line)")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from alphaqos import units  # noqa: E402
from alphaqos.provision.tc import bits  # noqa: E402

FAST = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])

#: Any integer a unit holds, weighted toward round numbers (hypothesis
#: shrinks toward 0, so the failures it reports are small).
quantities = st.one_of(
    st.integers(0, units.LIMIT - 1),
    st.builds(lambda n, scale: n * scale, st.integers(0, 10**6), st.sampled_from([1, 10**3, 10**6, 10**9, 2**10, 2**20, 2**30])),
)


@FAST
@given(quantities)
def test_formatted_rates_sizes_and_times_parse_back(value):
    assert units.parse_rate(units.fmt_rate(value, exact=True)) == value
    assert units.parse_rate(units.fmt_rate_tc(value)) == value
    assert units.parse_rate(bits(value)) == value
    assert units.parse_size(units.fmt_size(value, exact=True)) == value
    assert units.parse_time(units.fmt_time_ns(value, exact=True)) == value
    if value:
        for limit in (units.QueueLimit(pkts=value), units.QueueLimit(bytes=value)):
            assert units.parse_queue_limit(units.fmt_queue_limit(limit)) == limit


TC_BIT_PREFIXES = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12,
                   "ki": 2**10, "mi": 2**20, "gi": 2**30, "ti": 2**40}  # fmt: skip
TC_BYTE_PREFIXES = {"": 1, "k": 10**3, "K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12,
                    "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}  # fmt: skip


def _reads(parse, text: str, value: int) -> None:
    """``parse(text) == value``, or, beyond 64 bits, a refusal saying so."""
    if value >= units.LIMIT:
        with pytest.raises(ValueError, match="too large"):
            parse(text)
    else:
        assert parse(text) == value


def _any_case(draw, text: str) -> str:
    return "".join(c.upper() if draw(st.booleans()) else c.lower() for c in text)


@FAST
@given(st.data(), st.integers(0, 10**7), st.sampled_from(sorted(TC_BIT_PREFIXES)), st.booleans())
def test_tc_bit_spellings_in_any_case(data, n, prefix, per_second):
    """iproute2 reads ``<n><prefix>bit`` without regard to case (tc(8),
    "RATES"); ``/s`` may follow."""
    text = f"{n}{_any_case(data.draw, prefix + 'bit')}{'/s' if per_second else ''}"
    _reads(units.parse_rate, text, n * TC_BIT_PREFIXES[prefix])


@FAST
@given(st.integers(0, 10**7), st.sampled_from(sorted(TC_BYTE_PREFIXES)))
def test_tc_byte_spellings_are_eight_bits_each(n, prefix):
    _reads(units.parse_rate, f"{n}{prefix}Bps", 8 * n * TC_BYTE_PREFIXES[prefix])


TIME_UNITS = {"ns": 1, "us": 10**3, "µs": 10**3, "ms": 10**6, "s": 10**9, "m": 60 * 10**9, "min": 60 * 10**9,
              "h": 3600 * 10**9, "d": 86_400 * 10**9}  # fmt: skip


@FAST
@given(st.integers(0, 10**6), st.sampled_from(sorted(TIME_UNITS)), st.sampled_from(["", " "]))
def test_time_spellings(n, unit, space):
    _reads(units.parse_time, f"{n}{space}{unit}", n * TIME_UNITS[unit])


PARSERS = {
    units.parse_rate: "a rate",
    units.parse_size: "a size",
    units.parse_time: "a time",
    units.parse_queue_limit: "a queue limit",
}


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(list(PARSERS)), st.one_of(st.text(max_size=30), st.from_regex(r"-?[0-9.e]{0,6} ?[A-Za-zµ/]{0,7}", fullmatch=True)))
def test_garbage_is_refused_on_one_line_saying_what_was_expected(parse, text):
    """Anything the parser does not take is a ValueError, never another
    exception, on one line that says what was expected or quotes what was
    given (a fraction of a packet, a zero limit, beyond 64 bits); what it
    takes is a whole number in range."""
    try:
        value = parse(text)
    except ValueError as exc:
        message = str(exc)
        assert "\n" not in message and message
        assert f"expected {PARSERS[parse]}" in message or repr(text) in message, message
        return
    number = value if isinstance(value, int) else (value.pkts or value.bytes or 0)
    assert 0 <= number < units.LIMIT


# --- scenarios ------------------------------------------------------------------------------

pytest.importorskip("alphaqos._core", reason="the engine is not built (make build)")
from alphaqos.scenario import load_scenario, resolve  # noqa: E402

HOSTS = ["A", "B", "C"]


def _rate(draw, bps: int) -> str:
    spellings = [units.fmt_rate(bps, exact=True), units.fmt_rate_tc(bps)]
    if bps % 8 == 0:
        spellings.append(f"{bps // 8}Bps")
    return draw(st.sampled_from(spellings))


@st.composite
def scenarios(draw) -> dict:
    """A host-router-host path (and a third host on the router), one to
    three flows across it, in the units' several spellings."""
    duration_ms = draw(st.integers(100, 5000))
    links = []
    for host in HOSTS:
        link = {"between": [host, "R"], "rate": _rate(draw, draw(st.integers(10**6, 10**10))),
                "delay": units.fmt_time_ns(draw(st.integers(0, 50)) * 10**5, exact=True)}  # fmt: skip
        if draw(st.booleans()):
            limit = draw(st.one_of(st.integers(1, 10**4).map(lambda p: f"{p}p"),
                                   st.integers(1500, 10**8).map(lambda b: units.fmt_size(b, exact=True))))  # fmt: skip
            link["queues"] = {"R": {"fifo": {"limit": limit}}}
        links.append(link)
    flows = []
    for i in range(draw(st.integers(1, 3))):
        src, dst = draw(st.permutations(HOSTS))[:2]
        kind = draw(st.sampled_from(["tcp", "udp", "ping"]))
        body: dict = {"from": src, "to": dst}
        if kind == "udp":
            body["rate"] = _rate(draw, draw(st.integers(10**5, 10**9)))
        elif kind == "tcp":
            body["cc"] = draw(st.sampled_from(["newreno", "cubic", "htcp"]))
        elif kind == "ping":
            body["interval"] = units.fmt_time_ns(draw(st.integers(1, 1000)) * 10**6, exact=True)
        flow = {"name": f"f{i}", kind: body}
        if draw(st.booleans()):
            flow["start"] = units.fmt_time_ns(draw(st.integers(0, duration_ms - 1)) * 10**6, exact=True)
        flows.append(flow)
    return {
        "name": "generated",
        "duration": units.fmt_time_ns(duration_ms * 10**6, exact=True),
        "seed": draw(st.integers(0, 2**32 - 1)),
        "nodes": {"A": {"address": "10.0.0.1"}, "B": {"address": "10.0.0.2"}, "C": {"address": "10.0.0.3"},
                  "R": {"router": True}},
        "links": links,
        "flows": flows,
    }  # fmt: skip


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_a_resolved_scenario_dumped_and_loaded_resolves_the_same(doc):
    scenario = load_scenario(doc)
    resolved = scenario.resolved()
    assert resolved.nodes["R"].address is not None  # the engine gave the router its address
    again = load_scenario(yaml.safe_load(resolved.to_yaml()))
    assert again == resolved
    assert resolve(again) == resolve(resolved) == resolve(again.resolved())
    # Loading the dump of the scenario as written also resolves the same.
    assert resolve(load_scenario(yaml.safe_load(scenario.to_yaml())).resolved()) == resolve(resolved)
