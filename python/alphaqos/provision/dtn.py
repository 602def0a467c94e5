"""Host shaping for a data transfer node (DTN): a shell script, ``sh dtn.sh
[DEVICE]``, that holds what the DTN sends on DEVICE to a share of its
circuit's rate.

Why
    Zurawski, "Using Linux Traffic Control on Virtual Circuits" (Internet2,
    2013), Sections 4.3-5: a TCP transfer over a reserved circuit that
    sends at the circuit's rate meets the circuit's policing and small
    switch buffers, and retransmits and stalls (about 250 Mbit/s on a
    1 Gbit/s circuit); shaped on the sending host with an HTB class to
    90% of the reservation, it held about 900 Mbit/s without
    retransmissions. The document advises 90-92% of the reservation; the
    default share here is 90% (``--host-share``).

What it renders
    ``--host-shaper htb`` (default): an HTB root whose only class (the
    default one, so every packet leaving DEVICE takes it) has ``rate`` and
    ``ceil`` the share of ``--circuit-rate`` (default ``--rate``), with
    ``burst``/``cburst`` and the leaf queue of :mod:`.tc` (``--tc-leaf``).
    Give the circuit's own interface (its VLAN, as the document does), so
    that only the circuit's traffic is shaped.

    ``--host-shaper fq``: the ``fq`` qdisc with ``maxrate`` the share:
    fq paces each flow to at most ``maxrate`` (tc-fq(8)), which is smoother
    than HTB's bursts but is a per-flow cap: a transfer of N parallel
    streams is held to N times the rate, so use it for one stream per
    circuit, or HTB.

GSO
    The script also sets ``gso_max_segs 1`` on DEVICE (``ip link set DEV
    gso_max_segs 1``), as the zurawski-tc reproduction found it must
    (:mod:`alphaqos.reproduce.zurawski`, "The sender's segmentation
    offload"): Linux TCP hands the qdisc GSO packets of about 1 ms of its
    pacing rate whatever the device offers, HTB charges each whole and the
    device sends its frames back to back at the line rate, a burst that
    overruns the circuit policer's bucket. In the study's emulated runs HTB
    at 90 % held 67-86 % of the reservation with it, and 12-15 % without
    it (its sensitivity row ``emu/cubic/htb90-gso``), no better than no
    shaping at all.

Quantum
    The HTB class is given its ``quantum`` (:func:`.tc.quantum_bytes`:
    rate / 10 in bytes, within one frame and 200 000 B): tc's default of
    rate / r2q is above 200 000 B at 16 Mbit/s and more, which the kernel
    warns about and then uses as given.

All or nothing: see :func:`.tc.script`.

Syntax from tc-htb(8), tc-fq(8) and ip-link(8) (iproute2).
"""

from __future__ import annotations

from .model import Plan
from .tc import MTU_FRAME, bits, htb_class, leaf, quantum_bytes, script

__all__ = ["FILENAME", "render", "shaped_rate"]

FILENAME = "dtn.sh"
TARGET = "dtn"
#: The sender's segmentation offload limit (``ip link set DEV gso_max_segs
#: 1``): see "GSO" in the module doc.
GSO_MAX_SEGS = 1


def shaped_rate(plan: Plan) -> int:
    """The rate the DTN is shaped to, bit/s: the share of the circuit."""
    circuit = plan.circuit_rate_bps or plan.link_rate_bps
    return max(8_000, round(circuit * plan.host_share_percent / 100))


def render(plan: Plan, previous: str | None = None) -> str:
    circuit = plan.circuit_rate_bps or plan.link_rate_bps
    rate = shaped_rate(plan)
    comments = (
        f"# Shapes what the host sends on DEVICE to {plan.host_share_percent:g}% of the circuit's {bits(circuit)}: {bits(rate)}",
        "# (Zurawski, \"Using Linux Traffic Control on Virtual Circuits\", Internet2 2013: 90-92% of the reservation),",
        f"# with gso_max_segs {GSO_MAX_SEGS} on DEVICE, as the zurawski-tc study found it needs (docs/provision.md).",
    )  # fmt: skip
    if plan.host_shaper == "fq":
        body = ["# fq paces each flow to at most maxrate: N parallel streams may send N times as much.",
                f"qdisc add dev $1 root handle 1: fq maxrate {bits(rate)} quantum {2 * MTU_FRAME}"]  # fmt: skip
    else:
        body = ["qdisc add dev $1 root handle 1: htb default 10",
                htb_class("1:", "1:10", rate, rate, f" quantum {quantum_bytes(rate)}")]  # fmt: skip
        qdisc = leaf(plan.tc_leaf if plan.tc_leaf != "policy" else "bfifo", rate)
        body.append(f"qdisc add dev $1 parent 1:10 handle 10: {qdisc}")
    return script(plan, "host shaping for a data transfer node (DTN)", FILENAME, "the circuit's interface", body, comments,
                  gso_max_segs=GSO_MAX_SEGS)
