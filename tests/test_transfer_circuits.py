"""``alphaqos transfer send --circuit``: the deadline loop against a real
``alphaqos circuits serve`` (SQLite in a temp dir). Two transfers whose
deadlines together exceed the circuit's capacity: the service refuses the
second before it sends anything, with its earliest finish; the first meets
its deadline, its reservation following the need down and released at the
end."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import httpx
from _circuits import Server
from _transfer import make_file, receiver, send

MiB = 1 << 20
# One path H1 - R1 - H2; R1-H2 is 20 Mbit/s, reservable at 80 % = 16 Mbit/s.
TOPOLOGY = """\
name: transfer-test
duration: 1s
nodes:
  H1: {address: 10.0.1.1}
  H2: {address: 10.0.2.1}
  R1: {router: true}
links:
  - {between: [H1, R1], rate: 1Gbps, delay: 1ms}
  - {between: [R1, H2], rate: 20Mbps, delay: 1ms}
"""


def test_two_transfers_over_capacity(tmp_path, capsys):
    server = Server(tmp_path, f"sqlite:///{tmp_path / 'circuits.db'}")
    server.topology(TOPOLOGY)
    token = server.token("user", "alice")
    server.start()
    first = None
    try:
        with receiver(tmp_path / "in") as rx:
            a = make_file(tmp_path / "a.bin", 5 * MiB, seed=5)
            b = make_file(tmp_path / "b.bin", 8 * MiB, seed=6)
            circuit = ["--circuit", server.url, "--token", token, "--src", "H1", "--dst", "H2"]
            # A token the service does not know (this also loads the client in this process).
            status, _, err = send(capsys, str(b), rx.addr, "--deadline", "60s", "--circuit", server.url, "--token", "aqc_nope",
                                  "--src", "H1", "--dst", "H2")  # fmt: skip
            assert status == 2 and "refused the token" in err, err
            # 5 MiB by 9 s: 8 x 5 MiB / 9 s x 1.1 = 5.1 Mbit/s, on one paced connection.
            first = subprocess.Popen([sys.executable, "-m", "alphaqos", "transfer", "send", str(a), rx.addr, "--deadline", "9s",
                                      "--streams", "1", "--interval", "250ms", "--cc", "pacing-only", "--block", "1MiB", "--json",
                                      *circuit], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
            headers = {"Authorization": f"Bearer {token}"}
            for _ in range(400):
                rows = httpx.get(server.url + "/api/v1/reservations", headers=headers).json()
                if any(r["state"] in ("reserved", "provisioned") for r in rows):
                    break
                time.sleep(0.05)
            else:
                raise AssertionError(f"the first transfer never reserved: {first.stderr.read() if first.poll() is not None else ''}")
            # 8 MiB by 5 s: 14.8 Mbit/s more, beyond the 16 Mbit/s with the first's 5.1.
            status, _, err = send(capsys, str(b), rx.addr, "--deadline", "5s", *circuit)
            assert status == 2, err
            assert "infeasible" in err and "earliest finish" in err, err
            assert not (rx.dir / "b.bin").exists() and not list(rx.dir.glob(".b.bin*"))
            out, err = first.communicate(timeout=60)
            assert first.returncode == 0, err
            report = json.loads(out.splitlines()[-1])
            assert report["met"], ({k: report[k] for k in ("elapsed_s", "deadline_s", "reservation_steps", "base")}, err, out)
            assert (rx.dir / "a.bin").read_bytes() == a.read_bytes()
            # The reservation followed the need (bytes left / time left).
            assert len(report["reservation_steps"]) >= 2
            rows = httpx.get(server.url + "/api/v1/reservations", headers=headers).json()
            assert [r["state"] for r in rows] == ["terminated"]
            assert len(rows[0]["profile"]) >= 2, "the loop's modifications reached the service"
    finally:
        if first is not None and first.poll() is None:
            first.kill()
            first.wait()
        server.stop()
        os.environ.pop("ALPHAQOS_CIRCUITS_TOKEN", None)
