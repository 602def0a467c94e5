"""``alphaqos circuits plan`` (issue 22, HNTES end to end): α prefix pairs
of ``flows identify`` on ``flows synth`` data become circuit requests
(rate: a percentile of the pair's α rate; window: its recurring hours),
and the policy it writes makes ``alphaqos provision`` render the terms
that steer the pairs into the circuit class."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import threading
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import duckdb
import numpy as np
import pytest

from alphaqos import cli
from alphaqos.circuits import plan as hntes
from alphaqos.provision import check

AFTER = "2026-11-10T00:00:00Z"
ENDPOINTS = ["--endpoint", "198.51.100.0/24=W1", "--endpoint", "203.0.113.0/24=E1"]


@pytest.fixture(scope="module")
def db(tmp_path_factory) -> Path:
    """Three synthetic days of flow records, identified."""
    d = tmp_path_factory.mktemp("hntes")
    cli = [sys.executable, "-m", "alphaqos"]
    subprocess.run([*cli, "flows", "synth", "--days", "3", "--out", str(d / "store"), "--seed", "3"], check=True, capture_output=True)
    subprocess.run([*cli, "flows", "identify", str(d / "store"), "--db", str(d / "p.duckdb")], check=True, capture_output=True)
    return d / "p.duckdb"


def _plan(capsys, *argv) -> tuple[int, str, str]:
    """``alphaqos circuits plan ARGV...``, in this process."""
    status = cli.main(["circuits", "plan", *(str(a) for a in argv)])
    out, err = capsys.readouterr()
    return status, out, err


def _expected(db: Path, percentile: float, min_days: int) -> dict[tuple[str, str, tuple[int, ...]], int]:
    """The requests worked out independently, in SQL: /24 pairs, per
    interval the largest exporter's bytes, hours seen on >= min_days days,
    consecutive hours one window, nearest-rank percentile (numpy's
    inverted_cdf) rounded up to a Mbit/s."""
    con = duckdb.connect(str(db), read_only=True)
    interval_s = int(con.execute("SELECT value FROM settings WHERE name = 'interval_us'").fetchone()[0]) / 1e6
    rows = con.execute("""
        WITH p AS (SELECT regexp_replace(src_addr, '\\.\\d+$', '.0/24') AS sp,
                          regexp_replace(dst_addr, '\\.\\d+$', '.0/24') AS dp, exporter, interval_start_us AS t, bytes
                   FROM alpha_flows),
             e AS (SELECT sp, dp, t, exporter, sum(bytes) AS b FROM p GROUP BY ALL),
             i AS (SELECT sp, dp, t, max(b) * 8 / ? AS bps FROM e GROUP BY ALL)
        SELECT sp, dp, hour(to_timestamp(t / 1e6) AT TIME ZONE 'UTC') AS h,
               CAST(to_timestamp(t / 1e6) AT TIME ZONE 'UTC' AS DATE) AS day, bps
        FROM i WHERE sp IN (SELECT prefix FROM prefixes WHERE role = 'src')
                 AND dp IN (SELECT prefix FROM prefixes WHERE role = 'dst')""", [interval_s]).fetchall()  # fmt: skip
    con.close()
    by_pair: dict = {}
    for sp, dp, h, day, bps in rows:
        entry = by_pair.setdefault((sp, dp), {})
        entry.setdefault(h, ([], set()))[0].append(bps)
        entry[h][1].add(day)
    out = {}
    for (sp, dp), hours in by_pair.items():
        recurring = sorted(h for h, (_, days) in hours.items() if len(days) >= min_days)
        runs: list[list[int]] = []
        for h in recurring:
            (runs[-1].append(h) if runs and runs[-1][-1] == h - 1 else runs.append([h]))
        if len(runs) > 1 and runs[0][0] == 0 and runs[-1][-1] == 23:
            runs[0] = runs.pop() + runs[0]
        for run in runs:
            rates = [r for h in run for r in hours[h][0]]
            p = float(np.percentile(rates, percentile, method="inverted_cdf"))
            out[(sp, dp, tuple(run))] = math.ceil(p / 1e6) * 1_000_000
    return out


@pytest.mark.parametrize(("percentile", "min_days"), [(95, 2), (50, 1)])
def test_requests_match_an_independent_computation(db, tmp_path, capsys, percentile, min_days):
    out = tmp_path / "requests.json"
    status, printed, err = _plan(capsys, "--prefixes", db, "--percentile", percentile, "--min-days", min_days,
                                 "--after", AFTER, "--out", out, *ENDPOINTS)  # fmt: skip
    assert status == 0, err
    entries = json.loads(out.read_text())
    expected = _expected(db, percentile, min_days)
    assert expected, "the synthetic data should have recurring α hours"
    got = {(e["evidence"]["src_prefix"], e["evidence"]["dst_prefix"], tuple(e["evidence"]["hours_utc"])): e["request"]["rate"]
           for e in entries}  # fmt: skip
    assert got == expected
    after = datetime(2026, 11, 10, tzinfo=UTC)
    for e in entries:
        r, ev = e["request"], e["evidence"]
        start, end = (datetime.fromisoformat(r[k].replace("Z", "+00:00")) for k in ("start", "end"))
        # The window: the next time its first hour comes, for as many hours as it has.
        assert after <= start < after + timedelta(days=1) and start.hour == ev["hours_utc"][0]
        assert end - start == timedelta(hours=len(ev["hours_utc"]))
        assert ev["p50_bps"] <= r["rate"] and r["rate"] - ev[f"p{percentile:g}_bps"] < 1_000_000
        assert r["policing"] == "soft" and ev["days_seen"] >= min_days
        names = {"198.51.100.0/24": "W1", "203.0.113.0/24": "E1"}
        assert (r["src"], r["dst"]) == (names[ev["src_prefix"]], names[ev["dst_prefix"]])
        assert ev["unresolved"] == ([] if r["src"] != r["dst"] else [f"{ev['src_prefix']} and {ev['dst_prefix']} map to the same node W1"])
    assert f"{out}: {len(entries)} circuit requests" in printed


def test_windows_wrap_at_midnight_and_percentile_is_nearest_rank():
    days = {23: {1, 2}, 0: {1, 2}, 1: {2, 3}, 5: {1}, 9: {1, 2}, 10: {4, 5}}
    assert hntes.recurring_windows(days, 2) == [[9, 10], [23, 0, 1]]
    assert hntes.recurring_windows({h: {1} for h in range(24)}, 1) == [list(range(24))]
    values = [5.0, 1.0, 4.0, 2.0, 3.0]
    assert [hntes.nearest_rank(values, p) for p in (1, 20, 21, 50, 95, 100)] == [1.0, 1.0, 2.0, 3.0, 5.0, 5.0]


def test_provision_renders_the_steering_terms(db, tmp_path, capsys):
    from alphaqos.cli import main

    policy = tmp_path / "circuits-policy.yaml"
    status, printed, err = _plan(capsys, "--prefixes", db, "--after", AFTER, "--policy-out", policy, "--out", tmp_path / "r.json")
    assert status == 0, err
    entries = json.loads((tmp_path / "r.json").read_text())
    peak: dict = {}
    for e in entries:
        key = (e["evidence"]["src_prefix"], e["evidence"]["dst_prefix"])
        peak[key] = max(peak.get(key, 0), e["request"]["rate"])
    cfg = tmp_path / "cfg"
    assert main(["provision", "--prefixes", str(db), "--policy", str(policy), "--alpha-class", "science-data",
                 "--target", "junos,cisco", "--out", str(cfg)]) == 0  # fmt: skip
    junos, cisco = (cfg / "junos.conf").read_text(), (cfg / "cisco.cfg").read_text()
    assert check.check("junos.conf", junos) == [] and check.check("cisco.cfg", cisco) == []
    from alphaqos.circuits.southbound import policer_bucket

    for i, ((sp, dp), rate) in enumerate(peak.items(), 1):
        base = f"set firewall family inet filter alphaqos term hntes-{i}"
        assert f"{base} from source-address {sp}" in junos and f"{base} from destination-address {dp}" in junos
        assert f"{base} then forwarding-class science-data" in junos
        assert f"set firewall policer hntes-{i}-policer if-exceeding bandwidth-limit {rate} burst-size-limit {policer_bucket(rate)}" in junos
        assert f"police cir {rate} bc {policer_bucket(rate)}" in cisco
    # The α term of the prefix table is still there, after the circuits' terms.
    assert "term alpha from source-prefix-list alpha-src" in junos
    assert junos.index("term hntes-1 ") < junos.index("term alpha ")


class _Service(BaseHTTPRequestHandler):
    """A stand-in for the circuits service's POST /api/v1/reservations."""

    answers: list[int] = []
    seen: list = []

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).seen.append((self.path, self.headers["Authorization"], body))
        code = type(self).answers.pop(0) if type(self).answers else 201
        doc = {"id": len(type(self).seen), "state": "held"} if code == 201 else \
            {"type": "about:blank", "title": "Conflict" if code == 409 else "Unauthorized", "status": code, "detail": "does not fit"}
        data = json.dumps(doc).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json" if code == 201 else "application/problem+json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture
