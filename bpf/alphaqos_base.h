/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The per-socket value of the `alphaqos_cc_sk` socket-storage map, shared
 * by alphaqos_base.bpf.c and crates/alphaqos-bpfcc/src/lib.rs (`RawEntry`,
 * same layout, repr(C)). User space writes target_bps; the controller
 * writes the rest.
 */
#ifndef ALPHAQOS_BASE_H
#define ALPHAQOS_BASE_H

/* Step bounds and snap distance of the binary increase, segments
 * (base_flow.rs defaults: min_increment_segments 1, max_increment_segments
 * 64, alpha_segments 2). */
#define AQ_MIN_INCREMENT 1
#define AQ_MAX_INCREMENT 64
#define AQ_ALPHA 2

/* state */
#define AQ_RENO 0        /* no target yet: Reno */
#define AQ_SLOW_START 1
#define AQ_INCREASE 2    /* binary increase towards cwnd_max */
#define AQ_HOLD 3        /* at cwnd_max */
#define AQ_RECOVERY 4    /* after a loss signal, until the stack is back in Open */

struct aq_base {
	__u64 target_bps;     /* committed target rate, bit/s (user space) */
	__u64 applied_bps;    /* the target the controller last saw */
	__u64 rtt_sum_us;     /* this round's RTT samples: sum ... */
	__u32 rtt_n;          /* ... and count */
	__u32 rtt_round_end;  /* the round ends when snd_una passes it */
	__u32 rtt_us;         /* the RTT of CTR x RTT: the last round's mean sample */
	__u32 min_rtt_us;     /* smallest RTT sample */
	__u32 cwnd_max;       /* CTR x RTT, segments (0 before an RTT sample) */
	__u32 cwnd;           /* snd_cwnd after the controller's last decision, segments */
	__u32 round_end;      /* binary increase: the round ends when an ACK passes it */
	__u32 step;           /* the round's step, segments */
	__u32 round_cwnd;     /* cwnd at the round's start, segments */
	__u32 rem;            /* remainder of the step's spread */
	__u32 state;
	__u32 round_valid;
	__u32 rounds;         /* binary-increase rounds started */
	__u32 drops;          /* immediate drops to cwnd_max on a falling RTT */
	__u32 losses;         /* loss signals (ssthresh calls) */
	__u32 target_changes; /* targets applied */
};

#endif
