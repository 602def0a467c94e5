"""Names of the result tables, their columns and the summary's fields.

Defined here once; the results layer, the plots and the reports use these
constants, never string literals. The engine's names are the same except for
times: the engine writes integer nanoseconds in a column ending in ``_ns``
(``srtt_ns``), the results layer turns it into float seconds under the name
without the suffix (``srtt``). See ``docs/engine-config.md``.
"""

from __future__ import annotations

NS_SUFFIX = "_ns"

# Identifiers.
FLOW = "flow"
KIND = "kind"  # "tcp", "udp", "poisson" or "ping"
SRC = "src"
DST = "dst"
QUEUE = "queue"  # "<from>-><to>", the egress queue of <from> towards <to>
NODE = "node"  # a router, in the filter table
TERM = "term"  # a firewall filter term
LINK = "link"
SEQ = "seq"

# Times, in seconds (engine: integer ns, with NS_SUFFIX).
TIME = "time"
SRTT = "srtt"
RTO = "rto"
RTT = "rtt"  # null when the ping was lost
DELAY_MEAN = "delay_mean"
DELAY_STD = "delay_std"
DELAY_MIN = "delay_min"
DELAY_P50 = "delay_p50"
DELAY_P99 = "delay_p99"
DELAY_MAX = "delay_max"

# TCP series.
BYTES_ACKED = "bytes_acked"
GOODPUT_BPS = "goodput_bps"
CWND_BYTES = "cwnd_bytes"
SSTHRESH_BYTES = "ssthresh_bytes"
RETRANSMITS = "retransmits"
RETRANSMITTED_BYTES = "retransmitted_bytes"
#: Retransmitted segments whose data had all reached the receiver already.
SPURIOUS_RETRANSMITS = "spurious_retransmits"
FAST_RETRANSMITS = "fast_retransmits"
TIMEOUTS = "timeouts"
OOO_ARRIVALS = "ooo_arrivals"
OOO_EXTENT_MAX = "ooo_extent_max"  # segments (RFC 4737 reordering extent)
OOO_EXTENT_3PLUS = "ooo_extent_3plus"  # late arrivals overtaken by 3 or more segments
DUP_ACKS_SENT = "dup_acks_sent"

# Packet counters (UDP series and flow summary).
TX_PKTS = "tx_pkts"
TX_BYTES = "tx_bytes"
RX_PKTS = "rx_pkts"
RX_BYTES = "rx_bytes"
RX_RATE_BPS = "rx_rate_bps"
DROP_PKTS = "drop_pkts"
DROP_BYTES = "drop_bytes"
#: Reverse-direction packets (ACKs, echo replies) of a flow that were dropped.
DROP_REV_PKTS = "drop_rev_pkts"

# Queues.
LEN_PKTS = "len_pkts"
# Packets held by colour: the virtual queues of a colour-aware queue.
LEN_GREEN_PKTS = "len_green_pkts"
LEN_YELLOW_PKTS = "len_yellow_pkts"
LEN_RED_PKTS = "len_red_pkts"
LEN_BYTES = "len_bytes"
ENQ_PKTS = "enq_pkts"
ENQ_BYTES = "enq_bytes"
DEQ_PKTS = "deq_pkts"
DEQ_BYTES = "deq_bytes"
DROP_TAIL_PKTS = "drop_tail_pkts"
DROP_AQM_PKTS = "drop_aqm_pkts"
DROP_POLICER_PKTS = "drop_policer_pkts"
BACKLOG_PKTS = "backlog_pkts"
BACKLOG_BYTES = "backlog_bytes"
RATE_BPS = "rate_bps"
#: Frames lost on the wire of an interface (link impairment, not the queue).
LINK_LOSS_PKTS = "link_loss_pkts"
#: Drops of packets a queue had already admitted (CoDel, FQ-CoDel's overflow).
DROP_QUEUED_PKTS = "drop_queued_pkts"
DROP_QUEUED_BYTES = "drop_queued_bytes"
#: Per queue: mean and 99th percentile of the time packets spent in it.
SOJOURN_MEAN = "sojourn_mean"
SOJOURN_P99 = "sojourn_p99"

