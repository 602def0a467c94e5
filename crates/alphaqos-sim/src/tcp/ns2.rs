//! TCP as ns-2.35 runs it, where it differs from the RFC and Linux
//! behaviour of the rest of `tcp/`: the `host_profile: ns2` of the
//! documents that report ns-2 results (issue 21). Documented behaviour
//! only, each part cited to ns-2.35's source (`tcp/tcp.cc`,
//! `tcp/tcp-sack1.cc`, `tcp/scoreboard-rq.cc`, `tcp/tcp-sink.cc`,
//! `tcl/lib/ns-default.tcl`); ns-2 counts in packets, this engine in bytes
//! of whole segments (one ns-2 packet = one MSS), so "n packets" below is
//! `n * mss` bytes. Each part is an option of [`HostBehaviour`]; the `ns2`
//! profile turns them all on.
//!
//! - `per_ack_growth` (`TcpAgent::opencwnd`, with ns-default.tcl's
//!   `windowOption_ 1` and `increase_num_ 1.0`): every ACK that advances
//!   the cumulative ACK, whatever it acknowledges, opens the window once:
//!   `cwnd += 1` packet in slow start, `cwnd += 1/cwnd` packets after. No
//!   appropriate byte counting (RFC 3465), so with an ACK every second
//!   segment slow start grows the window 1.5x per round trip (W/2 ACKs
//!   add W/2) and congestion avoidance 0.5 packet per round trip; nor any
//!   check that the window limits sending (`control_increase_ 0`). The
//!   fraction is kept exactly (a remainder in byte-squared units). For
//!   `newreno` and `reno` only (ns-2's `Agent/TCP` window rule); another
//!   controller keeps its own growth, and Sack1 then cuts the window by
//!   the controller's rule too.
//! - `sack1` (`Sack1TcpAgent`, the 1996 Fall & Floyd recovery, "Simulation-
//!   based comparisons of Tahoe, Reno and SACK TCP", CCR 26(3)):
//!   - a duplicate ACK counts only if its SACK blocks changed the
//!     scoreboard (`CheckUpdate`); on the `numdupacks_` (3)-th, recovery
//!     starts (`dupack_action`) unless the cumulative ACK has not passed
//!     the previous recovery point (`highest_ack_ > recover_`, with
//!     `bug_fix_` true; `recover_` is 0 after a fast recovery ends, the
//!     highest sequence sent after a timeout);
//!   - entering: `pipe_ = maxseq_ - highest_ack_ - numdupacks_` (packets
//!     outstanding less three, SACKed ones included), `slowdown(
//!     CLOSE_SSTHRESH_HALF | CLOSE_CWND_HALF)`: `cwnd = window / 2`
//!     (fractional, `precisionReduce_ true`), `ssthresh = floor(window / 2)`
//!     packets, at least 2, window being min(cwnd, the peer's window); the
//!     first unacknowledged packet is retransmitted, which `pipe_` does not
//!     count;
//!   - every ACK in recovery decrements `pipe_`, a partial ACK twice
//!     (`partial_ack_ false`), and re-arms the timer (`newtimer`) without
//!     sending anything itself; each packet sent increments it;
//!   - while `pipe_ < cwnd` the sender sends the next hole (`GetNextRetran`:
//!     the first unSACKed packet at or above the highest retransmitted one
//!     with SACKed data above it: no DupThresh rule), else new data, which
//!     in recovery only the peer's window bounds (`t_seqno_ <= highest_ack_
//!     + wnd_`);
//!   - the ACK that covers the recovery point ends it with `newack` only:
//!     cwnd stays at the halved window (no increase on that ACK);
//!   - the scoreboard (and the highest retransmitted packet) is cleared on
//!     every new ACK outside recovery, at the end of recovery and at a
//!     timeout (`ClearScoreBoard`): a lost retransmission waits for the
//!     timer, and the next recovery retransmits holes afresh;
//!   - a timeout (`Sack1TcpAgent::timeout`, `TcpAgent::timeout`):
//!     `ssthresh = floor(window / 2)` (at least 2), `cwnd = 1`
//!     (`wnd_restart_`), go back to the first unacknowledged packet and
//!     resend everything (the scoreboard was cleared, SACKed data too);
//!     until a new ACK arrives, duplicate ACKs are ignored (`timeout_`);
//!   - limited transmit (`singledup_ 1`, `send_one`): the first two
//!     counted duplicate ACKs each send one new packet if at most `cwnd +
//!     dupacks` packets are then outstanding.
//! - `ns2_delack` (`DelAckSink::recv`, `Agent/TCPSink/Sack1/DelAck`): an
//!   in-order packet with no ACK pending starts the `interval_` timer
//!   (ns-default.tcl: `Agent/TCPSink/Sack1/DelAck set interval_ 100ms`, the
//!   profile's `delack_timeout`), the next one is acknowledged at once;
//!   out-of-order and gap-filling packets at once (`RFC2581_immediate_ack_
//!   true`). ns-2 has no PSH flag: the last packet of a burst waits for
//!   the timer, where this engine's receiver acknowledges a pushed segment
//!   at once.
//! - `tcp_tick_ns` (`TcpAgent::rtt_update`, `rtt_timeout`; `tcpTick_ 0.01`,
//!   `minrto_ 0.2`, `rtxcur_init_ 3.0`, `T_SRTT_BITS 3`, `T_RTTVAR_BITS 2`,
//!   `rttvar_exp_ 2` in ns-default.tcl): see `rtt.rs`.
//!
//! Values the profile gives the scenario's own keys where they are left
//! unset (the Python front, `scenario/resolution.py`): `init_cwnd` 2
//! (`windowInit_ 2`), `delack_timeout` 100 ms, `initial_rto` 3 s
//! (`rtxcur_init_ 3.0`), `min_rto` 200 ms (`minrto_ 0.2`, as the default),
//! `rto: rfc6298` (`rtt_timeout` with `rfc2988_ true`: max(minrto_, SRTT +
//! 4 RTTVAR)), and no quick ACKs at a connection's start.
//!
//! The defaults, with their lines in ns-2.35's `tcl/lib/ns-default.tcl`
//! (the release tree, `$Header: ... ns-default.tcl,v 1.388 2010/07/03`): `Queue/RED
//! set wait_ true` (139), `Agent/TCP set aggressive_maxburst_ 1` (906),
//! `numdupacks_ 3` (909), `windowInit_ 2` (920), `windowOption_ 1` (925),
//! `increase_num_ 1.0` (929), `bugFix_ true` (939), `tcpTick_ 0.01` (952),
//! `minrto_ 0.2` (956), `rtxcur_init_ 3.0` (961), `T_SRTT_BITS 3`,
//! `T_RTTVAR_BITS 2`, `rttvar_exp_ 2` (962-964), `rfc2988_ true` (969),
//! `partial_ack_ false` (974), `singledup_ 1` (987), `precisionReduce_
//! true` (989), `control_increase_ 0` (1025), `Agent/TCPSink set
//! RFC2581_immediate_ack_ true` (1061), `Agent/TCPSink/Sack1/DelAck set
//! interval_ 100ms` (1071); `wnd_restart_ = 1.` in `TcpAgent::TcpAgent`
//! (`tcp/tcp.cc`).
//!
//! Not modelled: ns-2's `window_` (the receiver's window, 20 packets by
//! default; set `rwnd`), `maxburst_` (0: none), ECN, F-RTO (off by default).
//!
//! Tests: `tests/ns2_profile.rs`.

