"""Host shaping applied over netlink: ``alphaqos shape DEV``.

Why
    Zurawski, "Using Linux Traffic Control on Virtual Circuits" (Internet2,
    2013), Sections 4.3-5: TCP over a reserved, policed circuit whose
    switches have small (128 KB) buffers retransmits and stalls when the
    host sends at the circuit's rate (23 Mbit/s unshaped on a 1 Gbit/s
    circuit, 251 Mbit/s with HTB at 1 Gbit/s); with an HTB class on the
    sender at 900 Mbit/s it held about 909 Mbit/s with one retransmission.
    The document's advice is 90-92% of the reservation. :mod:`.dtn`
    renders the same tree as a script; this module applies it to a live
    device with pyroute2 (rtnetlink), reads it back, changes its rate in
    place and removes it.

The tree (the document's Section 4.3, made explicit)
    ``1:`` HTB root, ``default 20``; ``1:10`` the shaped class (``rate`` =
    ``ceil`` = the shaped rate, ``burst`` = ``cburst``), its leaf ``10:`` a
    pfifo of :data:`~.tc.LEAF_DELAY_S` at the shaped rate; ``1:20`` the
    default class for the rest at the device's speed (or
    :data:`UNKNOWN_SPEED_BPS` when the device does not report one); a u32
    filter at ``prio 16`` sending to ``1:10`` what ``--match`` names
    (``match ip src|dst PREFIX`` or ``match ip dsfield``), or every packet
    without a match (``match u32 0 0``, protocol all). HTB cannot change
    its ``default`` in place (it has no qdisc change operation), so the
    tree is the same with and without a match and a new match changes only
    the filter.

Rates
    Rates go to the kernel in bytes per second; at 2^32 B/s (34.4 Gbit/s)
    and above in ``TCA_HTB_RATE64`` / ``TCA_HTB_CEIL64`` (pyroute2 sets
    them), so a rate reads back exactly at any size. The burst goes to the
    kernel as a time at the rate (``buffer``, in psched ticks of 1/15.625
    µs after tc's own whole-microsecond rounding, iproute2
    ``tc_calc_xmittime``); :func:`read_state` gives the bytes it amounts to.

From a reservation
    With ``--policer-burst`` (or ``--policy FILE``: the term's policer),
    the host must never exceed the router's token bucket (rate ``R``,
    bucket ``P`` bytes). HTB's class sends while its tokens are not
    negative, so its output conforms to ``(rate, burst + one frame)``; a
    stream conforming to ``(r, b)`` with ``r <= R`` and ``b <= P``
    conforms to ``(R, P)`` (the token-bucket arrival curve, Le Boudec &
    Thiran, *Network Calculus*, Section 1.2). So ``burst = cburst = P -``
    :data:`~.tc.MTU_FRAME` (at most the default burst), and a bucket of
    less than two frames is refused: no shaper can promise it. HTB counts
    the Ethernet header and the policer IP bytes only, which errs on the
    safe side.

Changing and removing
    A call on a device whose root is already this tree changes the shaped
    class (``RTM_NEWTCLASS`` without ``NLM_F_EXCL``, tc's ``class change``):
    the queue, its packets and its counters stay. Another root is replaced,
    after its kind (and a fifo's limit) is recorded in the state directory
    (:data:`STATE_DIR`, ``$ALPHAQOS_SHAPE_STATE`` to move it); ``--remove``
    deletes the tree, which returns the device to the kernel's default
    qdisc, and re-creates the recorded root if it was one of
    :data:`RESTORABLE` and the default is not the same kind.

GSO
    ``gso_max_segs 1`` is set on the device with the tree (``--gso-max-segs``;
    ``keep`` leaves it), and the previous value is recorded and put back by
    ``--remove``. The zurawski-tc reproduction (:mod:`alphaqos.reproduce.zurawski`,
    "The sender's segmentation offload") found HTB useless without it: Linux
    TCP hands the qdisc GSO packets of about 1 ms of its pacing rate, HTB
    charges each whole and the device sends its frames back to back at the
    line rate, overrunning the policer's bucket; in its emulated runs HTB
    at 90 % held 67-86 % of the reservation with single frames and 12-15 %
    without (its sensitivity row ``emu/cubic/htb90-gso``), no better than
    no shaping.

Quantum
    Both classes get an explicit ``quantum`` (:func:`.tc.quantum_bytes`):
    tc's rate / r2q would exceed 200 000 B above 16 Mbit/s, which the
    kernel warns about.

txqueuelen
    The document's Section 4.2: "Establishing the txqueuelen is very
    important": a VLAN device has ``txqueuelen 0``, and a fifo the kernel
    sizes from it holds a single packet (net/sched/sch_fifo.c). The shaped
    class's leaf has its own limit, so it is not affected, but the default
    class's is; the length is reported with every apply and show, with a
    warning below :data:`MIN_TXQUEUELEN`.

Errors (one line, exit status 2, nothing changed): an unknown device or
namespace, no permission (CAP_NET_ADMIN), a rate above the device's speed,
a share outside (0, 100%], a policer bucket too small, a bad match.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import ipaddress
import json
import math
import os
import socket
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from .tc import LEAF_DELAY_S, MTU_FRAME, bits, burst_bytes, quantum_bytes

__all__ = [
    "Match",
    "ShapeError",
    "ShapePlan",
    "apply",
    "check_device",
    "from_policy",
    "netns",
    "parse_match",
    "plan_shape",
    "read_state",
    "remove",
    "state_text",
    "tc_commands",
]

ROOT = 0x10000  # 1:
SHAPED = 0x10010  # 1:10
OTHER = 0x10020  # 1:20
LEAF = 0x100000  # 10:
FILTER_PRIO = 16  # the document's prio
ETH_P_IP = 0x0800
ETH_P_ALL = 0x0003
#: The default class's rate when the device reports no speed (bit/s).
UNKNOWN_SPEED_BPS = 100 * 10**9
#: Below this transmit queue length the default class's fifo is too short.
MIN_TXQUEUELEN = 1000
#: Root qdiscs re-created by ``--remove`` (kind and, for fifos, limit).
RESTORABLE = ("pfifo", "bfifo", "pfifo_fast", "fq_codel", "noqueue")
STATE_DIR = Path("/run/alphaqos/shape")
#: psched ticks per microsecond (/proc/net/psched: 1000 / 64).
TICKS_PER_US = 1000 / 64
#: The sender's GSO limit the zurawski-tc study needs (see "GSO" above).
GSO_MAX_SEGS = 1


class ShapeError(Exception):
    """Bad input or a refusal by the kernel; nothing was changed."""


@dataclass(frozen=True)
class Match:
    """What the shaped class takes: ``src``/``dst`` an IPv4 prefix, or ``dscp`` a code point."""

    field: str
    value: str

    def keys(self) -> list[str]:
        """pyroute2 u32 keys (``value/mask+offset`` in the IPv4 header)."""
        if self.field == "dscp":
            return [f"0x{int(self.value) << 18:08x}/0x00fc0000+0"]
        net = ipaddress.IPv4Network(self.value)
        offset = 12 if self.field == "src" else 16
        return [f"0x{int(net.network_address):08x}/0x{int(net.netmask):08x}+{offset}"]

    def tc(self) -> str:
        if self.field == "dscp":
            return f"match ip dsfield 0x{int(self.value) << 2:02x} 0xfc"
        return f"match ip {self.field} {self.value}"


def parse_match(text: str) -> Match:
    """``src=10.10.200.20/32``, ``dst=PREFIX`` or ``dscp=46``."""
    key, sep, value = (p.strip() for p in text.partition("="))
    if not sep or key not in ("src", "dst", "dscp"):
        raise ShapeError(f"--match: expected src=PREFIX, dst=PREFIX or dscp=N, got {text!r}")
    if key == "dscp":
        if not value.isdigit() or int(value) > 63:
            raise ShapeError(f"--match: dscp must be a code point 0..63, got {value!r}")
        return Match(key, str(int(value)))
    try:
        net = ipaddress.IPv4Network(value, strict=False)
    except ValueError:
        raise ShapeError(f"--match: {key}: not an IPv4 prefix: {value!r}") from None
    return Match(key, str(net))


@dataclass(frozen=True)
class ShapePlan:
    device: str
    netns: str | None
    #: The reservation (bit/s) and the share of it the class is shaped to.
    circuit_bps: int
    share_percent: float
    rate_bps: int
    burst_bytes: int
    match: Match | None
    #: The router's policer bucket the burst was derived from (bytes), if any.
    policer_burst_bytes: int | None = None
    #: ``gso_max_segs`` to set on the device (None: leave it as it is).
    gso_max_segs: int | None = GSO_MAX_SEGS

    def describe(self) -> str:
        out = f"{bits(self.rate_bps)} ({self.share_percent:g}% of {bits(self.circuit_bps)}), burst {self.burst_bytes} B"
        if self.policer_burst_bytes is not None:
            out += f" (within the policer's {self.policer_burst_bytes} B bucket)"
        out += f", {self.match.field}={self.match.value}" if self.match else ", all traffic"
        return out + (f", gso_max_segs {self.gso_max_segs}" if self.gso_max_segs is not None else "")


def plan_shape(
    device: str, circuit_bps: int, share_percent: float, *, match: Match | None = None,
    policer_burst: int | None = None, netns_name: str | None = None, gso_max_segs: int | None = GSO_MAX_SEGS,
) -> ShapePlan:  # fmt: skip
    """The class to apply: ``share_percent`` of ``circuit_bps``, with the
    burst of :func:`~.tc.burst_bytes` or, under a policer of bucket
    ``policer_burst`` bytes, one frame less than the bucket."""
    if not 0 < share_percent <= 100:
        raise ShapeError(f"--share must be above 0% and at most 100%, got {share_percent:g}%")
    if circuit_bps <= 0:
        raise ShapeError(f"--rate must be positive, got {circuit_bps} bit/s")
    if gso_max_segs is not None and not 1 <= gso_max_segs <= 65535:
        raise ShapeError(f"--gso-max-segs must be 1..65535 (or 'keep'), got {gso_max_segs}")
    rate = max(8, round(circuit_bps * share_percent / 100))
    burst = burst_bytes(rate)
    if policer_burst is not None:
        if policer_burst < 2 * MTU_FRAME:
            raise ShapeError(
                f"the policer's bucket of {policer_burst} B is under two {MTU_FRAME}-byte frames: HTB sends one frame "
                "beyond its burst, so no host shaping can keep within it"
            )
        burst = min(burst, policer_burst - MTU_FRAME)
    return ShapePlan(device, netns_name, circuit_bps, share_percent, rate, burst, match, policer_burst, gso_max_segs)


def tc_commands(plan: ShapePlan, speed_bps: int | None = None) -> list[str]:
    """The tc commands equivalent to :func:`apply` on a device without the
    tree, whose speed is ``speed_bps`` (None: unknown)."""
    ns = f"ip netns exec {plan.netns} " if plan.netns else ""
    dev = plan.device
    leaf_limit = _leaf_limit(plan.rate_bps)
    out = [
        f"{ns}tc qdisc replace dev {dev} root handle 1: htb default 20",
        f"{ns}tc class add dev {dev} parent 1: classid 1:10 htb rate {bits(plan.rate_bps)} ceil {bits(plan.rate_bps)} "
        f"burst {plan.burst_bytes} cburst {plan.burst_bytes} quantum {quantum_bytes(plan.rate_bps)}",
        f"{ns}tc qdisc add dev {dev} parent 1:10 handle 10: pfifo limit {leaf_limit}",
    ]
    speed = speed_bps or UNKNOWN_SPEED_BPS
    out.append(f"{ns}tc class add dev {dev} parent 1: classid 1:20 htb rate {bits(speed)} ceil {bits(speed)} "
               f"burst {burst_bytes(speed)} cburst {burst_bytes(speed)} quantum {quantum_bytes(speed)}")
    match = f"protocol ip prio {FILTER_PRIO} u32 {plan.match.tc()}" if plan.match else f"protocol all prio {FILTER_PRIO} u32 match u32 0 0"
    out.append(f"{ns}tc filter add dev {dev} parent 1: {match} flowid 1:10")
    if plan.gso_max_segs is not None:
        out.append(f"{ns}ip link set dev {dev} gso_max_segs {plan.gso_max_segs}")
    return out


def _leaf_limit(rate_bps: int) -> int:
    """The shaped class's pfifo: LEAF_DELAY_S at its rate, in frames (at least 2)."""
    return max(2, math.ceil(rate_bps * LEAF_DELAY_S / 8 / MTU_FRAME))


