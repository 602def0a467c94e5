//! Loss recovery as Linux 2.6.33 runs it (`net/ipv4/tcp_input.c`,
//! `net/ipv4/tcp_output.c`), the kernel of the hosts of Yan, Veeraraghavan,
//! Tracy and Guok (CTRQ 2013, Section III-A). The sender (`sender.rs`)
//! keeps its RFC 6675 scoreboard; this module holds what the kernel adds to
//! it, each part an option of [`HostBehaviour`] (the `linux-2.6.33` host
//! profile turns them all on):
//!
//! - `fack` (`tcp_fack` = 1; `tcp_time_to_recover`, `tcp_update_scoreboard`,
//!   `tcp_mark_head_lost`): recovery starts once the forward-most SACKed
//!   segment is more than `reordering` segments above the first
//!   unacknowledged one (`fackets_out > tp->reordering`), and then every
//!   hole below `fackets_out - reordering` is lost. Without FACK the
//!   RFC 6675-like rule holds with `reordering` for DupThresh: a hole is
//!   lost once `reordering` segments above it are SACKed (`sacked_out -
//!   reordering` marked from the head).
//! - `adaptive_reordering` (`tcp_update_reordering`, called from
//!   `tcp_sacktag_write_queue`, `tcp_clean_rtx_queue`,
//!   `tcp_try_undo_partial`): a segment never retransmitted that is SACKed,
//!   or cumulatively acknowledged, below the forward-most SACKed one
//!   arrived out of order; the distance, in segments, raises
//!   `tp->reordering` (never lowers it) up to `max_reordering`
//!   (TCP_MAX_REORDERING = 127 in 2.6.33), and FACK is turned off for the
//!   connection (`tcp_disable_fack`). A timeout brings it back to the
//!   initial 3 (`tcp_enter_loss`: `min(reordering, sysctl_tcp_reordering)`).
//! - `undo` (`tcp_may_undo`, `tcp_packet_delayed`, `tcp_check_dsack`,
//!   `tcp_try_undo_partial`, `tcp_try_undo_recovery`, `tcp_try_undo_dsack`,
//!   `tcp_undo_cwr`): a recovery was spurious if every retransmission of it
//!   was reported by a D-SACK (`undo_retrans` back to 0) or if an ACK
//!   echoes a timestamp older than the first retransmission (the original
//!   filled the hole). On a partial ACK the window comes back
//!   (`tcp_undo_cwr(sk, 0)`: cwnd to what it was, ssthresh kept) and
//!   reordering is raised to `fackets_out + acked`; at the end of recovery,
//!   or on a D-SACK in Disorder, ssthresh comes back too
//!   (`tcp_undo_cwr(sk, 1)`). The timestamp clock ticks in jiffies
//!   (`ts_tick_ns`), and `before()` is strict: an original and its
//!   retransmission in the same tick cannot be told apart.
//! - `moderate_cwnd` (`tcp_moderate_cwnd`, from `tcp_try_to_open` on every
//!   ACK in Disorder and from `tcp_undo_cwr`): `cwnd = min(cwnd,
//!   packets_in_flight + tcp_max_burst)`, `tcp_max_burst` being
//!   `tp->reordering` in 2.6.33. An undo thus restores at most what is in
//!   flight plus `reordering` segments.
//! - `rate_halving` (`tcp_cwnd_down`, `tcp_complete_cwr`): in recovery the
//!   window falls by one segment every second ACK that brings news, down
//!   to ssthresh, and never above `packets_in_flight + 1`; at the end of
//!   recovery `cwnd = min(cwnd, ssthresh)` (also after an undo: 2.6.33
//!   calls `tcp_complete_cwr` whatever `tcp_try_undo_recovery` did).
//!   Without it the sender sets cwnd = ssthresh at once (RFC 6675).
//! - `tso_max_bytes` (`tcp_output.c`: `tcp_tso_should_defer`,
//!   `tcp_mss_split_point`, sysctl_tcp_tso_win_divisor = 3): new data
//!   leaves in frames of up to 64 KB, which the NIC cuts into segments
//!   sent back to back at line rate; in the Open state the sender waits
//!   for more ACKs rather than send a frame smaller than the 64 KB and
//!   than a third of min(cwnd, the peer's window). Not modelled: the
//!   deferral's two-jiffy limit (an ACK always comes sooner here).
//!
//! Tests: `tests/linux_recovery.rs` replays hand-built ACK sequences
//! against each behaviour.

use super::linux6::{CwndUsage, Prr, Tlp};
use super::ranges::RangeSet;
use crate::config::HostBehaviour;
use crate::time::SimTime;

