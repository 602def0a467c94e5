"""A synthetic but plausible set of router flow records, for tests and demos
of α-flow identification (the first source document's HNTES, Section II:
a flow is α when it moves more than H = 1 GB in one 1-minute interval).

What :func:`synthesize` models, per day and exporter:

* β traffic: many small flows (web over TCP 443/80, DNS and NTP over UDP,
  SSH, ICMP echo, some other ports) between client hosts in 10.0.0.0/12 and
  servers in 172.16.0.0/16. Their start times follow a day curve (most at
  15:00 UTC, fewest at 03:00, ratio :data:`DIURNAL_RATIO`); sizes and
  durations are log-normal, and a β flow never sends faster than
  :data:`BETA_MAX_RATE` (40 Mbit/s, so at most 300 MB in a minute: well
  under H).
* α transfers: a few static data-transfer nodes (:data:`DTN_HOSTS`, in the
  documentation prefixes 198.51.100.0/24 and 203.0.113.0/24) exchange
  datasets over a few recurring source/destination pairs, each pair always
  entering at the same exporter; a transfer has 1 to 8 parallel TCP streams
  (GridFTP-style, data ports 50000+), each at 0.3-2 Gbit/s for 2-20 minutes
  (so every full minute of a stream carries 2.25-15 GB).
* New α hosts (``new_alpha_hosts_per_day``, 0 by default): from the second
  day on, that many data-transfer nodes appear each day inside the /24s
  of the static ones (addresses .100 and up), each taking the place of
  one end of an existing pair (same /24, same role) in a new pair that
  recurs from then on, its first transfer on the day it appears. Rules of
  /32 prefixes miss a new host's transfers on its first day; /24 rules,
  learnt from its neighbours, catch them: the data tells /24 from /32 as
  the first document's 94% against 82% does.
* Active timeout: a flow longer than ``active_timeout`` (60 s) is exported
  as one record per ``active_timeout`` of its life, as a router's flow
  cache does (records of a flow start ``active_timeout`` apart), its bytes
  and packets shared in proportion to time.
* Packet sampling 1:N per exporter (:data:`SAMPLING_RATES`, in turn): a
  record's exported packets are a binomial draw (p = 1/N) of its packets,
  its bytes those packets at the record's mean packet size; records with no
  sampled packet are not exported. ``bytes_scaled`` = ``bytes`` x N
  estimates the true bytes.

Times are whole milliseconds (what nfdump CSV can carry), so the writers
here (:func:`write_nfdump_csv`, :func:`write_goflow2`) and the readers of
:mod:`.readers` round-trip the table exactly. Everything is drawn from one
``numpy.random.Generator`` seeded with ``seed``: the same arguments give
the same table.
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path

import numpy as np
import polars as pl

from . import schema

__all__ = [
    "BETA_MAX_RATE",
    "DTN_HOSTS",
    "DTN_NETWORKS",
    "SAMPLING_RATES",
    "exporter_names",
    "is_alpha",
    "synthesize",
    "write_goflow2",
    "write_nfdump_csv",
]

#: Static data-transfer nodes (sources and sinks of α transfers).
DTN_HOSTS = ("198.51.100.10", "198.51.100.11", "198.51.100.12", "203.0.113.20", "203.0.113.21", "203.0.113.22")
#: The /24s of the data-transfer nodes (new α hosts appear inside them).
DTN_NETWORKS = ("198.51.100.", "203.0.113.")
#: Last octet of the first new α host in a /24.
NEW_HOST_OCTET = 100
#: 1:N packet sampling of exporter i is SAMPLING_RATES[i % 4].
SAMPLING_RATES = (1, 100, 1000, 10)
#: Highest rate of a β flow, bytes per second (40 Mbit/s).
BETA_MAX_RATE = 5_000_000
#: β flows starting in the busiest minute / in the quietest minute.
DIURNAL_RATIO = 4.0
PEAK_HOUR_UTC = 15

MS_PER_DAY = 86_400_000
JUMBO_PACKET = 8_948  # mean payload-carrying packet of a 9000-byte MTU path

# β applications: (share, protocol, server port, median bytes, log-sigma of
# bytes, mean packet size, median duration s, log-sigma of duration).
_APPS = (
    (0.45, 6, 443, 30_000, 2.2, 900, 3.0, 1.6),  # HTTPS
    (0.10, 6, 80, 20_000, 2.0, 800, 2.0, 1.5),  # HTTP
    (0.22, 17, 53, 120, 0.5, 100, 0.02, 1.0),  # DNS
    (0.05, 17, 123, 76, 0.1, 76, 0.01, 0.5),  # NTP
    (0.04, 6, 22, 8_000, 2.0, 150, 30.0, 1.8),  # SSH
    (0.05, 1, 0, 84, 0.5, 84, 1.0, 1.0),  # ICMP echo
    (0.09, 17, 0, 5_000, 2.5, 600, 5.0, 1.5),  # other UDP (ports drawn)
)


def exporter_names(count: int) -> list[str]:
    """The exporters' names: router addresses 192.0.2.1, 192.0.2.2, ..."""
    if not 1 <= count <= 254:
        raise ValueError(f"exporters: expected 1 to 254, got {count}")
    return [f"192.0.2.{i + 1}" for i in range(count)]


