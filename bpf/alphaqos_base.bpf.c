// SPDX-License-Identifier: GPL-2.0
//
// alphaqos_base: the base connection's window control of the deadline-driven
// transfer over DiffServ AF networks (source document 003, the slides
// "deadline-driven file transfer over DiffServ AF networks": "Method for
// window size control for base flow" and "Increment algorithm for the base
// flow") as a Linux TCP congestion control in BPF (struct_ops, bpf_tcp_ca).
//
// It is the simulator's `base_flow` controller
// (crates/alphaqos-sim/src/tcp/cc/base_flow.rs) in the kernel's units:
// windows in segments of tp->mss_cache, RTT in microseconds from the ACK
// samples the stack hands to pkts_acked, averaged over each round trip (see
// aq_pkts_acked for why not the latest sample).
//
// The committed target rate (CTR, bit/s) of each socket is in the
// socket-storage map `alphaqos_cc_sk`, pinned at /sys/fs/bpf/alphaqos_cc_sk;
// user space (crates/alphaqos-bpfcc) writes it with the socket's fd as the
// key. A socket without an entry (or with a zero target) behaves as Reno.
// See docs/transfer-bpf.md.
//
// Built by `make build` with Debian's clang against a vmlinux.h that the
// Makefile dumps from /sys/kernel/btf/vmlinux into target/bpf/.

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "alphaqos_base.h"

char _license[] SEC("license") = "GPL";

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct aq_base);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} alphaqos_cc_sk SEC(".maps");

// The kernel's Reno and slow start, exported to BPF congestion controls as kfuncs.
extern void tcp_reno_cong_avoid(struct sock *sk, __u32 ack, __u32 acked) __ksym;
extern __u32 tcp_reno_ssthresh(struct sock *sk) __ksym;
extern __u32 tcp_reno_undo_cwnd(struct sock *sk) __ksym;
extern __u32 tcp_slow_start(struct tcp_sock *tp, __u32 acked) __ksym;

static __always_inline struct tcp_sock *tcp_sk(const struct sock *sk)
{
	return (struct tcp_sock *)sk;
}

// The stack's own test (include/net/tcp.h, tcp_is_cwnd_limited): in slow
// start, grow while cwnd < twice what was in flight; afterwards, only when
// the window limited the last flight.
static __always_inline bool cwnd_limited(const struct tcp_sock *tp)
{
	if (tp->snd_cwnd < tp->snd_ssthresh)
		return tp->snd_cwnd < 2 * tp->max_packets_out;
	return !!BPF_CORE_READ_BITFIELD(tp, is_cwnd_limited);
}

static __always_inline struct aq_base *entry(struct sock *sk)
{
	struct aq_base *st = bpf_sk_storage_get(&alphaqos_cc_sk, sk, 0, 0);

	if (!st || st->target_bps == 0)
		return 0;
	if (st->applied_bps != st->target_bps) {
		// A new target (user space's set_target): it applies from this
		// ACK, with a fresh round (base_flow.rs, target_rate).
		st->applied_bps = st->target_bps;
		st->round_valid = 0;
		st->target_changes++;
	}
	return st;
}

// cwnd_max = CTR x RTT (slides, "method for window size control for base
// flow"; base_flow.rs, cwnd_max): bytes = bit/s x us / 8e6, in segments
// rounded to the nearest (the simulator's window is in bytes; rounding down
// would hold the kernel's half a segment below it on average), at least 2,
// at most the socket's clamp. 0 before the first
// RTT sample. The product stays in 64 bits: RTT below 2^26 us (67 s), the
// target below 2^40 bit/s (1.1 Tbit/s); beyond either, the clamp.
static __always_inline __u32 cwnd_max(const struct aq_base *st, const struct tcp_sock *tp)
{
	__u64 rtt = st->rtt_us, mss = tp->mss_cache, bytes_per_s = st->target_bps / 8, segs;
	__u32 clamp = tp->snd_cwnd_clamp;

	if (rtt == 0)
		return 0;
	if (mss == 0)
		mss = 1;
	if (rtt >= (1ULL << 26) || bytes_per_s >= (1ULL << 37))
		segs = clamp;
	else
		segs = (bytes_per_s * rtt / 1000000 + mss / 2) / mss;
	if (segs < 2)
		segs = 2;
	if (segs > clamp)
		segs = clamp;
	return (__u32)segs;
}