# --- namespaces ---------------------------------------------------------------

_CLONE_NEWNET = 0x40000000


@contextlib.contextmanager
def netns(name: str | None) -> Iterator[None]:
    """Run the body in the network namespace ``name`` (``/run/netns/NAME``,
    as ``ip netns`` makes them); sockets opened there stay in it."""
    if name is None:
        yield
        return
    if "/" in name or name in (".", ".."):
        raise ShapeError(f"--netns: not a namespace name: {name!r}")
    libc = ctypes.CDLL(None, use_errno=True)
    try:
        target = os.open(f"/run/netns/{name}", os.O_RDONLY)
    except FileNotFoundError:
        raise ShapeError(f"--netns: no network namespace {name!r} (ip netns list)") from None
    except PermissionError:
        raise ShapeError(f"--netns {name}: permission denied (entering a namespace needs root)") from None
    home = os.open("/proc/self/ns/net", os.O_RDONLY)
    try:
        if libc.setns(target, _CLONE_NEWNET) != 0:
            err = ctypes.get_errno()
            why = "permission denied" if err in (1, 13) else os.strerror(err)
            raise ShapeError(f"--netns {name}: cannot enter the namespace: {why} (it needs root)")
        try:
            yield
        finally:
            libc.setns(home, _CLONE_NEWNET)
    finally:
        os.close(target)
        os.close(home)


