"""The ns-3 side of the ns-3 cross-check (``benches/ns3_crosscheck.py``).

Runs one TCP dumbbell in ns-3 and prints its measurements as one line of
JSON on stdout. It runs in its own virtualenv, the one with the PyPI
package ``ns3`` (cppyy bindings), which ``ns3_crosscheck.py`` creates; it
imports nothing from alphaqos.

Topology (N = ``--flows``)::

    S0 ..SN-1 --(access)-- R1 ==(bottleneck)== R2 --(access)-- D0 ..DN-1

Flow i runs from Si to Di (a BulkSendApplication to a PacketSink) and starts
at ``i * --stagger`` seconds. All links are PointToPoint (a 2-byte PPP
header per frame). No device has a queue disc (ns-3 installs FqCoDel by
default; it is removed), so each device's own drop-tail queue is the only
queue: R1's device queue towards R2 is the bottleneck buffer, limited to
``--buffer`` packets (when it is full the device stops its transmit queue
and the traffic-control layer drops what arrives: drop-tail). Every other
device queue is large enough never to fill. With ``--qdisc fq_codel`` the
bottleneck's queue is instead an FqCoDelQueueDisc (limit ``--buffer``
packets) over a one-packet device queue; the script then also records the
queue disc's sojourn times (SojournTime trace: sum and count) and its
backlog in bytes at every step. ``--access-delays`` gives each flow its own
access delay (both of its access links), hence its own RTT.

The run is advanced in steps of ``--interval``; at every step boundary the
script records, per flow, the bytes the sink has received and the sender's
congestion window and slow-start threshold (from the CongestionWindow and
SlowStartThreshold trace sources). It also counts each flow's entries into
fast recovery and into the loss (timeout) state from the CongState trace.

Usage (normally called by ns3_crosscheck.py)::

    .venv-ns3/bin/python benches/ns3_dumbbell.py --cc newreno --flows 4 --duration 20
"""

from __future__ import annotations

import argparse
import json
import sys
import time

# Congestion controls by the names the cross-check uses. linuxreno is
# ns-3's Reno with Linux's window arithmetic (growth per acked segment); it
# is not one of the cross-check's cases but helps to explain differences.
CONGESTION_CONTROLS = {"newreno": "ns3::TcpNewReno", "cubic": "ns3::TcpCubic", "linuxreno": "ns3::TcpLinuxReno"}
# Loss recovery: classic is RFC 6582/6675 style with cwnd = ssthresh on
# entry (what alphaqos models); prr (RFC 6937) is ns-3's and Linux's default.
RECOVERY = {"classic": "ns3::TcpClassicRecovery", "prr": "ns3::TcpPrrRecovery"}

BASE_PORT = 5000