/// What the kernel keeps per connection for the behaviours above.
#[derive(Clone, Debug)]
pub struct Linux {
    pub opts: HostBehaviour,
    /// FACK still on (off for good once reordering was seen).
    pub fack: bool,
    /// `tp->reordering`, segments.
    pub reordering: u64,
    /// The initial metric (sysctl_tcp_reordering, the sender's DupThresh).
    pub initial_reordering: u64,
    /// `tp->undo_marker`: snd_una when the recovery began.
    pub undo_marker: Option<u64>,
    /// `tp->undo_retrans`: retransmissions not yet reported by a D-SACK;
    /// -1 (Linux 6's `tcp_init_undo` when none was out at the start of a
    /// recovery): none to wait for, but not "all reported" either, so the
    /// undo rests on the timestamps (`packet_delayed`) until one is sent.
    pub undo_retrans: i64,
    /// `tp->retrans_stamp`: when the first retransmission left.
    pub retrans_stamp: Option<SimTime>,
    /// `tp->prior_ssthresh` (None: 0) and the window before the cut.
    pub prior_ssthresh: Option<u64>,
    pub prior_cwnd: u64,
    /// `tp->snd_cwnd_cnt` for `tcp_cwnd_down`.
    pub cwnd_cnt: u64,
    /// Bytes ever retransmitted (TCPCB_EVER_RETRANS), above snd_una.
    pub ever_retx: RangeSet,
    /// Disorder: `tp->high_seq` when it was entered (None: Open).
    pub disorder_high: Option<u64>,
    /// After a recovery that was not undone: undo by D-SACK stays possible
    /// until this sequence is acknowledged.
    pub undo_until: Option<u64>,
    /// Bytes of the TSO frame being sent.
    pub tso_left: u64,
    /// TSO deferred a frame because of cwnd in this round of sending
    /// (`tcp_tso_should_defer`'s `*is_cwnd_limited`).
    pub tso_deferred_by_cwnd: bool,
    /// Linux 6's PRR, TLP and record of cwnd use (`linux6.rs`).
    pub prr: Prr,
    pub tlp: Tlp,
    pub usage: CwndUsage,
    pub stats: LinuxStats,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LinuxStats {
    /// Recoveries undone (partial, full, or by D-SACK).
    pub undos: u64,
    /// D-SACK blocks received.
    pub dsacks: u64,
    /// Times the reordering metric was raised.
    pub reorder_raised: u64,
    /// Tail loss probes sent, and those that repaired a loss (`linux6.rs`).
    pub tlp_probes: u64,
    pub tlp_recoveries: u64,
}

impl Linux {
    /// Some if any sender-side behaviour is on.
    pub fn new(opts: HostBehaviour, dupthresh: u32) -> Option<Linux> {
        let any = opts.fack || opts.adaptive_reordering || opts.undo || opts.moderate_cwnd || opts.rate_halving || opts.tso_max_bytes > 0 || super::linux6::any(&opts);
        any.then(|| Linux {
            opts,
            fack: opts.fack,
            reordering: dupthresh as u64,
            initial_reordering: dupthresh as u64,
            undo_marker: None,
            undo_retrans: 0,
            retrans_stamp: None,
            prior_ssthresh: None,
            prior_cwnd: 0,
            cwnd_cnt: 0,
            ever_retx: RangeSet::default(),
            disorder_high: None,
            undo_until: None,
            tso_left: 0,
            tso_deferred_by_cwnd: false,
            prr: Prr::default(),
            tlp: Tlp::default(),
            usage: CwndUsage::default(),
            stats: LinuxStats::default(),
        })
    }

    /// `tcp_update_reordering`: a reordering `metric` segments deep was seen.
    pub fn update_reordering(&mut self, metric: u64) {
        if self.opts.adaptive_reordering && metric > self.reordering {
            self.reordering = metric.min(self.opts.max_reordering as u64).max(self.reordering);
            self.fack = false;
            self.stats.reorder_raised += 1;
        }
    }

    /// `tcp_packet_delayed`: nothing was retransmitted, or the echoed
    /// timestamp is older (in whole ticks) than the first retransmission.
    pub fn packet_delayed(&self, ts_ecr: SimTime) -> bool {
        let tick = self.opts.ts_tick_ns.max(1);
        self.retrans_stamp.is_none_or(|r| ts_ecr.as_nanos() / tick < r.as_nanos() / tick)
    }

    /// `tcp_may_undo`.
    pub fn may_undo(&self, ts_ecr: SimTime) -> bool {
        self.opts.undo && self.undo_marker.is_some() && (self.undo_retrans == 0 || self.packet_delayed(ts_ecr))
    }

    /// `tcp_check_dsack` / `tcp_sacktag_write_queue`: a D-SACK for
    /// [start, end) counts against the retransmissions of the recovery
    /// that began at `undo_marker`.
    pub fn on_dsack(&mut self, start: u64, end: u64, mss: u64) {
        self.stats.dsacks += 1;
        if let Some(marker) = self.undo_marker {
            if end > marker && self.undo_retrans > 0 {
                let segments = (end - start).div_ceil(mss).max(1) as i64;
                self.undo_retrans = (self.undo_retrans - segments).max(0);
            }
        }
    }

    /// A segment [seq, seq + len) is retransmitted at `now`.
    pub fn on_retransmit(&mut self, seq: u64, len: u64, now: SimTime) {
        self.ever_retx.insert(seq, seq + len);
        self.retrans_stamp.get_or_insert(now);
        if self.undo_marker.is_some() {
            // `tcp_retransmit_skb`: a -1 becomes 0 before the count.
            self.undo_retrans = self.undo_retrans.max(0) + 1;
        }
    }
}