# --- the device ---------------------------------------------------------------


def _ipr():
    from pyroute2 import IPRoute

    return IPRoute()


def _index(ipr, device: str) -> int:
    found = ipr.link_lookup(ifname=device)
    if not found:
        raise ShapeError(f"no network device {device!r}")
    return found[0]


def ethtool(device: str, buf: bytearray) -> None:
    """The ethtool ioctl (SIOCETHTOOL) on ``device`` in the current
    namespace with the command structure ``buf`` (read back into it);
    OSError if the device refuses."""
    addr = ctypes.addressof((ctypes.c_char * len(buf)).from_buffer(buf))
    ifreq = bytearray(40)  # struct ifreq: the name, then ifr_data in the union
    struct.pack_into("16sP", ifreq, 0, device.encode()[:15], addr)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        fcntl.ioctl(s.fileno(), 0x8946, ifreq)


def device_speed_bps(device: str) -> int | None:
    """The link speed ethtool reports (ETHTOOL_GSET), or None when the
    device does not say (down, virtual without a speed, unknown)."""
    buf = bytearray(struct.pack("I", 0x1) + bytes(40))  # ETHTOOL_GSET, struct ethtool_cmd (44 bytes)
    try:
        ethtool(device, buf)
    except OSError:
        return None
    speed, = struct.unpack_from("H", buf, 12)
    speed_hi, = struct.unpack_from("H", buf, 28)
    mbps = speed | speed_hi << 16
    if mbps in (0, 0xFFFF, 0xFFFFFFFF):
        return None
    return mbps * 10**6