def _in_dtn_networks(column: pl.Series) -> pl.Series:
    return column.str.starts_with(DTN_NETWORKS[0]) | column.str.starts_with(DTN_NETWORKS[1])


def is_alpha(frame: pl.DataFrame) -> pl.Series:
    """Which records of a synthetic table belong to α transfers (both ends
    in the data-transfer nodes' /24s)."""
    return _in_dtn_networks(frame["src_addr"]) & _in_dtn_networks(frame["dst_addr"])


def is_new_host(address: pl.Series) -> pl.Series:
    """Which addresses are α hosts that appeared after the first day."""
    octet = address.str.split(".").list.last().cast(pl.Int64, strict=False)
    return _in_dtn_networks(address) & (octet >= NEW_HOST_OCTET)


def synthesize(
    days: int = 1,
    exporters: int = 4,
    seed: int = 0,
    *,
    start: date | str = "2026-11-01",
    beta_flows_per_day: int = 400_000,
    alpha_transfers_per_day: int = 24,
    alpha_pairs: int = 4,
    new_alpha_hosts_per_day: int = 0,
    active_timeout: float = 60.0,
    sampling: tuple[int, ...] = SAMPLING_RATES,
) -> pl.DataFrame:
    """The canonical table of ``days`` days of records from ``exporters``
    routers starting at ``start`` (UTC midnight); see the module doc.
    ``beta_flows_per_day`` β flows and ``alpha_transfers_per_day`` α
    transfers (over ``alpha_pairs`` recurring pairs) are drawn per day over
    all exporters; exporter i samples 1:``sampling[i % len(sampling)]``;
    ``new_alpha_hosts_per_day`` new α hosts appear each day after the first."""
    if days < 1:
        raise ValueError(f"days: expected at least 1, got {days}")
    if active_timeout <= 0:
        raise ValueError(f"active_timeout: expected a positive number of seconds, got {active_timeout}")
    names = exporter_names(exporters)
    rng = np.random.default_rng(seed)
    day0 = date.fromisoformat(start) if isinstance(start, str) else start
    origin_ms = int(datetime(day0.year, day0.month, day0.day, tzinfo=UTC).timestamp() * 1000)
    beta = _beta_flows(rng, days * beta_flows_per_day, days, exporters)
    if new_alpha_hosts_per_day < 0 or new_alpha_hosts_per_day * (days - 1) > 2 * (256 - NEW_HOST_OCTET):
        raise ValueError(f"new_alpha_hosts_per_day: expected 0 to {2 * (256 - NEW_HOST_OCTET) // max(days - 1, 1)} "
                         f"for {days} days, got {new_alpha_hosts_per_day}")  # fmt: skip
    alpha = _alpha_flows(rng, days, alpha_transfers_per_day, alpha_pairs, exporters, new_alpha_hosts_per_day)
    flows = {k: np.concatenate([beta[k], alpha[k]]) for k in beta}
    flows["start"] += origin_ms
    flows["end"] += origin_ms
    records = _split(flows, int(round(active_timeout * 1000)))
    rates = np.array([sampling[i % len(sampling)] for i in range(exporters)], dtype=np.int64)
    records = _sample(rng, records, rates)
    frame = pl.DataFrame(
        {
            "exporter": np.array(names, dtype=object)[records["exporter"]].tolist(),
            "first": records["start"],
            "last": records["end"],
            "src_addr": records["src"],
            "dst_addr": records["dst"],
            "src_port": records["sport"],
            "dst_port": records["dport"],
            "protocol": records["proto"],
            "bytes": records["bytes"],
            "packets": records["packets"],
            "sampling_rate": records["rate"],
            "input_if": records["in_if"],
            "output_if": records["out_if"],
        }
    )
    frame = frame.with_columns(
        *(pl.from_epoch(c, time_unit="ms").dt.cast_time_unit("us").dt.replace_time_zone("UTC") for c in ("first", "last")),
        *(_dotted(c) for c in ("src_addr", "dst_addr")),
    ).sort("first", "exporter", maintain_order=True)
    return schema.conform(frame)


