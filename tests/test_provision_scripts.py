"""The rendered tc scripts change their device all or nothing, for real in
a network namespace with a veth the test makes: a script that uses what
this kernel lacks (the fq_codel qdisc, the police action) stops before it
touches the device, which keeps its root qdisc and its gso_max_segs; one
that fails on the device itself (no unshare to try it first) leaves no
half-built tree. ``dtn.sh`` and ``alphaqos shape`` set ``gso_max_segs 1``
(the zurawski-tc study's host setting) and an explicit HTB quantum; the
provision-time check of the scripts (``sh -n`` and the tc grammar)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
from test_provision import POLICY, _ns, _provision, _qdisc_missing, _veth, _write, netns  # noqa: F401

from alphaqos.cli import main
from alphaqos.provision.check import check_tc
from alphaqos.provision.tc import quantum_bytes


def _gso(ns: str, dev: str) -> int:
    words = _ns(ns, "ip", "-d", "link", "show", "dev", dev).stdout.split()
    return int(words[words.index("gso_max_segs") + 1])


def _device(ns: str, dev: str) -> tuple[str, str, str, int]:
    """Everything the scripts may change: qdiscs, classes, filters, gso_max_segs."""
    return (_ns(ns, "tc", "qdisc", "show", "dev", dev).stdout, _ns(ns, "tc", "class", "show", "dev", dev).stdout,
            _ns(ns, "tc", "filter", "show", "dev", dev).stdout, _gso(ns, dev))  # fmt: skip


def _prepared(ns: str) -> str:
    dev, _ = _veth(ns)
    _ns(ns, "tc", "qdisc", "replace", "dev", dev, "root", "handle", "7:", "pfifo", "limit", "77")
    _ns(ns, "ip", "link", "set", "dev", dev, "gso_max_segs", "40")
    return dev


def _run(ns: str, script, dev: str, env: dict | None = None) -> subprocess.CompletedProcess:
    sh = shutil.which("sh")  # by path: the test may hide tools from the script's PATH
    return subprocess.run([shutil.which("ip"), "netns", "exec", ns, sh, str(script), dev], capture_output=True, text=True, env=env)


@pytest.mark.parametrize(("target", "extra"), [("dtn", ["--circuit-rate", "100mbit"]), ("tc", ["--rate", "1gbit"])])
def test_a_script_using_a_missing_qdisc_leaves_the_device_as_it_was(tmp_path, netns, target, extra):
    dev = _prepared(netns)
    reason = _qdisc_missing(netns, "lo", "fq_codel")
    if reason is None:
        pytest.skip("this kernel has fq_codel: the script would succeed")
    _ns(netns, "tc", "qdisc", "replace", "dev", dev, "root", "handle", "7:", "pfifo", "limit", "77")
    status, out = _provision(tmp_path, "--target", target, *extra, "--tc-leaf", "fq_codel")
    assert status == 0
    before = _device(netns, dev)
    assert "qdisc pfifo 7: root" in before[0] and before[3] == 40
    done = _run(netns, out / f"{target}.sh", dev)
    assert done.returncode == 1
    assert f"{target}.sh: this kernel refuses the commands" in done.stderr and f"nothing changed on {dev}" in done.stderr
    assert "qdisc kind is unknown" in done.stderr
    assert _device(netns, dev) == before


def test_a_script_using_a_missing_action_leaves_the_device_as_it_was(tmp_path, netns):
    """The policy's policers are tc police actions; this kernel may lack them."""
    dev = _prepared(netns)
    probe = subprocess.run(["ip", "netns", "exec", netns, "tc", "actions", "add", "action", "police", "rate", "1mbit",
                            "burst", "10k", "drop"], capture_output=True, text=True)  # fmt: skip
    if probe.returncode == 0:
        pytest.skip("this kernel has the police action: the script would succeed")
    status, out = _provision(tmp_path, "--target", "tc", "--tc-leaf", "bfifo", "--policy", str(_write(tmp_path / "p.yaml", POLICY)),
                             "--allow-partial")  # fmt: skip
    assert status == 0
    before = _device(netns, dev)
    done = _run(netns, out / "tc.sh", dev)
    assert done.returncode == 1 and "nothing changed" in done.stderr, done.stderr
    assert _device(netns, dev) == before