def _link(ipr, index: int) -> tuple[int, bool]:
    """(txqueuelen, up) of the device."""
    link = ipr.get_links(index)[0]
    return int(link.get_attr("IFLA_TXQLEN") or 0), bool(link["flags"] & 1)


def _gso_max_segs(ipr, index: int) -> int | None:
    """The device's ``gso_max_segs`` (IFLA_GSO_MAX_SEGS), None if not reported."""
    value = ipr.get_links(index)[0].get_attr("IFLA_GSO_MAX_SEGS")
    return int(value) if value is not None else None


def _set_gso(ipr, index: int, segs: int | None) -> None:
    if segs is not None:
        ipr.link("set", index=index, gso_max_segs=segs)


def _root(ipr, index: int):
    for q in ipr.get_qdiscs(index=index):
        if q["parent"] == 0xFFFFFFFF:
            return q
    return None


def _is_ours(ipr, index: int) -> bool:
    root = _root(ipr, index)
    if root is None or root.get_attr("TCA_KIND") != "htb" or root["handle"] != ROOT:
        return False
    return any(c["handle"] == SHAPED for c in ipr.get_classes(index=index))


def _state_path(plan_netns: str | None, device: str) -> Path:
    base = Path(os.environ.get("ALPHAQOS_SHAPE_STATE", STATE_DIR))
    return base / f"{plan_netns or '-'}@{device}.json"