def _beta_flows(rng: np.random.Generator, n: int, days: int, exporters: int) -> dict[str, np.ndarray]:
    # Start minute from the day curve: weight 1 + a cos(2π (m - peak) / 1440),
    # a chosen so that busiest / quietest = DIURNAL_RATIO.
    amplitude = (DIURNAL_RATIO - 1) / (DIURNAL_RATIO + 1)
    minutes = np.arange(1440)
    weight = 1 + amplitude * np.cos(2 * np.pi * (minutes - PEAK_HOUR_UTC * 60) / 1440)
    minute = rng.choice(1440, size=n, p=weight / weight.sum())
    start = rng.integers(0, days, n) * MS_PER_DAY + minute * 60_000 + rng.integers(0, 60_000, n)

    shares = np.array([a[0] for a in _APPS])
    app = rng.choice(len(_APPS), size=n, p=shares / shares.sum())
    table = np.array([a[1:] for a in _APPS], dtype=np.float64)
    proto, port, median, sigma, packet, median_s, sigma_s = (table[app, i] for i in range(7))
    size = np.maximum(median * np.exp(sigma * rng.standard_normal(n)), 40.0)
    duration_ms = np.round(1000 * median_s * np.exp(sigma_s * rng.standard_normal(n)))
    duration_ms = np.clip(duration_ms, 0, 4 * 3_600_000)
    # No β flow is faster than BETA_MAX_RATE (1 ms counted for an instant flow).
    size = np.floor(np.minimum(size, BETA_MAX_RATE * np.maximum(duration_ms, 1) / 1000))
    packets = np.maximum(1, np.ceil(size / packet))

    client = (10 << 24) + rng.integers(1, 1 << 20, n)  # 10.0.0.0/12
    server = (172 << 24) + (16 << 16) + rng.integers(1, 1 << 16, n)  # 172.16.0.0/16
    ephemeral = rng.integers(32_768, 61_000, n)
    port = np.where(port == 0, rng.integers(1_024, 32_768, n), port)
    port = np.where(proto == 1, 8 * 256, port)  # ICMP: type 8 (echo) x 256 + code in the port, as NetFlow does
    ephemeral = np.where(proto == 1, 0, ephemeral)
    # Half the records are requests (client -> server), half replies.
    reply = rng.random(n) < 0.5
    return {
        "exporter": rng.integers(0, exporters, n),
        "start": start,
        "end": start + duration_ms.astype(np.int64),
        "src": np.where(reply, server, client),
        "dst": np.where(reply, client, server),
        "sport": np.where(reply, port, ephemeral),
        "dport": np.where(reply, ephemeral, port),
        "proto": proto.astype(np.int64),
        "bytes": size,
        "packets": packets,
        "in_if": rng.integers(1, 9, n),
        "out_if": rng.integers(9, 17, n),
    }