# Trace sinks in C++ (a Python callback per ACK would be far too slow).
# Each flow's socket is connected once it exists (BulkSendApplication
# creates it when the application starts); the sinks keep the latest values
# and counters per flow, which Python reads at every step.
TRACE_SINKS = r"""
#include "ns3/applications-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/tcp-socket-base.h"
#include "ns3/traffic-control-module.h"
#include <vector>

namespace xcheck
{
struct FlowTrace
{
    uint32_t cwnd = 0;
    uint32_t ssthresh = 0;
    uint32_t recoveries = 0;  // entries into CA_RECOVERY (fast retransmit)
    uint32_t timeouts = 0;    // entries into CA_LOSS (retransmission timeout)
    uint64_t retransmits = 0; // segments sent again
    bool connected = false;
};

std::vector<FlowTrace> flows;
uint64_t bottleneckDrops = 0;

void Cwnd(uint32_t i, uint32_t, uint32_t value) { flows[i].cwnd = value; }
void Ssthresh(uint32_t i, uint32_t, uint32_t value) { flows[i].ssthresh = value; }

void Retransmit(uint32_t i,
                ns3::Ptr<const ns3::Packet>,
                const ns3::TcpHeader&,
                const ns3::Address&,
                const ns3::Address&,
                ns3::Ptr<const ns3::TcpSocketBase>)
{
    flows[i].retransmits++;
}

void State(uint32_t i, ns3::TcpSocketState::TcpCongState_t old, ns3::TcpSocketState::TcpCongState_t now)
{
    if (now == ns3::TcpSocketState::CA_RECOVERY && old != ns3::TcpSocketState::CA_RECOVERY)
        flows[i].recoveries++;
    if (now == ns3::TcpSocketState::CA_LOSS && old != ns3::TcpSocketState::CA_LOSS)
        flows[i].timeouts++;
}

// Connect flow i's traces if its sender's socket exists; true once connected.
bool TryConnect(ns3::Ptr<ns3::Application> app, uint32_t i)
{
    if (flows.size() <= i)
        flows.resize(i + 1);
    if (flows[i].connected)
        return true;
    ns3::Ptr<ns3::Socket> socket = ns3::DynamicCast<ns3::BulkSendApplication>(app)->GetSocket();
    if (!socket)
        return false;
    socket->TraceConnectWithoutContext("CongestionWindow", ns3::MakeBoundCallback(&Cwnd, i));
    socket->TraceConnectWithoutContext("SlowStartThreshold", ns3::MakeBoundCallback(&Ssthresh, i));
    socket->TraceConnectWithoutContext("CongState", ns3::MakeBoundCallback(&State, i));
    socket->TraceConnectWithoutContext("Retransmission", ns3::MakeBoundCallback(&Retransmit, i));
    flows[i].connected = true;
    return true;
}

uint64_t RxBytes(ns3::Ptr<ns3::Application> app)
{
    return ns3::DynamicCast<ns3::PacketSink>(app)->GetTotalRx();
}

// Packets dropped at the bottleneck. Without a queue disc, a full device
// queue stops its NetDeviceQueue and the traffic-control layer drops what
// arrives meanwhile (trace source TcDrop): that is where a drop-tail buffer
// overflows. The device queue itself drops only if that mechanism fails.
void DropAt(ns3::Ptr<const ns3::Packet>) { bottleneckDrops++; }

void CountDrops(ns3::Ptr<ns3::Node> router)
{
    router->GetObject<ns3::TrafficControlLayer>()->TraceConnectWithoutContext("TcDrop", ns3::MakeCallback(&DropAt));
}

uint64_t Dropped(ns3::Ptr<ns3::NetDevice> device)
{
    return bottleneckDrops + ns3::DynamicCast<ns3::PointToPointNetDevice>(device)->GetQueue()->GetTotalDroppedPackets();
}

// The bottleneck's queue disc (FqCoDel), when it has one: the sum and count
// of the sojourn times of the packets it hands to the device (its
// SojournTime trace: dequeue time minus the time the packet entered the
// queue disc), and its drops.
double sojournSum = 0;
uint64_t sojournCount = 0;

void Sojourn(ns3::Time t)
{
    sojournSum += t.GetSeconds();
    sojournCount++;
}

// The quantum is no attribute of FqCoDelQueueDisc; it is set here, before
// the simulation starts (left at 0, it would become the device MTU).
ns3::Ptr<ns3::QueueDisc> TraceQueueDisc(ns3::Ptr<ns3::NetDevice> device, uint32_t quantum)
{
    ns3::Ptr<ns3::QueueDisc> disc =
        device->GetNode()->GetObject<ns3::TrafficControlLayer>()->GetRootQueueDiscOnDevice(device);
    ns3::DynamicCast<ns3::FqCoDelQueueDisc>(disc)->SetQuantum(quantum);
    disc->TraceConnectWithoutContext("SojournTime", ns3::MakeCallback(&Sojourn));
    return disc;
}

uint32_t Backlog(ns3::Ptr<ns3::QueueDisc> disc)
{
    return disc->GetNBytes();
}

uint64_t QueueDiscDrops(ns3::Ptr<ns3::QueueDisc> disc)
{
    return disc->GetStats().nTotalDroppedPackets;
}
} // namespace xcheck
"""


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cc", choices=sorted(CONGESTION_CONTROLS), required=True)
    p.add_argument("--flows", type=int, default=1)
    p.add_argument("--duration", type=float, default=20.0, help="simulated seconds")
    p.add_argument("--stagger", type=float, default=0.1, help="seconds between flow starts")
    p.add_argument("--interval", type=float, default=0.1, help="sampling interval, seconds")
    p.add_argument("--bottleneck", default="1Gbps", help="bottleneck rate (ns-3 DataRate)")
    p.add_argument("--access", default="10Gbps", help="access link rate (ns-3 DataRate)")
    p.add_argument("--bottleneck-delay", default="9.998ms")
    p.add_argument("--access-delay", default="1us")
    p.add_argument("--access-delays", help="per-flow access delays, comma-separated (overrides --access-delay)")
    p.add_argument("--buffer", type=int, required=True, help="bottleneck buffer, packets")
    p.add_argument("--qdisc", choices=["none", "fq_codel"], default="none",
                   help="bottleneck queue: none (the device's drop-tail queue of --buffer packets) or fq_codel "
                        "(FqCoDelQueueDisc with --buffer as its limit, over a 1-packet device queue)")
    p.add_argument("--fq-quantum", type=int, default=1514, help="FqCoDel quantum, bytes")
    p.add_argument("--mss", type=int, default=1448)
    p.add_argument("--init-cwnd", type=int, default=10, help="segments")
    p.add_argument("--buffers", type=int, default=64 * 2**20, help="socket send and receive buffers, bytes")
    p.add_argument("--delack-count", type=int, default=2)
    p.add_argument("--delack-timeout", default="40ms")
    p.add_argument("--min-rto", default="200ms")
    p.add_argument("--sack", action="store_true", help="negotiate SACK (default: off)")
    p.add_argument("--recovery", choices=sorted(RECOVERY), default="classic")
    return p.parse_args(argv)