def _describe_qdisc(q) -> dict:
    kind = q.get_attr("TCA_KIND") if q is not None else "noqueue"
    out = {"kind": kind, "handle": q["handle"] if q is not None else 0}
    if kind in ("pfifo", "bfifo") and q is not None:
        opts = q.get_attr("TCA_OPTIONS")
        with contextlib.suppress(Exception):
            out["limit"] = int(opts["limit"])
    return out


def _netlink_error(exc: Exception, what: str) -> ShapeError:
    code = getattr(exc, "code", None)
    if code in (1, 13):  # EPERM, EACCES
        return ShapeError(f"{what}: permission denied (changing traffic control needs CAP_NET_ADMIN: run as root)")
    return ShapeError(f"{what}: the kernel refused: {exc}")


def _check_speed(plan: ShapePlan) -> int | None:
    speed = device_speed_bps(plan.device)
    if speed is not None and plan.rate_bps > speed:
        raise ShapeError(f"{plan.device}: the shaped rate {bits(plan.rate_bps)} is above the device's speed {bits(speed)}")
    return speed


def check_device(plan: ShapePlan) -> int | None:
    """Check the device exists and the rate fits its speed (for --dry-run); its speed."""
    with netns(plan.netns), _ipr() as ipr:
        _index(ipr, plan.device)
        return _check_speed(plan)


@dataclass
class Applied:
    changed_in_place: bool
    txqueuelen: int
    speed_bps: int | None
    previous: dict
    notes: list[str]