def test_a_failure_on_the_device_itself_removes_what_was_built(tmp_path, netns):
    """Without unshare the commands cannot be tried first; when the device
    then refuses one half-way, the tree is removed again (the kernel's
    default root), and gso_max_segs is put back."""
    if _qdisc_missing(netns, "lo", "fq_codel") is None:
        pytest.skip("this kernel has fq_codel: nothing would fail")
    dev = _prepared(netns)
    status, out = _provision(tmp_path, "--target", "dtn", "--circuit-rate", "100mbit", "--tc-leaf", "fq_codel")
    assert status == 0
    bin_dir = tmp_path / "bin"  # the tools the script uses, but no unshare
    bin_dir.mkdir()
    for tool in ("tc", "ip", "sed", "cat"):
        (bin_dir / tool).symlink_to(shutil.which(tool))
    done = _run(netns, out / "dtn.sh", dev, env={**os.environ, "PATH": str(bin_dir)})
    assert done.returncode == 1
    assert "warning: no unshare" in done.stderr and f"applying to {dev} failed; its root qdisc is removed" in done.stderr
    qdiscs, classes, filters, gso = _device(netns, dev)
    assert "htb" not in qdiscs and not classes.strip() and not filters.strip() and gso == 40
    assert "before: qdisc pfifo 7: root" in done.stderr


def test_dtn_script_sets_gso_and_an_explicit_quantum(tmp_path, netns):
    dev = _prepared(netns)
    status, out = _provision(tmp_path, "--target", "dtn", "--circuit-rate", "100mbit", "--tc-leaf", "bfifo")
    assert status == 0
    text = (out / "dtn.sh").read_text()
    assert f"htb rate 90mbit ceil 90mbit burst 12112 cburst 12112 quantum {quantum_bytes(90_000_000)}" in text
    done = _run(netns, out / "dtn.sh", dev)
    assert done.returncode == 0, done.stderr
    assert _gso(netns, dev) == 1
    detail = _ns(netns, "tc", "-d", "class", "show", "dev", dev).stdout
    assert "rate 90Mbit ceil 90Mbit" in detail and "quantum 200000" in detail
    assert "qdisc pfifo 7:" not in _ns(netns, "tc", "qdisc", "show", "dev", dev).stdout


def test_shape_sets_gso_max_segs_and_remove_puts_it_back(tmp_path, netns, capsys, monkeypatch):
    monkeypatch.setenv("ALPHAQOS_SHAPE_STATE", str(tmp_path / "state"))
    dev = _prepared(netns)
    assert main(["shape", dev, "--netns", netns, "--rate", "1gbit", "--dry-run"]) == 0
    dry = capsys.readouterr().out
    assert f"ip link set dev {dev} gso_max_segs 1" in dry and "quantum 200000" in dry
    assert main(["shape", dev, "--netns", netns, "--rate", "1gbit"]) == 0
    assert "gso_max_segs 1" in capsys.readouterr().out
    assert _gso(netns, dev) == 1
    detail = _ns(netns, "tc", "-d", "class", "show", "dev", dev, "classid", "1:10").stdout
    assert "quantum 200000" in detail, detail
    assert main(["shape", dev, "--netns", netns, "--remove"]) == 0
    assert "gso_max_segs 40 again" in capsys.readouterr().out
    assert _gso(netns, dev) == 40
    # 'keep' leaves the device's setting alone.
    assert main(["shape", dev, "--netns", netns, "--rate", "1gbit", "--gso-max-segs", "keep"]) == 0
    assert _gso(netns, dev) == 40
    assert main(["shape", dev, "--netns", netns, "--remove"]) == 0


def test_the_tc_checker_finds_what_tc_would_refuse(tmp_path):
    status, out = _provision(tmp_path, "--target", "tc,dtn", "--rate", "1gbit")
    assert status == 0
    good = (out / "tc.sh").read_text()
    assert check_tc(good) == [] and check_tc((out / "dtn.sh").read_text()) == []
    for old, new, message in [
        ("quantum 80000", "quantum 800000", "16: quantum 800000 is outside 1-200000 bytes"),
        ("flowid 1:11", "flowid 1:19", "flowid 1:19 is not a class defined before"),
        ("ceil 1gbit burst 51476", "ceil 100mbit burst 51476", "16: ceil 100mbit is below rate 400mbit"),
        ("handle 11: fq_codel", "handle 11: sfq", "qdisc kind 'sfq' is not one alphaqos writes"),
        ("rate 400mbit", "rate 400Mbps", "rate '400Mbps' is not a rate in tc's spelling"),
        ("match ip dst 10.0.1.0/24", "match ip dst 10.0.1.7/24", "'10.0.1.7/24' is not an IPv4 prefix"),
        ("link 100:", "link 107:", "link 107: is not a table defined before"),
    ]:
        assert old in good, old
        problems = "\n".join(check_tc(good.replace(old, new)))
        assert message in problems, (message, problems)
    assert "sh -n:" in "\n".join(check_tc(good.replace("batch() {", "batch() {{")))
    # A tc class without a quantum: the kernel warns, the checker refuses.
    assert "needs an explicit quantum" in "\n".join(check_tc(good.replace(" quantum 80000", "")))