# Workloads: their series, one row per transfer and per stream.
WORKLOAD = "workload"
TRANSFER = "transfer"
STREAM = "stream"
STREAMS = "streams"
ACTIVE_CONNS = "active_conns"
OFFERED_BPS = "offered_bps"
DELIVERED_BPS = "delivered_bps"
STARTED = "started"
COMPLETED = "completed"
SIZE_BYTES = "size_bytes"
START = "start"  # s
END = "end"  # s, null while unfinished
RECEIVER_END = "receiver_end"  # s: the receiver held the whole file (all blocks, any stream)
FCT = "fct"  # completion time, s, null while unfinished
IDEAL_FCT = "ideal_fct"  # the time alone on an idle path, s
MEAN_RATE_BPS = "mean_rate_bps"
SRC_PORT = "src_port"
FAILED = "failed"  # 1 if a connection gave up (SYN retries exhausted)

# The control plane: every change of a knob, and the agents' reports.
AGENT = "agent"
HANDLE = "handle"
KNOB = "knob"
OLD_VALUE = "old_value"
NEW_VALUE = "new_value"
TRANSFER_HANDLE = "transfer_handle"
RESERVATION_BPS = "reservation_bps"
DEADLINE = "deadline"  # s
MET = "met"  # 1 if the transfer completed by its deadline
RESERVED_BITS = "reserved_bits"  # integral of the reservation over the transfer
MEAN_RESERVATION_BPS = "mean_reservation_bps"
ADMITTED = "admitted"

# YAQS (qos/yaqs.rs) and the interface monitor (monitor.rs).
ARRIVALS = "arrivals"
CLASSIFIED_SLOW = "classified_slow"
NOP_BYTES = "nop_bytes"
NOP_BYTES_INTO_EMPTY = "nop_bytes_into_empty"  # added as a flow entered an empty slow queue
INFLATED_PKTS = "inflated_pkts"
SLOW_FLOWS = "slow_flows"
SLOW_FLOWS_MAX = "slow_flows_max"
SLOW_FLOWS_MEAN = "slow_flows_mean"  # time average (float)
FAST_BYTES = "fast_bytes"
SLOW_BYTES = "slow_bytes"
FAST_LEN_MAX_BYTES = "fast_len_max_bytes"  # the fast queue seen by each arrival
FAST_LEN_MEAN_BYTES = "fast_len_mean_bytes"
FAST_LEN_P90_BYTES = "fast_len_p90_bytes"
FALSE_POSITIVES = "false_positives"  # Definition 3; null unless measured (epsilon)
STRICT_FALSE_POSITIVES = "strict_false_positives"  # Definition 4
QLEN_MAX_BYTES = "qlen_max_bytes"  # the whole queue seen by each arrival
QLEN_MEAN_BYTES = "qlen_mean_bytes"
QLEN_P90_BYTES = "qlen_p90_bytes"
DATA_PKTS = "data_pkts"  # TCP first transmissions checked for order
REORDERED_PKTS = "reordered_pkts"
FAST_AFTER_SLOW = "fast_after_slow"
SLOW_AFTER_FAST = "slow_after_fast"
SOURCE = "source"  # qlen_hist: "yaqs_fast" or "monitor"
LOW_BYTES = "low_bytes"  # a histogram bucket's lowest value
COUNT = "count"

# The run table (engine only; folded into the summary).
EVENTS = "events"
SIM_TIME = "sim_time"
#: The workload_tcp table has a row every this many metric intervals (1
#: unless thinned to the engine's budget of rows, recorder.rs).
STREAM_SAMPLE_EVERY = "stream_sample_every"

# Firewall filter counters per term (the filter table).
MATCHED_PKTS = "matched_pkts"
MATCHED_BYTES = "matched_bytes"
OUT_OF_PROFILE_PKTS = "out_of_profile_pkts"
DISCARDED_PKTS = "discarded_pkts"
GREEN_PKTS = "green_pkts"
YELLOW_PKTS = "yellow_pkts"
RED_PKTS = "red_pkts"

#: Drop reasons with their counter columns, in the engine's order.
DROP_REASONS = {"tail": DROP_TAIL_PKTS, "aqm": DROP_AQM_PKTS, "policer": DROP_POLICER_PKTS}