def apply(plan: ShapePlan) -> Applied:
    """Apply ``plan``: create the tree, or change the shaped class in place."""
    from pyroute2.netlink.exceptions import NetlinkError

    with netns(plan.netns):
        try:
            ipr = _ipr()
        except OSError as exc:
            raise ShapeError(f"cannot open rtnetlink: {exc}") from None
        with ipr:
            index = _index(ipr, plan.device)
            speed = _check_speed(plan)
            txqlen, _up = _link(ipr, index)
            notes = _txqueuelen_notes(plan.device, txqlen, True)
            cls = _class_args(plan.rate_bps, plan.burst_bytes)
            state = _state_path(plan.netns, plan.device)
            gso_before = _gso_max_segs(ipr, index)
            try:
                if _is_ours(ipr, index):
                    previous = json.loads(state.read_text()) if state.is_file() else {"kind": "unknown"}
                    ipr.tc("change-class", "htb", index, SHAPED, parent=ROOT, **cls)
                    _set_filter(ipr, index, plan.match, replace=True)
                    if plan.gso_max_segs is not None and gso_before != plan.gso_max_segs:
                        previous.setdefault("gso_max_segs", gso_before)
                        _set_gso(ipr, index, plan.gso_max_segs)
                        _write_state(state, previous)
                    return Applied(True, txqlen, speed, previous, notes)
                previous = _describe_qdisc(_root(ipr, index))
                if plan.gso_max_segs is not None:
                    previous["gso_max_segs"] = gso_before
                try:
                    ipr.tc("replace", "htb", index, ROOT, default=0x20)
                    ipr.tc("add-class", "htb", index, SHAPED, parent=ROOT, **cls)
                    ipr.tc("add", "pfifo", index, LEAF, parent=SHAPED, limit=_leaf_limit(plan.rate_bps))
                    other = speed or UNKNOWN_SPEED_BPS
                    ipr.tc("add-class", "htb", index, OTHER, parent=ROOT, **_class_args(other, burst_bytes(other)))
                    _set_filter(ipr, index, plan.match, replace=False)
                    _set_gso(ipr, index, plan.gso_max_segs)
                except NetlinkError:
                    _restore(ipr, index, previous)  # nothing half-built stays
                    raise
            except NetlinkError as exc:
                raise _netlink_error(exc, plan.device) from None
            _write_state(state, previous)
            return Applied(False, txqlen, speed, previous, notes)


def _class_args(rate_bps: int, burst: int) -> dict:
    rate = f"{rate_bps}bit"
    return {"rate": rate, "ceil": rate, "burst": burst, "cburst": burst, "prio": 0, "quantum": quantum_bytes(rate_bps)}


def _set_filter(ipr, index: int, match: Match | None, *, replace: bool) -> None:
    """The u32 filter sending ``match`` (everything, without one) to the
    shaped class; on a change, replaced only if it differs."""
    keys = match.keys() if match is not None else ["0x0/0x0+0"]
    protocol = ETH_P_IP if match is not None else ETH_P_ALL
    if replace:
        old = [f for f in _u32_filters(ipr, index) if f["prio"] == FILTER_PRIO]
        if [f["keys"] for f in old] == [[_key_text(k) for k in keys]] and old[0]["protocol"] == protocol:
            return
        for proto in {f["protocol"] for f in old}:
            ipr.tc("del-filter", "u32", index, parent=ROOT, prio=FILTER_PRIO, protocol=proto, target=SHAPED, keys=[])
    ipr.tc("add-filter", "u32", index, parent=ROOT, prio=FILTER_PRIO, protocol=protocol, target=SHAPED, keys=keys)


def _key_text(key: str) -> str:
    """A pyroute2 key as the kernel hands it back (whole bytes, first masked byte's offset)."""
    value, rest = key.split("/")
    mask, offset = rest.split("+")
    v, m, off = int(value, 16), int(mask, 16), int(offset)
    while m and not m & 0xFF000000:
        v, m, off = v << 8 & 0xFFFFFFFF, m << 8 & 0xFFFFFFFF, off + 1
    return f"{v:08x}/{m:08x}+{off}"


def _u32_filters(ipr, index: int) -> list[dict]:
    """The u32 filters under the root: prio, protocol, keys as
    ``value/mask+offset`` and the class they send to. The selector is
    decoded from its bytes (struct tc_u32_sel, include/uapi/linux/pkt_cls.h:
    a 16-byte header, then per key the mask and value in network order and
    the offsets in host order)."""
    out = []
    for f in ipr.get_filters(index=index, parent=ROOT):
        opts = f.get_attr("TCA_OPTIONS")
        sel = opts.get_attr("TCA_U32_SEL") if opts else None
        classid = opts.get_attr("TCA_U32_CLASSID") if opts else None
        if sel is None or classid is None:
            continue
        raw = bytes(sel.data[sel.offset + 4 : sel.offset + sel.length])
        keys = []
        for i in range(raw[2]):
            mask, value = struct.unpack_from(">II", raw, 16 + 16 * i)
            off, = struct.unpack_from("=i", raw, 24 + 16 * i)
            keys.append(f"{value:08x}/{mask:08x}+{off}")
        out.append({"prio": f["info"] >> 16, "protocol": socket.ntohs(f["info"] & 0xFFFF), "keys": keys,
                    "flowid": f"{classid >> 16:x}:{classid & 0xFFFF:x}"})  # fmt: skip
    return out


