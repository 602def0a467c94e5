"""α-flow identification (flows.identify) and its day-by-day backtest
(flows.backtest) on small canonical tables written with schema.write_partitioned."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import duckdb
import polars as pl
import pytest

from alphaqos.cli import main
from alphaqos.flows import schema
from alphaqos.flows.backtest import backtest, summarise
from alphaqos.flows.identify import identify

T0 = datetime(2024, 1, 1, tzinfo=UTC)  # a minute boundary
GB = 10**9


def rec(first, last=None, *, src="10.1.2.3", dst="192.168.5.6", sport=40000, dport=2811,
        nbytes=GB, rate=1, exporter="r1", proto=6):  # fmt: skip
    return dict(exporter=exporter, first=first, last=first if last is None else last, src_addr=src,
                dst_addr=dst, src_port=sport, dst_port=dport, protocol=proto, bytes=nbytes,
                packets=max(nbytes // 1500, 1), sampling_rate=rate)  # fmt: skip


def write(root, rows):
    schema.write_partitioned(pl.DataFrame(rows), root)
    return root


def table(db, name, order="1"):
    with duckdb.connect(str(db), read_only=True) as con:
        cursor = con.execute(f"SELECT * FROM {name} ORDER BY {order}")
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def alpha(tmp_path, rows, **options):
    root = write(tmp_path / "flows", rows)
    db = tmp_path / "alpha.duckdb"
    summary = identify(root, db, **options)
    return summary, table(db, "alpha_flows", "interval_start_us, src_addr"), db


def minute(n):
    return int((T0 + timedelta(minutes=n)).timestamp()) * 10**6


# --- spreading ---------------------------------------------------------------


def test_two_minute_record_of_3gb_splits_evenly(tmp_path):
    _, rows, _ = alpha(tmp_path, [rec(T0, T0 + timedelta(minutes=2), nbytes=3 * GB)])
    assert [(r["interval_start_us"], r["bytes"]) for r in rows] == [(minute(0), 1.5e9), (minute(1), 1.5e9)]
    assert all(r["interval_end_us"] - r["interval_start_us"] == 60 * 10**6 for r in rows)


def test_record_crossing_a_boundary_is_split_by_overlap(tmp_path):
    # 40 s before the boundary, 20 s after: 4 GB -> 8/3 GB and 4/3 GB;
    # the second share (1.33 GB) is alpha too, a lower H shows both.
    start = T0 + timedelta(seconds=20)
    _, rows, _ = alpha(tmp_path, [rec(start, start + timedelta(minutes=1), nbytes=4 * GB)])
    assert [r["interval_start_us"] for r in rows] == [minute(0), minute(1)]
    # Whole bytes (the α table keeps integers, so sums are exact in any order).
    assert rows[0]["bytes"] == round(4e9 * 40 / 60)
    assert rows[1]["bytes"] == round(4e9 * 20 / 60)


def test_record_with_first_equal_last_and_ending_on_a_boundary(tmp_path):
    rows = [rec(T0 + timedelta(seconds=59), nbytes=2 * GB, dport=1),  # an instant: all in minute 0
            rec(T0, T0 + timedelta(minutes=1), nbytes=2 * GB, dport=2)]  # ends on the boundary: minute 0 only
    _, found, _ = alpha(tmp_path, rows)
    assert sorted((r["dst_port"], r["interval_start_us"], r["bytes"]) for r in found) == [(1, minute(0), 2e9), (2, minute(0), 2e9)]
    assert len(found) == 2


def test_sampling_rate_scales_bytes(tmp_path):
    # 6 MB sampled 1 in 200 = 1.2 GB: alpha; 4 MB sampled 1 in 200 = 0.8 GB: not
    rows = [rec(T0, nbytes=6_000_000, rate=200, dport=1), rec(T0, nbytes=4_000_000, rate=200, dport=2)]
    _, found, _ = alpha(tmp_path, rows)
    assert [(r["dst_port"], r["bytes"]) for r in found] == [(1, 1.2e9)]


def test_active_timeout_pieces_are_stitched(tmp_path):
    # one transfer of 1.2 GB in minute 0, exported as three 20-s records
    # of 0.4 GB each (alone, none is above H)
    pieces = [rec(T0 + timedelta(seconds=20 * k), T0 + timedelta(seconds=20 * k + 19), nbytes=400_000_000)
              for k in range(3)]  # fmt: skip
    _, found, _ = alpha(tmp_path, pieces)
    assert len(found) == 1
    assert found[0]["bytes"] == pytest.approx(1.2e9) and found[0]["records"] == 3
    assert found[0]["interval_start_us"] == minute(0)


def test_other_5tuples_are_not_stitched(tmp_path):
    pieces = [rec(T0, nbytes=600_000_000, sport=1), rec(T0, nbytes=600_000_000, sport=2)]
    _, found, _ = alpha(tmp_path, pieces)
    assert found == []


@pytest.mark.parametrize("buckets", [1, 2, 1 << 22])
def test_candidate_buckets_never_lose_an_alpha_flow(tmp_path, monkeypatch, buckets):
    # with one bucket, the first pass lets everything through; with many,
    # the 0.6 GB pieces of other 5-tuples must not hide or fake an alpha flow
    from alphaqos.flows import identify as module

    monkeypatch.setattr(module, "CANDIDATE_BUCKETS", buckets)
    rows = [rec(T0, nbytes=600_000_000, sport=k) for k in range(1, 6)]
    rows += [rec(T0, nbytes=700_000_000, sport=9), rec(T0 + timedelta(seconds=30), nbytes=400_000_000, sport=9)]
    _, found, _ = alpha(tmp_path, rows)
    assert [(r["src_port"], r["bytes"], r["records"]) for r in found] == [(9, 1.1e9, 2)]


def test_threshold_is_strictly_above_h(tmp_path):
    rows = [rec(T0, nbytes=GB, dport=1), rec(T0, nbytes=GB + 1, dport=2)]
    _, found, _ = alpha(tmp_path, rows)
    assert [(r["dst_port"], r["bytes"]) for r in found] == [(2, GB + 1)]


def test_threshold_and_interval_are_configurable(tmp_path):
    # 1.5 GB over 2 minutes: 0.75 GB per minute, 1.5 GB in a 5-minute interval
    row = rec(T0, T0 + timedelta(minutes=2), nbytes=1_500_000_000)
    _, found, _ = alpha(tmp_path, [row], interval_s=300)
    assert [(r["interval_start_us"], r["bytes"]) for r in found] == [(minute(0), 1.5e9)]
    _, found, _ = alpha(tmp_path / "b", [row], threshold_bytes=700_000_000)
    assert len(found) == 2


# --- prefixes ----------------------------------------------------------------


def test_prefixes_v4_24_and_32_and_v6_48(tmp_path):
    rows = [rec(T0, src="10.1.2.3", dst="192.168.5.6", nbytes=2 * GB),
            rec(T0, src="2001:db8:abcd:12::1", dst="2001:db8:ffff:1::2", nbytes=3 * GB)]  # fmt: skip
    _, _, db = alpha(tmp_path, rows)
    got = {(r["prefix"], r["role"], r["family"], r["alpha_bytes"], r["sightings"]) for r in table(db, "prefixes")}
    assert got == {("10.1.2.0/24", "src", 4, 2e9, 1), ("192.168.5.0/24", "dst", 4, 2e9, 1),
                   ("2001:db8:abcd::/48", "src", 6, 3e9, 1), ("2001:db8:ffff::/48", "dst", 6, 3e9, 1)}  # fmt: skip
    identify(tmp_path / "flows", tmp_path / "p32.duckdb", prefix_v4=32, prefix_v6=128)
    got = {(r["prefix"], r["role"]) for r in table(tmp_path / "p32.duckdb", "prefixes")}
    assert got == {("10.1.2.3/32", "src"), ("192.168.5.6/32", "dst"),
                   ("2001:db8:abcd:12::1/128", "src"), ("2001:db8:ffff:1::2/128", "dst")}  # fmt: skip


def test_prefix_table_times_and_sightings(tmp_path):
    rows = [rec(T0, T0 + timedelta(minutes=2), nbytes=3 * GB, src="10.1.2.3"),
            rec(T0 + timedelta(minutes=10), nbytes=2 * GB, src="10.1.2.77", sport=9)]  # fmt: skip
    _, _, db = alpha(tmp_path, rows)
    (src,) = [r for r in table(db, "prefixes") if r["role"] == "src"]
    assert src["prefix"] == "10.1.2.0/24" and src["sightings"] == 3 and src["alpha_bytes"] == 5e9
    assert src["first_seen"] == datetime(2024, 1, 1, 0, 0) and src["last_seen"] == datetime(2024, 1, 1, 0, 11)


def test_aging_removes_an_entry_exactly_after_the_period(tmp_path):
    seen = rec(T0, nbytes=2 * GB)  # alpha in minute 0: last_seen = T0 + 1 min
    end = T0 + timedelta(minutes=1) + timedelta(days=2)
    late = dict(src="172.16.0.1", dst="172.16.0.2", nbytes=100)  # a beta record that moves the end of the data
    # the data ends 1 us before the aging period has elapsed: kept
    write(tmp_path / "a", [seen, rec(end - timedelta(days=1), end - timedelta(microseconds=1), **late)])
    s = identify(tmp_path / "a", tmp_path / "a.duckdb", aging_days=2)
    assert s.prefixes == 2 and s.reference == end - timedelta(microseconds=1)
    # the data ends exactly when the period has elapsed: gone
    write(tmp_path / "b", [seen, rec(end - timedelta(days=1), end, **late)])
    s = identify(tmp_path / "b", tmp_path / "b.duckdb", aging_days=2)
    assert s.prefixes == 0 and table(tmp_path / "b.duckdb", "prefixes") == []


def test_a_sighting_after_a_lapse_starts_the_entry_afresh(tmp_path):
    rows = [rec(T0, nbytes=2 * GB), rec(T0 + timedelta(days=5), nbytes=3 * GB)]
    _, _, db = alpha(tmp_path, rows, aging_days=2)
    src = [r for r in table(db, "prefixes") if r["role"] == "src"][0]
    assert src["first_seen"] == datetime(2024, 1, 6) and src["sightings"] == 1 and src["alpha_bytes"] == 3e9
    _, _, db = alpha(tmp_path / "b", rows, aging_days=10)
    src = [r for r in table(db, "prefixes") if r["role"] == "src"][0]
    assert src["first_seen"] == datetime(2024, 1, 1) and src["sightings"] == 2 and src["alpha_bytes"] == 5e9


# --- incremental runs --------------------------------------------------------


def test_running_twice_changes_nothing(tmp_path):
    rows = [rec(T0 + timedelta(days=d), nbytes=2 * GB, src=f"10.0.{d}.1") for d in range(3)]
    root = write(tmp_path / "flows", rows)
    db = tmp_path / "x.duckdb"
    first = identify(root, db)
    before = {name: table(db, name) for name in ("alpha_flows", "prefixes")}
    second = identify(root, db)
    assert first.partitions_processed == 3 and second.partitions_processed == 0 and second.partitions_skipped == 3
    assert {name: table(db, name) for name in ("alpha_flows", "prefixes")} == before


def test_days_one_at_a_time_equal_all_at_once(tmp_path):
    rows = [rec(T0 + timedelta(days=d), nbytes=2 * GB, src=f"10.0.{d}.1") for d in range(3)]
    root = write(tmp_path / "flows", rows)
    identify(root, tmp_path / "all.duckdb")
    for d in (2, 0, 1, 1):
        identify(root, tmp_path / "inc.duckdb", days=[date(2024, 1, 1 + d)])
    assert table(tmp_path / "inc.duckdb", "prefixes") == table(tmp_path / "all.duckdb", "prefixes")


def test_a_changed_day_is_replaced(tmp_path):
    root = write(tmp_path / "flows", [rec(T0, nbytes=2 * GB, src="10.0.0.1")])
    db = tmp_path / "x.duckdb"
    identify(root, db)
    write(root, [rec(T0 + timedelta(hours=1), nbytes=2 * GB, src="10.9.9.9")])  # a new file in the same day
    s = identify(root, db)
    assert s.partitions_replaced == 1
    assert {r["prefix"] for r in table(db, "prefixes") if r["role"] == "src"} == {"10.0.0.0/24", "10.9.9.0/24"}
    assert len(table(db, "alpha_flows")) == 2


def test_a_database_with_another_threshold_is_refused(tmp_path):
    root = write(tmp_path / "flows", [rec(T0, nbytes=2 * GB)])
    identify(root, tmp_path / "x.duckdb")
    with pytest.raises(ValueError, match="threshold"):
        identify(root, tmp_path / "x.duckdb", threshold_bytes=2 * GB)


# --- command line ------------------------------------------------------------


def test_identify_command(tmp_path, capsys):
    root = write(tmp_path / "flows", [rec(T0, nbytes=2 * GB)])
    assert main(["flows", "identify", str(root), "--db", str(tmp_path / "x.duckdb"), "--threshold", "1.5GB",
                 "--interval", "1min", "--prefix-v4", "32", "--aging", "7d"]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert "2 prefixes" in out
    assert {r["prefix"] for r in table(tmp_path / "x.duckdb", "prefixes")} == {"10.1.2.3/32", "192.168.5.6/32"}
    # the prefixes learnt are printed, most α bytes first
    assert "prefixes learnt:" in out and "  10.1.2.3/32" in out and " src " in out and "192.168.5.6/32" in out


def test_identify_prints_the_top_prefixes_by_alpha_bytes(tmp_path, capsys):
    rows = [rec(T0, src=f"10.0.{k}.1", dst=f"192.168.{k}.1", sport=k, nbytes=(2 + k) * GB) for k in range(4)]
    root = write(tmp_path / "flows", rows)
    assert main(["flows", "identify", str(root), "--db", str(tmp_path / "x.duckdb"), "--top", "3"]) == 0
    out = capsys.readouterr().out
    listed = [line.split()[0] for line in out.splitlines()[3:]]
    assert "(the 3 with the most α bytes)" in out
    assert listed == ["10.0.3.0/24", "192.168.3.0/24", "10.0.2.0/24"]  # 5 GB (src, then dst), then 4 GB


@pytest.mark.parametrize(
    "arguments, message",
    [(["EMPTY"], "no Parquet"), (["ROOT", "--prefix-v4", "33"], "prefix length"),
     (["ROOT", "--threshold", "1XB"], "size unit"), (["ROOT", "--aging", "soon"], "period"),
     (["ROOT", "--day", "2024-13-01"], "YYYY-MM-DD")],
)  # fmt: skip
def test_identify_bad_input_exits_2_and_writes_nothing(tmp_path, capsys, arguments, message):
    root = write(tmp_path / "flows", [rec(T0, nbytes=2 * GB)])
    (tmp_path / "empty").mkdir()
    replace = {"ROOT": str(root), "EMPTY": str(tmp_path / "empty")}
    db = tmp_path / "x.duckdb"
    assert main(["flows", "identify", *[replace.get(a, a) for a in arguments], "--db", str(db)]) == 2
    assert message in capsys.readouterr().err
    assert not db.exists()


def test_identify_refuses_a_file_that_is_not_a_database(tmp_path, capsys):
    root = write(tmp_path / "flows", [rec(T0, nbytes=2 * GB)])
    db = tmp_path / "x.duckdb"
    db.write_text("not a database\n" * 500)
    assert main(["flows", "identify", str(root), "--db", str(db)]) == 2
    assert "identification database" in capsys.readouterr().err
    assert db.read_text() == "not a database\n" * 500


# --- backtest ----------------------------------------------------------------


def test_a_pair_first_seen_today_is_caught_tomorrow(tmp_path):
    rows = [rec(T0 + timedelta(days=d, hours=1), nbytes=2 * GB) for d in range(2)]
    out = backtest(write(tmp_path / "flows", rows), prefix_v4=[24])
    assert out["alpha_bytes"].to_list() == [2e9, 2e9]
    assert out["alpha_caught_pair"].to_list() == [0.0, 2e9]
    assert out["rules"].to_list() == [0, 2] and out["rules_added"].to_list() == [0, 2]


def test_backtest_catch_ratio_and_beta_by_hand(tmp_path):
    day = [T0 + timedelta(days=d, hours=2) for d in range(3)]
    rows = [
        # day 0: alpha A (10.1.2.3 -> 192.168.5.6), 2 GB; alpha B (10.7.7.7 -> 172.20.0.9), 3 GB
        rec(day[0], nbytes=2 * GB), rec(day[0], src="10.7.7.7", dst="172.20.0.9", nbytes=3 * GB),
        # day 1: A again (4 GB in two minutes, 2 GB each); alpha C from A's /24 to a new sink (5 GB);
        # beta from A's /24 to A's sink /24 (1000 B); beta to B's sink only (500 B)
        rec(day[1], day[1] + timedelta(minutes=2), nbytes=4 * GB),
        rec(day[1], src="10.1.2.200", dst="8.8.8.8", nbytes=5 * GB),
        rec(day[1], src="10.1.2.50", dst="192.168.5.99", nbytes=1000, sport=5),
        rec(day[1], src="9.9.9.9", dst="172.20.0.1", nbytes=500, sport=6),
        # day 2: on another exporter, B again (2 GB) and an IPv6 alpha (2 GB), never seen before
        rec(day[2], src="10.7.7.8", dst="172.20.0.9", nbytes=2 * GB, exporter="r2"),
        rec(day[2], src="2001:db8:1::1", dst="2001:db8:2::2", nbytes=2 * GB, exporter="r2"),
    ]
    out = backtest(write(tmp_path / "flows", rows), prefix_v4=[24, 32], prefix_v6=[48])
    by = {(r["prefix_v4"], r["day"].day, r["exporter"]): r for r in out.iter_rows(named=True)}
    d1 = by[(24, 2, "r1")]
    assert d1["alpha_bytes"] == 9e9
    assert d1["alpha_caught_pair"] == 4e9  # A; C's sink is new
    assert d1["alpha_caught_either"] == 9e9  # C's source /24 is a rule
    assert d1["beta_redirected_pair"] == 1000  # the beta inside A's pair of /24s
    assert d1["beta_redirected_either"] == 1500
    assert d1["total_bytes"] == 9e9 + 1500
    assert by[(32, 2, "r1")]["alpha_caught_pair"] == 4e9 and by[(32, 2, "r1")]["beta_redirected_pair"] == 0
    assert by[(32, 2, "r1")]["alpha_caught_either"] == 4e9  # 10.1.2.200/32 is not a rule
    assert by[(32, 2, "r1")]["beta_redirected_either"] == 0
    d2 = by[(24, 3, "r2")]
    assert (d2["alpha_bytes"], d2["alpha_caught_pair"]) == (4e9, 2e9)  # B (same /24s); IPv6 is new
    assert by[(32, 3, "r2")]["alpha_caught_pair"] == 0  # 10.7.7.8/32 was never seen
    # learnt on day 1: C's sink 8.8.8.0/24 (its source /24 was known); at /32 both of C's addresses
    assert by[(24, 3, "r2")]["rules"] == 5 and by[(24, 3, "r2")]["rules_added"] == 1
    assert by[(32, 3, "r2")]["rules"] == 6 and by[(32, 3, "r2")]["rules_added"] == 2
    # The headline leaves out day 0, which had no earlier rules to judge by (its 5 GB).
    summary = {r["prefix_v4"]: r for r in summarise(out).iter_rows(named=True)}
    assert summary[24]["catch_ratio"] == pytest.approx(6e9 / 13e9)
    assert summary[32]["catch_ratio"] == pytest.approx(4e9 / 13e9)
    assert (summary[24]["days"], summary[24]["days_excluded"], summary[24]["alpha_bytes"]) == (2, 1, 13e9)
    every_day = {r["prefix_v4"]: r for r in summarise(out, warmup=False).iter_rows(named=True)}
    assert every_day[24]["catch_ratio"] == pytest.approx(6e9 / 18e9) and every_day[24]["days_excluded"] == 0


def test_backtest_rules_expire(tmp_path):
    rows = [rec(T0 + timedelta(hours=1), nbytes=2 * GB), rec(T0 + timedelta(days=3), src="1.1.1.1", nbytes=5)]
    out = backtest(write(tmp_path / "flows", rows), prefix_v4=[24], aging_days=2)
    assert out["rules"].to_list() == [0, 0] and out["rules_expired"].to_list() == [0, 0]
    out = backtest(write(tmp_path / "g", rows + [rec(T0 + timedelta(days=1), src="1.1.1.1", nbytes=5)]),
                   prefix_v4=[24], aging_days=2)  # fmt: skip
    assert out["rules"].to_list() == [0, 2, 0] and out["rules_expired"].to_list() == [0, 0, 2]


def test_backtest_command_writes_the_report(tmp_path, capsys):
    rows = [rec(T0 + timedelta(days=d, hours=1), nbytes=2 * GB) for d in range(3)]
    root = write(tmp_path / "flows", rows)
    assert main(["flows", "backtest", str(root), "--out", str(tmp_path / "report")]) == 0
    out = capsys.readouterr().out
    # day 0 has no earlier rules: left out of the headline (it was 66.7% with it)
    assert "/24 (IPv6 /48): 100.0% of 4e+09 α bytes caught (pair) over 2 day(s), leaving out 1 first day(s)" in out
    assert "/32 (IPv6 /128): 100.0%" in out  # a /32 is a host: its IPv6 companion is /128, not /48
    names = sorted(p.name for p in (tmp_path / "report").iterdir())
    assert names == ["backtest.csv", "backtest.parquet", "catch_ratio.png", "rules.png", "summary.json"]
    assert pl.read_csv(tmp_path / "report" / "backtest.csv").height == 6  # 3 days x /24, /32
    assert main(["flows", "backtest", str(root), "--out", str(tmp_path / "report")]) == 2  # exists
    assert main(["flows", "backtest", str(tmp_path / "nothing"), "--out", str(tmp_path / "r2")]) == 2
    assert main(["flows", "backtest", str(root), "--out", str(tmp_path / "r3"), "--prefix-v6", "48,64,128"]) == 2
    assert not (tmp_path / "r2").exists() and not (tmp_path / "r3").exists()


def test_synthetic_new_hosts_tell_24_from_32(tmp_path):
    from alphaqos.flows import synth

    def ratios(new_hosts):
        data = synth.synthesize(days=4, exporters=2, seed=1, beta_flows_per_day=2_000, alpha_transfers_per_day=12,
                                new_alpha_hosts_per_day=new_hosts)  # fmt: skip
        root = tmp_path / f"new{new_hosts}"
        schema.write_partitioned(data, root)
        summary = summarise(backtest(root))
        return data, {r["prefix_v4"]: r["catch_ratio"] for r in summary.iter_rows(named=True)}

    static, same = ratios(0)
    assert same == {24: 1.0, 32: 1.0}  # recurring pairs of static hosts: /24 and /32 rules alike
    data, ratio = ratios(3)
    alpha = data.filter(synth.is_alpha(data))
    new = alpha.filter(synth.is_new_host(alpha["src_addr"]) | synth.is_new_host(alpha["dst_addr"]))
    assert new["first"].dt.date().n_unique() == 3  # hosts appear on each day after the first
    assert ratio[24] == 1.0 and ratio[32] < 0.9  # /32 rules miss a new host on its first day; /24 rules do not


def test_backtest_ipv6_rules_match_alpha_and_beta(tmp_path):
    day = [T0 + timedelta(days=d, hours=3) for d in range(2)]
    v6 = dict(src="2001:db8:aa:1::10", dst="2001:db8:bb:2::20")
    rows = [
        rec(day[0], nbytes=2 * GB, **v6),
        rec(day[1], nbytes=3 * GB, **v6),
        rec(day[1], src="2001:db8:aa:ffff::1", dst="2001:db8:bb::7", nbytes=700, sport=7),  # same /48s: beta
        rec(day[1], src="2001:db8:aa:1::10", dst="2001:db8:cc::1", nbytes=300, sport=8),  # src /48 only
        rec(day[1], src="10.0.0.1", dst="10.0.0.2", nbytes=50, sport=9),
    ]
    out = backtest(write(tmp_path / "flows", rows), prefix_v4=[24], prefix_v6=[48])
    d1 = out.filter(pl.col("day") == date(2024, 1, 2)).row(0, named=True)
    assert (d1["alpha_bytes"], d1["alpha_caught_pair"], d1["alpha_caught_either"]) == (3e9, 3e9, 3e9)
    assert (d1["beta_redirected_pair"], d1["beta_redirected_either"]) == (700, 1000)
    out = backtest(tmp_path / "flows", prefix_v4=[24], prefix_v6=[128])
    d1 = out.filter(pl.col("day") == date(2024, 1, 2)).row(0, named=True)
    assert (d1["alpha_caught_pair"], d1["beta_redirected_pair"], d1["beta_redirected_either"]) == (3e9, 0, 300)


def test_backtest_command_either_mode(tmp_path, capsys):
    rows = [rec(T0 + timedelta(hours=1), nbytes=2 * GB),
            rec(T0 + timedelta(days=1, hours=1), dst="8.8.8.8", nbytes=2 * GB)]  # fmt: skip
    root = write(tmp_path / "flows", rows)
    assert main(["flows", "backtest", str(root), "--out", str(tmp_path / "pair"), "--prefix-v4", "24"]) == 0
    assert "0.0% of 2e+09" in capsys.readouterr().out
    assert main(["flows", "backtest", str(root), "--out", str(tmp_path / "either"), "--mode", "either"]) == 0
    assert "100.0% of 2e+09" in capsys.readouterr().out