def configure_tcp(ns, args: argparse.Namespace) -> None:
    """TCP defaults for every socket created afterwards."""
    ns.Config.SetDefault("ns3::TcpL4Protocol::SocketType", ns.StringValue(CONGESTION_CONTROLS[args.cc]))
    ns.Config.SetDefault("ns3::TcpL4Protocol::RecoveryType", ns.StringValue(RECOVERY[args.recovery]))
    ns.Config.SetDefault("ns3::TcpSocket::SegmentSize", ns.UintegerValue(args.mss))
    ns.Config.SetDefault("ns3::TcpSocket::InitialCwnd", ns.UintegerValue(args.init_cwnd))
    ns.Config.SetDefault("ns3::TcpSocket::SndBufSize", ns.UintegerValue(args.buffers))
    ns.Config.SetDefault("ns3::TcpSocket::RcvBufSize", ns.UintegerValue(args.buffers))
    ns.Config.SetDefault("ns3::TcpSocket::DelAckCount", ns.UintegerValue(args.delack_count))
    ns.Config.SetDefault("ns3::TcpSocket::DelAckTimeout", ns.TimeValue(ns.Time(args.delack_timeout)))
    # ns-3 closes a connection after DataRetries retransmissions of one
    # segment (default 6); a simulated bulk transfer should never give up.
    ns.Config.SetDefault("ns3::TcpSocket::DataRetries", ns.UintegerValue(1000))
    ns.Config.SetDefault("ns3::TcpSocketBase::MinRto", ns.TimeValue(ns.Time(args.min_rto)))
    ns.Config.SetDefault("ns3::TcpSocketBase::Sack", ns.BooleanValue(args.sack))
    # ns-3's defaults, set explicitly for the reader: RFC 7323 timestamps
    # (12 option bytes per segment, so MSS 1448 fills a 1500-byte packet),
    # window scaling, limited transmit. Pacing and ECN stay off (defaults).
    ns.Config.SetDefault("ns3::TcpSocketBase::Timestamp", ns.BooleanValue(True))
    ns.Config.SetDefault("ns3::TcpSocketBase::WindowScaling", ns.BooleanValue(True))
    ns.Config.SetDefault("ns3::TcpSocketBase::LimitedTransmit", ns.BooleanValue(True))