// Binary search increase (slides, "increment algorithm for the base flow",
// as in TCP BIC; base_flow.rs, binary_increase): each round trip
// cwnd_n = cwnd_{n-1} + clamp((cwnd_max - cwnd_{n-1}) / 2, min_inc, max_inc),
// the step fixed at the round's start and spread over the round's ACKed
// segments; a round ends when the ACK passes the snd_nxt noted at its start.
static __always_inline void binary_increase(struct aq_base *st, struct tcp_sock *tp,
					    __u32 ack, __u32 acked, __u32 max)
{
	__u32 cwnd = tp->snd_cwnd, grow;
	__u64 num;

	if (!st->round_valid || (__s32)(ack - st->round_end) > 0) {
		__u32 step = (max - cwnd) / 2;

		if (step < AQ_MIN_INCREMENT)
			step = AQ_MIN_INCREMENT;
		if (step > AQ_MAX_INCREMENT)
			step = AQ_MAX_INCREMENT;
		st->round_valid = 1;
		st->round_end = tp->snd_nxt;
		st->step = step;
		st->round_cwnd = cwnd ? cwnd : 1;
		st->rem = 0;
		st->rounds++;
	}
	num = (__u64)acked * st->step + st->rem;
	grow = num / st->round_cwnd;
	st->rem = num % st->round_cwnd;
	cwnd += grow;
	if (cwnd > max)
		cwnd = max;
	tp->snd_cwnd = cwnd;
}

SEC("struct_ops/aq_init")
void BPF_PROG(aq_init, struct sock *sk)
{
	struct aq_base *st = entry(sk);

	if (st)
		st->state = AQ_SLOW_START;
}

// The RTT of CTR x RTT, from the ACKs' RTT samples (base_flow.rs,
// on_measure). The simulator's default filter takes the latest sample: its
// samples vary only with the queues. A real host's samples also jitter from
// ACK to ACK (delayed ACKs, interrupt and scheduling latency: 0.2-2 ms at
// 20 ms here); since a window above cwnd_max drops at once while one below
// grows by binary search over round trips, the latest sample would hold the
// window at about CTR x (the smallest sample of each round), below CTR x
// the mean RTT the data sees. So the kernel's estimate is the mean sample
// of the last round trip (a round ends when snd_una passes the snd_nxt
// noted at its start), updated once per round; before the first round ends,
// the latest sample. Where samples do not jitter within a round the two
// filters agree. A window above the new cwnd_max drops to it at once
// (slides: the window "decreases immediately" when the RTT falls;
// base_flow.rs, on_ack), also outside congestion avoidance.
SEC("struct_ops/aq_pkts_acked")
void BPF_PROG(aq_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct aq_base *st;
	__u32 max;
	__s32 rtt = sample->rtt_us;

	if (rtt <= 0)
		return;
	st = entry(sk);
	if (!st)
		return;
	if (st->min_rtt_us == 0 || (__u32)rtt < st->min_rtt_us)
		st->min_rtt_us = rtt;
	st->rtt_sum_us += rtt;
	st->rtt_n++;
	if (st->rtt_us == 0) {
		st->rtt_us = rtt;
		st->rtt_round_end = tp->snd_nxt;
	} else if ((__s32)(tp->snd_una - st->rtt_round_end) > 0) {
		st->rtt_us = st->rtt_sum_us / st->rtt_n;
		st->rtt_sum_us = 0;
		st->rtt_n = 0;
		st->rtt_round_end = tp->snd_nxt;
	} else {
		return;
	}
	max = cwnd_max(st, tp);
	st->cwnd_max = max;
	if (tp->snd_cwnd > max) {
		tp->snd_cwnd = max;
		if (tp->snd_ssthresh > max)
			tp->snd_ssthresh = max;
		st->round_valid = 0;
		st->drops++;
	}
	st->cwnd = tp->snd_cwnd;
}