use super::cc::CcState;
use crate::config::HostBehaviour;

/// What the ns-2 behaviours keep per connection.
#[derive(Clone, Debug, Default)]
pub struct Ns2 {
    pub per_ack_growth: bool,
    pub sack1: bool,
    /// `opencwnd`'s fraction in congestion avoidance: bytes x mss not yet
    /// a whole byte of cwnd.
    frac: u64,
    /// `pipe_`, packets (may go negative, as ns-2's int does).
    pub pipe: i64,
    /// `fastrecov_`.
    pub fastrecov: bool,
    /// `timeout_`: a timeout happened and no new ACK has come since.
    pub timeout: bool,
    pub stats: Ns2Stats,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ns2Stats {
    /// Duplicate ACKs ignored after a timeout (`timeout_` set).
    pub ignored_dupacks: u64,
}

impl Ns2 {
    /// Some if any sender-side ns-2 behaviour is on. `opencwnd` is Reno's
    /// window rule: it replaces the controller's growth only for NewReno
    /// and Reno (`reno`); another controller keeps its own.
    pub fn new(opts: &HostBehaviour, sack: bool, reno: bool) -> Option<Ns2> {
        let sack1 = opts.sack1 && sack;
        let per_ack_growth = opts.per_ack_growth && reno;
        (per_ack_growth || sack1).then(|| Ns2 { per_ack_growth, sack1, ..Ns2::default() })
    }

    /// `TcpAgent::opencwnd` with `wnd_option_` 1 and `increase_num_` 1:
    /// one packet per ACK in slow start, 1/cwnd packets per ACK after.
    pub fn opencwnd(&mut self, s: &mut CcState) {
        if s.cwnd < s.ssthresh {
            s.cwnd = s.cwnd.saturating_add(s.mss);
            return;
        }
        // cwnd += mss * mss / cwnd bytes, the remainder carried exactly.
        let cwnd = s.cwnd.max(1);
        self.frac = self.frac.saturating_add(s.mss.saturating_mul(s.mss));
        let inc = self.frac / cwnd;
        self.frac -= inc * cwnd;
        s.cwnd = s.cwnd.saturating_add(inc);
    }

    /// `slowdown(CLOSE_SSTHRESH_HALF | ...)`: the new ssthresh, floor(window /
    /// 2) packets, at least 2, for a window of `win` bytes.
    pub fn half_ssthresh(win: u64, mss: u64) -> u64 {
        (win / 2 / mss).max(2) * mss
    }

    /// Any change of the window by a loss resets the fraction (`slowdown`
    /// sets `fcnt_ = count_ = 0`; the fraction of `opencwnd` lives in the
    /// double cwnd, which the cut replaces).
    pub fn on_cut(&mut self) {
        self.frac = 0;
    }
}
