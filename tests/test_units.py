"""One unit parser everywhere (:mod:`alphaqos.units`): tc's rate spellings
beside the scenarios', the bits/bytes rule for ``bps``, and round trips of
every formatter through the parser (property-style: seeded random values
across the whole 64-bit range, no extra dependency)."""

from __future__ import annotations

import random

import pytest

from alphaqos import cli, units
from alphaqos.provision.tc import bits

SEED = 20_26


@pytest.mark.parametrize(
    ("text", "bps"),
    [
        # tc's bit spellings, in any case (iproute2 compares without case).
        ("10gbit", 10**10), ("10Gbit", 10**10), ("10GBIT", 10**10), ("1500kbit", 1_500_000), ("7bit", 7),
        ("3mbit", 3 * 10**6), ("2tbit", 2 * 10**12), ("2.5gbit/s", 2_500_000_000),
        # tc's binary prefixes.
        ("1Kibit", 1024), ("1mibit", 2**20), ("2Gibit", 2**31), ("1tibit", 2**40),
        # Bytes per second: a capital B, 8 bits each, as tc.
        ("1Bps", 8), ("1.25GBps", 10**10), ("1KBps", 8000), ("1kBps", 8000), ("1MiBps", 8 * 2**20), ("3TBps", 24 * 10**12),
        # The scenarios' SI spellings stay bits.
        ("10Gbps", 10**10), ("80kbps", 80_000), ("80Kbps", 80_000), ("0bps", 0), ("1Tbps", 10**12),
    ],
)
def test_rate_spellings(text, bps):
    assert units.parse_rate(text) == bps


@pytest.mark.parametrize("text", ["10gbps", "10mbps", "1tbps", "10GBPS", "10MBPS"])
def test_ambiguous_lowercase_bps_is_refused_naming_both_spellings(text):
    number, prefix = text[:-4], text[-4].upper()
    with pytest.raises(ValueError, match="ambiguous") as caught:
        units.parse_rate(text)
    message = str(caught.value)
    assert f"'{number}{prefix}bps' or '{number}{prefix.lower()}bit' for bits" in message
    assert f"'{number}{prefix}Bps' for bytes" in message


@pytest.mark.parametrize("text", ["10KBPS", "10gibps", "10Gb", "10 bits", "10kibit/sec"])
def test_unknown_rate_units(text):
    with pytest.raises(ValueError, match="unknown rate unit|expected a rate"):
        units.parse_rate(text)


def _values(rng: random.Random, n: int = 400) -> list[int]:
    """Integers of every magnitude up to 2^64 - 1, and round numbers."""
    out = [0, 1, 8, 999, 1000, 1024, 10**9, 10**12, 2**63, units.LIMIT - 1]
    for _ in range(n):
        digits = rng.randint(0, 19)
        value = rng.randint(0, 10**digits) * rng.choice([1, 1, 10**3, 10**6, 2**10, 2**20])
        if value < units.LIMIT:
            out.append(value)
    return out


def test_rate_round_trips_in_both_spellings():
    rng = random.Random(SEED)
    for value in _values(rng):
        assert units.parse_rate(units.fmt_rate(value, exact=True)) == value
        assert units.parse_rate(bits(value)) == value
        assert units.parse_rate(units.fmt_rate_tc(value)) == value


def test_bytes_per_second_is_eight_times_bits():
    rng = random.Random(SEED + 1)
    for value in _values(rng):
        for prefix, scale in (("", 1), ("K", 10**3), ("M", 10**6), ("G", 10**9), ("T", 10**12), ("Ki", 2**10), ("Gi", 2**30)):
            if value * scale * 8 >= units.LIMIT:
                continue
            assert units.parse_rate(f"{value}{prefix}Bps") == 8 * units.parse_rate(f"{value}{prefix}bit") == 8 * value * scale


def test_size_and_time_round_trips():
    rng = random.Random(SEED + 2)
    for value in _values(rng):
        assert units.parse_size(units.fmt_size(value, exact=True)) == value
        assert units.parse_time(units.fmt_time_ns(value, exact=True)) == value
        assert units.parse_queue_limit(units.fmt_queue_limit(units.QueueLimit(pkts=value or 1))) == units.QueueLimit(pkts=value or 1)


def test_tc_spelling_in_a_scenario_and_in_plan_transfer(tmp_path, capsys):
    """A scenario's rate and ``plan-transfer --rate`` read ``10gbit`` as
    ``provision`` and ``shape`` do: one parser."""
    from alphaqos.scenario import load_scenario

    scenario = {
        "name": "tc-units", "duration": "1s",
        "nodes": {"A": {"address": "10.0.0.1"}, "B": {"address": "10.0.0.2"}},
        "links": [{"between": ["A", "B"], "rate": "1gbit", "delay": "1ms"}],
        "flows": [{"name": "u", "udp": {"from": "A", "to": "B", "rate": "100mbit"}}],
    }  # fmt: skip
    loaded = load_scenario(scenario)
    assert loaded.links[0].rate == 10**9 and loaded.flows[0].udp.rate == 10**8
    out = tmp_path / "plan.yaml"
    status = cli.main(["plan-transfer", "--size", "100MB", "--deadline", "10s", "--rate", "1gbit", "--rtt", "10ms",
                       "--out", str(out)])  # fmt: skip
    assert status == 0, capsys.readouterr().err
    assert cli.main(["plan-transfer", "--size", "100MB", "--deadline", "10s", "--rate", "1gbps", "--rtt", "10ms"]) == 2
    assert "ambiguous" in capsys.readouterr().err


def test_m_is_minutes_and_ms_stays_milliseconds():
    # `alphaqos transfer send --deadline 20m`, as `timeout 20m` reads it.
    assert units.parse_time("20m") == units.parse_time("20min") == 20 * 60 * 10**9
    assert units.parse_time("20ms") == 20 * 10**6