def link(ns, a, b, rate: str, delay: str, queue_pkts: int):
    """A PointToPoint link between nodes a and b; returns its two devices."""
    helper = ns.PointToPointHelper()
    helper.SetDeviceAttribute("DataRate", ns.StringValue(rate))
    helper.SetChannelAttribute("Delay", ns.StringValue(delay))
    helper.SetQueue("ns3::DropTailQueue", "MaxSize", ns.QueueSizeValue(ns.QueueSize(f"{queue_pkts}p")))
    return helper.Install(a, b)


def run(args: argparse.Namespace) -> dict:
    setup_start = time.perf_counter()
    from ns import ns  # slow: loads ns-3's headers into cling
    import cppyy

    cppyy.cppdef(TRACE_SINKS)
    xcheck = cppyy.gbl.xcheck
    configure_tcp(ns, args)

    n = args.flows
    senders, receivers, routers = ns.NodeContainer(), ns.NodeContainer(), ns.NodeContainer()
    senders.Create(n)
    receivers.Create(n)
    routers.Create(2)
    r1, r2 = routers.Get(0), routers.Get(1)
    stack = ns.InternetStackHelper()
    for nodes in (senders, receivers, routers):
        stack.Install(nodes)

    # Device queues other than the bottleneck's: large enough never to drop
    # (ns-3 has no TCP Small Queues, so a sender's NIC queue takes bursts).
    big = 1_000_000
    addresses = ns.Ipv4AddressHelper()
    no_qdisc = ns.TrafficControlHelper()

    def connect(devices, subnet: str):
        addresses.SetBase(ns.Ipv4Address(subnet), ns.Ipv4Mask("255.255.255.0"))
        interfaces = addresses.Assign(devices)
        # Assign() installs ns-3's default queue disc (FqCoDel); remove it so
        # that the device's drop-tail queue is the only queue.
        no_qdisc.Uninstall(devices)
        return interfaces

    fq_codel = args.qdisc == "fq_codel"
    # With a queue disc the device queue is one packet (the one waiting for
    # the wire), so that the queue disc holds the backlog, as a Linux qdisc
    # over a NIC with byte queue limits does.
    bottleneck = link(ns, r1, r2, args.bottleneck, args.bottleneck_delay, 1 if fq_codel else args.buffer)
    connect(bottleneck, "10.255.0.0")
    disc = None
    if fq_codel:
        tch = ns.TrafficControlHelper()
        tch.SetRootQueueDisc(
            "ns3::FqCoDelQueueDisc",
            "MaxSize", ns.QueueSizeValue(ns.QueueSize(f"{args.buffer}p")),
            "Flows", ns.StringValue("1024"),
            "Target", ns.StringValue("5ms"),
            "Interval", ns.StringValue("100ms"),
            "DropBatchSize", ns.StringValue("64"),
        )
        tch.Install(bottleneck.Get(0))
        disc = xcheck.TraceQueueDisc(bottleneck.Get(0), args.fq_quantum)
    delays = args.access_delays.split(",") if args.access_delays else [args.access_delay] * n
    if len(delays) != n:
        raise SystemExit(f"ns3_dumbbell: --access-delays has {len(delays)} values for {n} flows")
    sink_addresses = []
    for i in range(n):
        connect(link(ns, senders.Get(i), r1, args.access, delays[i], big), f"10.1.{i}.0")
        interfaces = connect(link(ns, r2, receivers.Get(i), args.access, delays[i], big), f"10.2.{i}.0")
        sink_addresses.append(interfaces.GetAddress(1))
    ns.Ipv4GlobalRoutingHelper.PopulateRoutingTables()
    # R1's only device that can fill is the bottleneck's: the others have
    # queues too large to fill.
    xcheck.CountDrops(r1)

    sinks, bulks, starts = [], [], []
    for i in range(n):
        port = BASE_PORT + i
        any_address = ns.InetSocketAddress(ns.Ipv4Address.GetAny(), port).ConvertTo()
        sink = ns.PacketSinkHelper("ns3::TcpSocketFactory", any_address).Install(receivers.Get(i))
        sink.Start(ns.Seconds(0))
        helper = ns.BulkSendHelper("ns3::TcpSocketFactory", ns.InetSocketAddress(sink_addresses[i], port).ConvertTo())
        helper.SetAttribute("MaxBytes", ns.UintegerValue(0))  # unlimited
        helper.SetAttribute("SendSize", ns.UintegerValue(64 * 1024))
        bulk = helper.Install(senders.Get(i))
        starts.append(i * args.stagger)
        bulk.Start(ns.Seconds(starts[-1]))
        sinks.append(sink.Get(0))
        bulks.append(bulk.Get(0))
    setup_wall = time.perf_counter() - setup_start

    # Advance step by step to absolute integer-nanosecond boundaries
    # (Simulator::Stop takes a delay relative to now).
    step_ns = round(args.interval * 1e9)
    steps = round(args.duration * 1e9 / step_ns)
    times = []
    series = [{"rx_bytes": [], "cwnd_bytes": [], "ssthresh_bytes": []} for _ in range(n)]
    sojourn_sum, sojourn_count = [], []  # cumulative, at every step
    backlog_bytes = []  # the queue disc's bytes at every step
    run_start = time.perf_counter()
    for k in range(1, steps + 1):
        target = k * step_ns
        ns.Simulator.Stop(ns.NanoSeconds(target - ns.Simulator.Now().GetNanoSeconds()))
        ns.Simulator.Run()
        times.append(target / 1e9)
        sojourn_sum.append(float(xcheck.sojournSum))
        sojourn_count.append(int(xcheck.sojournCount))
        backlog_bytes.append(int(xcheck.Backlog(disc)) if disc is not None else None)
        if target % 1_000_000_000 == 0:  # progress, once per simulated second
            print(f"ns3_dumbbell: {target / 1e9:g} s simulated, {time.perf_counter() - run_start:.0f} s wall",
                  file=sys.stderr, flush=True)
        for i in range(n):
            connected = xcheck.TryConnect(bulks[i], i)
            trace = xcheck.flows[i]
            series[i]["rx_bytes"].append(int(xcheck.RxBytes(sinks[i])))
            series[i]["cwnd_bytes"].append(int(trace.cwnd) if connected else 0)
            # ns-3 reports an infinite ssthresh as UINT32_MAX; write null.
            ssthresh = int(trace.ssthresh) if connected else 0
            series[i]["ssthresh_bytes"].append(None if ssthresh in (0, 2**32 - 1) else ssthresh)
    run_wall = time.perf_counter() - run_start
    flows = [
        {
            "name": f"tcp{i}",
            "start": starts[i],
            "recoveries": int(xcheck.flows[i].recoveries),
            "timeouts": int(xcheck.flows[i].timeouts),
            "retransmits": int(xcheck.flows[i].retransmits),
            **series[i],
        }
        for i in range(n)
    ]
    drops = int(xcheck.Dropped(bottleneck.Get(0)))
    if disc is not None:
        drops += int(xcheck.QueueDiscDrops(disc))
    ns.Simulator.Destroy()
    return {
        "times": times,
        "flows": flows,
        "bottleneck_drops": drops,
        "sojourn_sum_s": sojourn_sum,
        "sojourn_count": sojourn_count,
        "backlog_bytes": backlog_bytes,
        "setup_wall_s": setup_wall,
        "wall_s": run_wall,
    }


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    result = run(args)
    from importlib.metadata import version

    result["ns3_version"] = version("ns3")
    result["args"] = vars(args)
    sys.stdout.write(json.dumps(result) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