def _alpha_flows(rng: np.random.Generator, days: int, per_day: int, pairs: int, exporters: int,
                 new_per_day: int = 0) -> dict[str, np.ndarray]:  # fmt: skip
    hosts = np.array([_to_int(h) for h in DTN_HOSTS], dtype=np.int64)
    # Recurring pairs between distinct hosts; pair p always enters at exporter p mod K.
    src_of = rng.choice(len(hosts), size=pairs)
    dst_of = (src_of + rng.integers(1, len(hosts), size=pairs)) % len(hosts)
    transfers = days * per_day
    pair = rng.integers(0, pairs, transfers)
    streams = rng.choice(np.array([1, 1, 2, 4, 8]), size=transfers)
    start = rng.integers(0, days, transfers) * MS_PER_DAY + rng.integers(0, MS_PER_DAY - 1_200_000, transfers)
    if new_per_day:
        hosts, src_of, dst_of, pair = _new_hosts(rng, hosts, src_of, dst_of, start // MS_PER_DAY, days, new_per_day)
    duration_ms = rng.integers(120_000, 1_200_001, transfers)
    n = int(streams.sum())
    owner = np.repeat(np.arange(transfers), streams)
    stream = np.arange(n) - np.repeat(np.cumsum(streams) - streams, streams)
    rate = rng.uniform(0.3e9, 2.0e9, n) / 8  # bytes per second per stream
    stream_start = start[owner] + rng.integers(0, 2_000, n)  # streams open within 2 s
    stream_ms = duration_ms[owner]
    size = np.floor(rate * stream_ms / 1000)
    return {
        "exporter": pair[owner] % exporters,
        "start": stream_start,
        "end": stream_start + stream_ms,
        "src": hosts[src_of[pair[owner]]],
        "dst": hosts[dst_of[pair[owner]]],
        "sport": rng.integers(32_768, 61_000, n),
        "dport": 50_000 + stream,
        "proto": np.full(n, 6),
        "bytes": size,
        "packets": np.ceil(size / JUMBO_PACKET),
        "in_if": np.full(n, 20),
        "out_if": np.full(n, 21),
    }


def _new_hosts(rng, hosts, src_of, dst_of, day, days: int, new_per_day: int):
    """New α hosts (see the module doc): the host table and pairs grown,
    and each transfer's pair drawn among the pairs that exist on its day,
    a new pair's first transfer on the day it appears."""
    pairs = len(src_of)
    hosts, src_of, dst_of = list(hosts), list(src_of), list(dst_of)
    next_octet = {}
    for d in range(1, days):
        for _ in range(new_per_day):
            p = int(rng.integers(0, pairs))  # the pair whose end the new host stands in for
            side = int(rng.integers(0, 2))
            old = hosts[src_of[p] if side == 0 else dst_of[p]]
            network = old & ~0xFF
            octet = next_octet.get(network, NEW_HOST_OCTET)
            next_octet[network] = octet + 1
            hosts.append(network | octet)
            new = len(hosts) - 1
            src_of.append(new if side == 0 else src_of[p])
            dst_of.append(dst_of[p] if side == 0 else new)
    available = pairs + new_per_day * np.maximum(day, 0)  # pairs in existence on each transfer's day
    pair = np.floor(rng.random(day.size) * available).astype(np.int64)
    for d in range(1, days):  # the first transfers of day d go to the pairs new that day
        today = np.flatnonzero(day == d)[:new_per_day]
        pair[today] = pairs + new_per_day * (d - 1) + np.arange(today.size)
    return np.array(hosts, np.int64), np.array(src_of), np.array(dst_of), pair


def _split(flows: dict[str, np.ndarray], timeout_ms: int) -> dict[str, np.ndarray]:
    """One record per ``timeout_ms`` of each flow's life; bytes and packets
    shared in proportion to time (cumulative floors, so sums are kept)."""
    start, end = flows["start"], flows["end"]
    duration = end - start
    pieces = np.maximum(1, -(-duration // timeout_ms))
    owner = np.repeat(np.arange(start.size), pieces)
    k = np.arange(owner.size) - np.repeat(np.cumsum(pieces) - pieces, pieces)
    first = start[owner] + k * timeout_ms
    last = np.minimum(first + timeout_ms, end[owner])
    span = np.maximum(duration[owner], 1).astype(np.float64)
    records = {name: values[owner] for name, values in flows.items() if name not in ("start", "end", "bytes", "packets")}
    for name in ("bytes", "packets"):
        total = flows[name][owner]
        done_before = np.floor(total * ((first - start[owner]) / span))
        done_after = np.where(last == end[owner], total, np.floor(total * ((last - start[owner]) / span)))
        records[name] = (done_after - done_before).astype(np.int64)
    records["start"], records["end"] = first, last
    return records


def _sample(rng: np.random.Generator, records: dict[str, np.ndarray], rates: np.ndarray) -> dict[str, np.ndarray]:
    rate = rates[records["exporter"]]
    packets = records["packets"]
    sampled = rng.binomial(packets, 1.0 / rate)
    mean_size = records["bytes"] / np.maximum(packets, 1)
    keep = sampled > 0
    out = {name: values[keep] for name, values in records.items()}
    out["packets"] = sampled[keep]
    out["bytes"] = np.round(sampled[keep] * mean_size[keep]).astype(np.int64)
    out["rate"] = rate[keep]
    return out


def _to_int(address: str) -> int:
    a, b, c, d = (int(x) for x in address.split("."))
    return (a << 24) | (b << 16) | (c << 8) | d


def _dotted(name: str) -> pl.Expr:
    value = pl.col(name).cast(pl.Int64)
    octets = [((value // (1 << shift)) % 256).cast(pl.String) for shift in (24, 16, 8, 0)]
    return pl.concat_str(octets, separator=".").alias(name)


# --- writers ---------------------------------------------------------------------------

#: The columns of ``nfdump -o csv`` (nfdump 1.6/1.7), in order.
NFDUMP_HEADER = (
    "ts,te,td,sa,da,sp,dp,pr,flg,fwd,stos,ipkt,ibyt,opkt,obyt,in,out,sas,das,smk,dmk,dtos,dir,nh,nhb,svln,dvln,"
    "ismc,odmc,idmc,osmc," + ",".join(f"mpls{i}" for i in range(1, 11)) + ",cl,sl,al,ra,eng,exid,tr"
).split(",")
_PROTOCOL_NAMES = {1: "ICMP", 6: "TCP", 17: "UDP", 47: "GRE", 50: "ESP", 51: "AH", 58: "ICMP6", 132: "SCTP"}


def _protocol_name() -> pl.Expr:
    return pl.col("protocol").cast(pl.Int64).replace_strict(_PROTOCOL_NAMES, default=None, return_dtype=pl.String).fill_null(
        pl.col("protocol").cast(pl.String)
    )


def write_nfdump_csv(frame: pl.DataFrame, path: str | Path, *, summary: bool = True, scaled: bool = False) -> Path:
    """``frame`` as ``nfdump -o csv`` would print it (times in UTC to the
    millisecond, ``ra`` the exporter, the ``Summary`` block at the end).
    The counts are as exported (``scaled``: times the sampling rate, as
    nfdump shows them when nfcapd applied the rate)."""
    frame = schema.conform(frame)
    byte_col, packet_col = ("bytes_scaled", "packets_scaled") if scaled else ("bytes", "packets")
    stamp = "%Y-%m-%d %H:%M:%S%.3f"
    values = {
        "ts": pl.col("first").dt.strftime(stamp),
        "te": pl.col("last").dt.strftime(stamp),
        "td": (pl.col("last") - pl.col("first")).dt.total_milliseconds().cast(pl.Float64) / 1000,
        "sa": pl.col("src_addr"),
        "da": pl.col("dst_addr"),
        "sp": pl.col("src_port"),
        "dp": pl.col("dst_port"),
        "pr": _protocol_name(),
        "flg": pl.when(pl.col("protocol") == 6).then(pl.lit(".AP.SF")).otherwise(pl.lit("......")),
        "ipkt": pl.col(packet_col),
        "ibyt": pl.col(byte_col),
        "in": pl.col("input_if"),
        "out": pl.col("output_if"),
        "ra": pl.col("exporter"),
        "eng": pl.lit("0/0"),
        "tr": pl.lit("1970-01-01 00:00:00.000"),
    }
    zeros = {"nh": "0.0.0.0", "nhb": "0.0.0.0", "ismc": "00:00:00:00:00:00", "odmc": "00:00:00:00:00:00",
             "idmc": "00:00:00:00:00:00", "osmc": "00:00:00:00:00:00", "cl": "0.000", "sl": "0.000", "al": "0.000"}  # fmt: skip
    columns = [values.get(c, pl.lit(zeros.get(c, "0-0-0" if c.startswith("mpls") else "0"))).alias(c) for c in NFDUMP_HEADER]
    path = Path(path)
    frame.select(columns).write_csv(path, float_precision=3)
    if summary:
        flows, octets, packets = frame.height, int(frame[byte_col].sum()), int(frame[packet_col].sum())
        span = (frame["last"].max() - frame["first"].min()).total_seconds() if flows else 0
        bps, pps = (int(8 * octets / span), int(packets / span)) if span else (0, 0)
        with path.open("a") as out:
            out.write("Summary\nflows,bytes,packets,avg_bps,avg_pps,avg_bpp\n")
            out.write(f"{flows},{octets},{packets},{bps},{pps},{octets // packets if packets else 0}\n")
    return path


def write_goflow2(frame: pl.DataFrame, path: str | Path, *, protocol_names: bool = True) -> Path:
    """``frame`` as GoFlow2 JSON lines (``goflow2 -format=json``), one record
    per line, counts as exported with their ``sampling_rate``; ``proto`` as
    a name where it has a common one (else the number as text)."""
    frame = schema.conform(frame)
    ns = {c: pl.col(c).dt.epoch("ns") for c in ("first", "last")}
    proto = _protocol_name() if protocol_names else pl.col("protocol")
    out = frame.select(
        pl.lit("NETFLOW_V9").alias("type"),
        (ns["last"] + 1_000_000_000).alias("time_received_ns"),
        pl.int_range(pl.len(), dtype=pl.Int64).alias("sequence_num"),
        pl.col("sampling_rate"),
        pl.col("exporter").alias("sampler_address"),
        ns["first"].alias("time_flow_start_ns"),
        ns["last"].alias("time_flow_end_ns"),
        pl.col("bytes"),
        pl.col("packets"),
        pl.col("src_addr"),
        pl.col("dst_addr"),
        pl.when(pl.col("src_addr").str.contains(":", literal=True)).then(pl.lit("IPv6")).otherwise(pl.lit("IPv4")).alias("etype"),
        proto.alias("proto"),
        pl.col("src_port"),
        pl.col("dst_port"),
        pl.col("input_if").alias("in_if"),
        pl.col("output_if").alias("out_if"),
    )
    path = Path(path)
    out.write_ndjson(path)
    return path