#: The cumulative TCP counters a run's summary reports per flow (the sender's
#: and, as a receiver-side tcptrace would count them, the receiver's).
TCP_COUNTERS = (
    BYTES_ACKED, RETRANSMITS, RETRANSMITTED_BYTES, FAST_RETRANSMITS, TIMEOUTS,
    SPURIOUS_RETRANSMITS, OOO_ARRIVALS, OOO_EXTENT_MAX, OOO_EXTENT_3PLUS, DUP_ACKS_SENT,
)  # fmt: skip

#: Result tables and their columns as the results layer holds them.
TABLES: dict[str, tuple[str, ...]] = {
    "tcp": (
        FLOW, TIME, BYTES_ACKED, GOODPUT_BPS, CWND_BYTES, SSTHRESH_BYTES, SRTT, RTO,
        RETRANSMITS, RETRANSMITTED_BYTES, SPURIOUS_RETRANSMITS, FAST_RETRANSMITS, TIMEOUTS, OOO_ARRIVALS,
        OOO_EXTENT_MAX, OOO_EXTENT_3PLUS, DUP_ACKS_SENT,
    ),
    "udp": (FLOW, TIME, TX_PKTS, RX_PKTS, RX_BYTES, RX_RATE_BPS, DROP_PKTS),
    "ping": (FLOW, SEQ, TIME, RTT),
    "queue": (QUEUE, TIME, LEN_PKTS, LEN_BYTES, TX_BYTES, LEN_GREEN_PKTS, LEN_YELLOW_PKTS, LEN_RED_PKTS),
    "queue_summary": (
        QUEUE, LINK, ENQ_PKTS, ENQ_BYTES, DEQ_PKTS, DEQ_BYTES, DROP_PKTS, DROP_BYTES,
        *DROP_REASONS.values(), BACKLOG_PKTS, BACKLOG_BYTES, RATE_BPS, LINK_LOSS_PKTS,
        DROP_QUEUED_PKTS, DROP_QUEUED_BYTES, SOJOURN_MEAN, SOJOURN_P99,
    ),
    "filter": (
        NODE, TERM, MATCHED_PKTS, MATCHED_BYTES, OUT_OF_PROFILE_PKTS, DISCARDED_PKTS,
        GREEN_PKTS, YELLOW_PKTS, RED_PKTS,
    ),
    "flow_summary": (
        FLOW, KIND, SRC, DST, TX_PKTS, TX_BYTES, RX_PKTS, RX_BYTES, DROP_PKTS, DROP_REV_PKTS,
        DELAY_MEAN, DELAY_STD, DELAY_P50, DELAY_P99, DELAY_MIN, DELAY_MAX, GOODPUT_BPS,
    ),
    "workload": (WORKLOAD, TIME, ACTIVE_CONNS, OFFERED_BPS, DELIVERED_BPS, STARTED, COMPLETED),
    # The tcp table's series for each workload stream while it is open.
    "workload_tcp": (
        WORKLOAD, TRANSFER, STREAM, TIME, BYTES_ACKED, GOODPUT_BPS, CWND_BYTES, SSTHRESH_BYTES, SRTT, RTO,
        RETRANSMITS, RETRANSMITTED_BYTES, SPURIOUS_RETRANSMITS, FAST_RETRANSMITS, TIMEOUTS, OOO_ARRIVALS,
        OOO_EXTENT_MAX, OOO_EXTENT_3PLUS, DUP_ACKS_SENT,
    ),
    "transfers": (
        WORKLOAD, TRANSFER, SRC, DST, SIZE_BYTES, STREAMS, START, END, RECEIVER_END, FCT, IDEAL_FCT, MEAN_RATE_BPS,
        BYTES_ACKED, RETRANSMITS, TIMEOUTS, FAILED,
    ),
    "transfer_streams": (
        WORKLOAD, TRANSFER, STREAM, SRC_PORT, SIZE_BYTES, START, END, FCT, MEAN_RATE_BPS,
        BYTES_ACKED, RETRANSMITS, RETRANSMITTED_BYTES, SPURIOUS_RETRANSMITS, TIMEOUTS, FAILED,
    ),
    "control": (TIME, AGENT, HANDLE, KNOB, OLD_VALUE, NEW_VALUE),
    "reservation": (AGENT, TIME, TRANSFER_HANDLE, RESERVATION_BPS),
    "reservation_summary": (
        AGENT, TRANSFER_HANDLE, START, DEADLINE, END, MET, RESERVED_BITS, MEAN_RESERVATION_BPS,
    ),
    "admission": (AGENT, TIME, SIZE_BYTES, RATE_BPS, END, ADMITTED, TRANSFER_HANDLE),
    "yaqs": (
        QUEUE, LINK, ARRIVALS, CLASSIFIED_SLOW, NOP_BYTES, NOP_BYTES_INTO_EMPTY, INFLATED_PKTS, SLOW_FLOWS_MAX,
        FAST_LEN_MAX_BYTES, FAST_LEN_MEAN_BYTES, FAST_LEN_P90_BYTES, SLOW_FLOWS_MEAN, FALSE_POSITIVES,
        STRICT_FALSE_POSITIVES,
    ),
    "yaqs_series": (QUEUE, TIME, FAST_BYTES, SLOW_BYTES, SLOW_FLOWS, NOP_BYTES),
    "monitor": (
        LINK, ARRIVALS, QLEN_MEAN_BYTES, QLEN_P90_BYTES, QLEN_MAX_BYTES, DATA_PKTS, REORDERED_PKTS,
        FAST_AFTER_SLOW, SLOW_AFTER_FAST,
    ),
    "qlen_hist": (QUEUE, SOURCE, LOW_BYTES, COUNT),
}  # fmt: skip