def service():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Service)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _Service.seen, _Service.answers = [], []
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_submit_posts_resolved_requests_and_reports_refusals(db, tmp_path, capsys, service):
    status, out, _ = _plan(capsys, "--prefixes", db, "--after", AFTER, "--out", tmp_path / "r.json", *ENDPOINTS)
    entries = json.loads((tmp_path / "r.json").read_text())
    resolved = [e["request"] for e in entries if not e["evidence"]["unresolved"]]
    assert resolved, "the synthetic data should give requests between two nodes"
    _Service.answers = [409]
    status, out, _ = _plan(capsys, "--prefixes", db, "--after", AFTER, "--out", tmp_path / "r.json", *ENDPOINTS,
                           "--submit", service, "--token", "tok-1")  # fmt: skip
    assert status == 1  # one refused
    assert [body for _, _, body in _Service.seen] == resolved
    assert all(path == "/api/v1/reservations" and auth == "Bearer tok-1" for path, auth, _ in _Service.seen)
    assert out.count("booked ") == len(resolved) - 1 and "refused " in out and "409 Conflict: does not fit" in out
    _Service.seen, _Service.answers = [], [401]
    status, _, err = _plan(capsys, "--prefixes", db, "--after", AFTER, *ENDPOINTS, "--submit", service, "--token", "bad")
    assert status == 2 and "refused the token: 401 Unauthorized" in err and len(_Service.seen) == 1