def _txqueuelen_notes(device: str, txqlen: int, has_default_class: bool) -> list[str]:
    if txqlen >= MIN_TXQUEUELEN:
        return []
    where = "the default class's queue (1:20)" if has_default_class else "a default fifo on this device"
    return [
        f"{device} has txqueuelen {txqlen}: {where} would hold {max(txqlen, 1)} packet(s) "
        f"(Zurawski 2013, Section 4.2: set it, e.g. ip link set {device} txqueuelen 10000); "
        "the shaped class's own queue is sized by alphaqos and not affected"
    ]


def _write_state(path: Path, previous: dict) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text(json.dumps(previous) + "\n")
        tmp.replace(path)
    except OSError:
        pass  # the tree is applied; --remove then restores the kernel default


def _restore(ipr, index: int, previous: dict) -> str:
    """Delete the tree and put the recorded root (and ``gso_max_segs``)
    back; say what the device has now."""
    with contextlib.suppress(Exception):
        ipr.tc("del", "htb", index, ROOT)
    if previous.get("gso_max_segs") is not None:
        with contextlib.suppress(Exception):
            _set_gso(ipr, index, int(previous["gso_max_segs"]))
    now = _describe_qdisc(_root(ipr, index))
    kind = previous.get("kind")
    if kind in RESTORABLE and kind != now["kind"] and kind != "noqueue":
        args = {"limit": previous["limit"]} if "limit" in previous and kind == "pfifo" else {}
        handle = previous.get("handle") or 0
        with contextlib.suppress(Exception):
            ipr.tc("replace", "pfifo" if kind == "bfifo" else kind, index, handle, **args)
            now = _describe_qdisc(_root(ipr, index))
    return now["kind"]


def remove(device: str, netns_name: str | None) -> tuple[bool, str, dict]:
    """Remove the tree (if ours); returns (removed, the root now, the recorded previous root)."""
    from pyroute2.netlink.exceptions import NetlinkError

    with netns(netns_name):
        with _ipr() as ipr:
            index = _index(ipr, device)
            state = _state_path(netns_name, device)
            previous = json.loads(state.read_text()) if state.is_file() else {"kind": "unknown"}
            if not _is_ours(ipr, index):
                return False, _describe_qdisc(_root(ipr, index))["kind"], previous
            try:
                now = _restore(ipr, index, previous)
            except NetlinkError as exc:
                raise _netlink_error(exc, device) from None
            state.unlink(missing_ok=True)
            return True, now, previous


def _parms(c) -> tuple[int, int, int]:
    """(rate bit/s, ceil bit/s, burst bytes) of an HTB class message."""
    opts = c.get_attr("TCA_OPTIONS")
    p = opts.get_attr("TCA_HTB_PARMS")
    rate = (opts.get_attr("TCA_HTB_RATE64") or p["rate"]) * 8
    ceil = (opts.get_attr("TCA_HTB_CEIL64") or p["ceil"]) * 8
    burst = round(p["buffer"] / TICKS_PER_US * 1e-6 * rate / 8)
    return rate, ceil, burst