SEC("struct_ops/aq_cong_avoid")
void BPF_PROG(aq_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct aq_base *st = entry(sk);
	__u32 max;

	if (!st) {
		tcp_reno_cong_avoid(sk, ack, acked);
		return;
	}
	max = cwnd_max(st, tp);
	st->cwnd_max = max;
	if (max == 0) {
		// No RTT sample yet: slow start, as NewReno (base_flow.rs, on_ack).
		if (cwnd_limited(tp) && tp->snd_cwnd < tp->snd_ssthresh)
			tcp_slow_start(tp, acked);
		goto out;
	}
	if (tp->snd_cwnd > max) {
		// The RTT fell (or the target did): back to the CTR window at once.
		tp->snd_cwnd = max;
		if (tp->snd_ssthresh > max)
			tp->snd_ssthresh = max;
		st->round_valid = 0;
		st->state = AQ_HOLD;
		goto out;
	}
	if (!cwnd_limited(tp))
		goto out;
	if (tp->snd_cwnd < tp->snd_ssthresh) {
		// Slow start until cwnd first reaches cwnd_max, which then
		// becomes ssthresh (base_flow.rs, on_ack).
		st->state = AQ_SLOW_START;
		tcp_slow_start(tp, acked);
		if (tp->snd_cwnd >= max) {
			tp->snd_cwnd = max;
			tp->snd_ssthresh = max;
			st->round_valid = 0;
			st->state = AQ_HOLD;
		}
		goto out;
	}
	if (tp->snd_cwnd < max) {
		st->state = AQ_INCREASE;
		binary_increase(st, tp, ack, acked, max);
	}
	// Close enough: snap to cwnd_max (slides: "if diff(cwnd_{n-1},
	// cwnd_max) < alpha then cwnd_n = cwnd_max").
	if (max - tp->snd_cwnd < AQ_ALPHA) {
		tp->snd_cwnd = max;
		st->state = AQ_HOLD;
	}
out:
	st->cwnd = tp->snd_cwnd;
}

// Loss (the slides do not say; base_flow.rs, ssthresh_after_loss): the flow
// holds a reservation, so a loss does not take it below the window it is
// entitled to: ssthresh = max(min(cwnd, cwnd_max), 2), no halving. Before the
// first RTT sample, Reno's max(cwnd / 2, 2). A timeout restarts from one
// segment and slow starts back to this ssthresh (the stack does that).
SEC("struct_ops/aq_ssthresh")
__u32 BPF_PROG(aq_ssthresh, struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct aq_base *st = entry(sk);
	__u32 max, w;

	if (!st)
		return tcp_reno_ssthresh(sk);
	max = cwnd_max(st, tp);
	st->round_valid = 0;
	st->losses++;
	if (max == 0)
		return tcp_reno_ssthresh(sk);
	w = tp->snd_cwnd < max ? tp->snd_cwnd : max;
	st->state = AQ_RECOVERY;
	return w > 2 ? w : 2;
}

// Undo after a spurious loss signal: the window from before it (Reno's
// max(cwnd, prior_cwnd)), which the next ACK brings down to cwnd_max if it
// is above.
SEC("struct_ops/aq_undo_cwnd")
__u32 BPF_PROG(aq_undo_cwnd, struct sock *sk)
{
	return tcp_reno_undo_cwnd(sk);
}

// Leaving recovery: cwnd at most cwnd_max (base_flow.rs, on_recovery_exit).
SEC("struct_ops/aq_set_state")
void BPF_PROG(aq_set_state, struct sock *sk, __u8 new_state)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct aq_base *st;
	__u32 max;

	if (new_state != TCP_CA_Open)
		return;
	st = entry(sk);
	if (!st)
		return;
	st->round_valid = 0;
	max = cwnd_max(st, tp);
	if (max && tp->snd_cwnd > max)
		tp->snd_cwnd = max;
	if (st->state == AQ_RECOVERY)
		st->state = AQ_HOLD;
	st->cwnd = tp->snd_cwnd;
}

SEC(".struct_ops")
struct tcp_congestion_ops alphaqos_base = {
	.init = (void *)aq_init,
	.ssthresh = (void *)aq_ssthresh,
	.cong_avoid = (void *)aq_cong_avoid,
	.pkts_acked = (void *)aq_pkts_acked,
	.set_state = (void *)aq_set_state,
	.undo_cwnd = (void *)aq_undo_cwnd,
	.name = "alphaqos_base",
};