@pytest.mark.parametrize(("argv", "message"), [
    (["--prefixes", "{tmp}/nope.duckdb"], "--prefixes '{tmp}/nope.duckdb': no such database"),
    (["--prefixes", "{tmp}/empty.duckdb"], "not a database of 'alphaqos flows identify'"),
    (["--prefixes", "{db}", "--percentile", "0"], "--percentile must be above 0 and at most 100, got 0"),
    (["--prefixes", "{db}", "--endpoint", "W1"], "--endpoint: expected PREFIX=NODE"),
    (["--prefixes", "{db}", "--submit", "http://127.0.0.1:9"], "--submit needs --token"),
    (["--prefixes", "{db}", "--after", "yesterday"], "expected an RFC 3339 time"),
])  # fmt: skip
def test_bad_input_is_one_line_exit_2_and_writes_nothing(db, tmp_path, capsys, argv, message):
    duckdb.connect(str(tmp_path / "empty.duckdb")).close()
    out = tmp_path / "requests.json"
    status, _, err = _plan(capsys, *[a.format(tmp=tmp_path, db=db) for a in argv], "--out", out)
    assert status == 2
    assert err.count("\n") == 1 and message.format(tmp=tmp_path) in err
    assert not out.exists()


def test_topology_maps_a_prefix_with_one_host_to_it(db, tmp_path, capsys):
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text(
        "nodes:\n"
        "  W1: {address: 198.51.100.10}\n"
        "  E1: {address: 203.0.113.21}\n"
        "  E2: {address: 203.0.113.22}\n"  # a second host in 203.0.113.0/24: that prefix stays unresolved
        "  R: {router: true, address: 198.51.100.1}\n"
    )
    status, _, err = _plan(capsys, "--prefixes", db, "--after", AFTER, "--topology", scenario, "--out", tmp_path / "r.json")
    assert status == 0, err
    entries = json.loads((tmp_path / "r.json").read_text())
    for e in entries:
        r, ev = e["request"], e["evidence"]
        for end, prefix in (("src", ev["src_prefix"]), ("dst", ev["dst_prefix"])):
            assert r[end] == ("W1" if prefix == "198.51.100.0/24" else prefix)
        if "203.0.113.0/24" in (ev["src_prefix"], ev["dst_prefix"]):
            assert "203.0.113.0/24" in ev["unresolved"]
    # --endpoint wins over the topology.
    status, _, _ = _plan(capsys, "--prefixes", db, "--after", AFTER, "--topology", scenario, "--endpoint", "203.0.113.0/24=E2",
                         "--out", tmp_path / "r.json")  # fmt: skip
    assert status == 0
    assert {e["request"]["src"] for e in json.loads((tmp_path / "r.json").read_text())} <= {"W1", "E2"}