def read_state(device: str, netns_name: str | None) -> dict:
    """What the device has: its root, the tree's classes with their rates,
    bursts and counters, the filter, and the transmit queue length."""
    with netns(netns_name):
        with _ipr() as ipr:
            index = _index(ipr, device)
            txqlen, up = _link(ipr, index)
            root = _describe_qdisc(_root(ipr, index))
            out = {"device": device, "netns": netns_name, "txqueuelen": txqlen, "up": up,
                   "gso_max_segs": _gso_max_segs(ipr, index),
                   "speed_bps": device_speed_bps(device), "root": root, "ours": _is_ours(ipr, index),
                   "classes": [], "filters": []}  # fmt: skip
            if not out["ours"]:
                return out
            qdiscs = {q["parent"]: q for q in ipr.get_qdiscs(index=index)}
            for c in ipr.get_classes(index=index):
                rate, ceil, burst = _parms(c)
                basic = c.get_attr("TCA_STATS2").get_attr("TCA_STATS_BASIC")
                queue = c.get_attr("TCA_STATS2").get_attr("TCA_STATS_QUEUE")
                leaf = qdiscs.get(c["handle"])
                out["classes"].append({
                    "classid": f"{c['handle'] >> 16:x}:{c['handle'] & 0xFFFF:x}",
                    "rate_bps": rate, "ceil_bps": ceil, "burst_bytes": burst,
                    "bytes": basic["bytes"], "packets": basic["packets"], "drops": queue["drops"],
                    "leaf": _describe_qdisc(leaf) if leaf is not None else None,
                })  # fmt: skip
            out["filters"] = _u32_filters(ipr, index)
            return out


def from_policy(path: Path, term_name: str | None) -> tuple[int, int, Match | None]:
    """(rate, bucket, match) of the policy's policed term: a single-rate
    policer's rate and burst, or the committed rate and burst (cir, cbs) of
    an srTCM or trTCM meter (what keeps every packet green)."""
    from ..errors import ScenarioError
    from .model import load_policy

    try:
        policy = load_policy(path)
    except ScenarioError as exc:
        raise ShapeError("; ".join(exc.lines())) from None
    policed = [t for t in policy.filter if t.then.policer is not None]
    if term_name is not None:
        policed = [t for t in policed if t.name == term_name]
        if not policed:
            raise ShapeError(f"--term: {path} has no policed term {term_name!r}")
    if len(policed) != 1:
        names = ", ".join(t.name for t in policed) or "none"
        raise ShapeError(f"--policy {path}: expected one policed term, found {names} (name one with --term)")
    term = policed[0]
    p = term.then.policer
    meter = p.srtcm or p.trtcm
    rate, burst = (p.rate, p.burst) if meter is None else (meter.cir, meter.cbs)
    m = term.from_
    match = None
    if m.source:
        match = Match("src", str(m.source))
    elif m.destination:
        match = Match("dst", str(m.destination))
    return int(rate), int(burst), match


def state_text(state: dict) -> str:
    """:func:`read_state`'s answer for people (``alphaqos shape DEV --show``)."""
    head = (f"{state['device']}{' in ' + state['netns'] if state['netns'] else ''}: root {state['root']['kind']}, "
            f"txqueuelen {state['txqueuelen']}, gso_max_segs {state['gso_max_segs']}, speed {bits(state['speed_bps']) if state['speed_bps'] else 'unknown'}")  # fmt: skip
    if not state["ours"]:
        return head + "; no alphaqos shaping"
    lines = [head]
    for c in state["classes"]:
        lines.append(f"  class {c['classid']}: rate {bits(c['rate_bps'])} ceil {bits(c['ceil_bps'])} burst {c['burst_bytes']} B; "
                     f"sent {c['bytes']} B {c['packets']} pkts, dropped {c['drops']}")  # fmt: skip
    for f in state["filters"]:
        lines.append(f"  filter prio {f['prio']} u32 {' '.join(f['keys'])} -> {f['flowid']}")
    if state["txqueuelen"] < MIN_TXQUEUELEN:
        lines.append("  " + _txqueuelen_notes(state["device"], state["txqueuelen"], bool(state["filters"]))[0])
    return "\n".join(lines)