#: Columns of text; every other column not in SECONDS or FLOATS is an integer count.
TEXT = frozenset({FLOW, KIND, SRC, DST, QUEUE, LINK, NODE, TERM, WORKLOAD, AGENT, HANDLE, KNOB, TRANSFER_HANDLE, SOURCE})
#: Columns of floats (knob values in their base unit, time averages; not times).
FLOATS = frozenset({OLD_VALUE, NEW_VALUE, RESERVATION_BPS, RESERVED_BITS, SLOW_FLOWS_MEAN})
#: Columns in float seconds, converted from the engine's integer ns.
SECONDS = frozenset({
    TIME, SRTT, RTO, RTT, DELAY_MEAN, DELAY_STD, DELAY_MIN, DELAY_P50, DELAY_P99, DELAY_MAX, START, END, RECEIVER_END, FCT,
    IDEAL_FCT, SOJOURN_MEAN, SOJOURN_P99, DEADLINE,
})  # fmt: skip

# Fields of summary.json beyond the column names above.
NAME = "name"
SEED = "seed"
DURATION = "duration"  # seconds
FLOWS = "flows"
QUEUES = "queues"
LOSS = "loss"  # drop_pkts / tx_pkts
PINGS_SENT = "pings_sent"
PINGS_LOST = "pings_lost"
RTT_MEAN = "rtt_mean"
RTT_STD = "rtt_std"  # population standard deviation, as the engine's delay_std
RTT_MIN = "rtt_min"
RTT_MAX = "rtt_max"
RTT_P50 = "rtt_p50"
RTT_P90 = "rtt_p90"
#: A ping's answered probes split where other traffic starts or stops: a
#: list of {start, end (s), active (the flows and workloads running),
#: pings_sent, pings_lost, rtt_mean, rtt_p50, rtt_max}.
RTT_PHASES = "rtt_phases"
ACTIVE = "active"
MAX_LEN_PKTS = "max_len_pkts"
MAX_LEN_BYTES = "max_len_bytes"
WORKLOADS = "workloads"
TRANSFERS_STARTED = "transfers_started"
TRANSFERS_COMPLETED = "transfers_completed"
FCT_P50 = "fct_p50"
FCT_P99 = "fct_p99"
SLOWDOWN_MEAN = "slowdown_mean"  # mean of fct / ideal_fct over completed transfers
SLOWDOWN_P99 = "slowdown_p99"
TRANSFERS_UNFINISHED = "transfers_unfinished"  # neither completed nor failed when the run ended
TRANSFERS_FAILED = "transfers_failed"  # a connection gave up
BYTES_OFFERED = "bytes_offered"  # the sizes of the transfers started
BYTES_DELIVERED = "bytes_delivered"  # acknowledged, over every transfer started
