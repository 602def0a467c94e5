//! An MPEG-like video source over UDP: frames at a fixed rate in a group
//! of pictures (GOP) of I, P and B frames, each frame cut into packets of
//! one size and paced evenly over the frame interval.
//!
//! What it models: the fifth source document's "MPEG video flow" (Bouras &
//! Sevasti, Table 1: 333 kb/s mean, 200-byte packets), for which it gives
//! no trace. A documented substitute: the GOP `IBBPBBPBBPBB` (N = 12,
//! M = 3, the MPEG-1 pattern of the traces of Rose, "Statistical properties
//! of MPEG video traffic and their impact on traffic modeling in ATM
//! systems", 1995) at 25 frames/s; frame sizes in the ratio I : P : B =
//! 5 : 3 : 1 (of the order of those traces' means), each multiplied by a
//! lognormal factor of mean 1 and log-deviation `sigma` (default 0.3), so
//! frames vary around their type's mean. The type means are scaled so that
//! a GOP averages `mean_rate_bps`.
//!
//! Frames are cut into `size_bytes` packets; the bytes a frame leaves short
//! of a whole packet are carried to the next frame, so the long-run rate is
//! the mean rate exactly (up to the lognormal draws' own average).
//!
//! Parameters: `mean_rate_bps`, `size_bytes`, `fps` (25), `sigma` (0.3).
//!
//! Tests: `tests/traffic_models.rs` (mean rate within 3 % over a long run;
//! I frames larger than P, P larger than B).

use crate::event::FlowTimer;
use crate::packet::Payload;
use crate::rng::Rng;
use crate::tcp::{LazyTimer, Wire};
use crate::time::SimTime;

/// The GOP pattern, N = 12, M = 3.
pub const GOP: &[u8; 12] = b"IBBPBBPBBPBB";
/// Relative mean sizes of I, P and B frames.
pub const RATIO_I: f64 = 5.0;
pub const RATIO_P: f64 = 3.0;
pub const RATIO_B: f64 = 1.0;

pub struct Video {
    size: u32,
    /// Frame interval, ns.
    frame_ns: f64,
    /// Mean bytes of a frame of each type: I, P, B.
    type_mean: [f64; 3],
    sigma: f64,
    rng: Rng,
    seq: u64,
    active: bool,
    frame: u64,
    frame_start: f64,
    /// Bytes owed to the next frame (less than one packet).
    credit: f64,
    /// Packets of the current frame: sent so far and in all.
    sent: u64,
    count: u64,
    send: LazyTimer,
    next_frame: LazyTimer,
}

impl Video {
    pub fn new(mean_rate_bps: u64, size: u32, fps: f64, sigma: f64, rng: Rng) -> Self {
        let mean_frame = mean_rate_bps as f64 / 8.0 / fps;
        let ratio = |c: u8| match c {
            b'I' => RATIO_I,
            b'P' => RATIO_P,
            _ => RATIO_B,
        };
        let gop_mean = GOP.iter().map(|&c| ratio(c)).sum::<f64>() / GOP.len() as f64;
        let unit = mean_frame / gop_mean;
        Video {
            size,
            frame_ns: 1e9 / fps,
            type_mean: [RATIO_I * unit, RATIO_P * unit, RATIO_B * unit],
            sigma,
            rng,
            seq: 0,
            active: false,
            frame: 0,
            frame_start: 0.0,
            credit: 0.0,
            sent: 0,
            count: 0,
            send: LazyTimer::default(),
            next_frame: LazyTimer::default(),
        }
    }

    /// Mean bytes of an I, P and B frame.
    pub fn type_means(&self) -> [f64; 3] {
        self.type_mean
    }

    /// The size of the next frame in bytes: its type's mean times a
    /// lognormal factor of mean 1 (mu = -sigma^2 / 2), by Box-Muller.
    fn frame_bytes(&mut self) -> f64 {
        let t = match GOP[(self.frame % GOP.len() as u64) as usize] {
            b'I' => 0,
            b'P' => 1,
            _ => 2,
        };
        let u = self.rng.uniform();
        let z = crate::workload::dist::std_normal(u, &mut self.rng);
        self.type_mean[t] * (self.sigma * z - self.sigma * self.sigma / 2.0).exp()
    }

    fn start_frame(&mut self, w: &mut impl Wire) {
        self.frame_start = w.now().as_nanos() as f64;
        let bytes = self.frame_bytes() + self.credit;
        self.count = (bytes / self.size as f64).floor() as u64;
        self.credit = bytes - (self.count * self.size as u64) as f64;
        self.sent = 0;
        self.frame += 1;
        self.next_frame.set(SimTime((self.frame_start + self.frame_ns).round() as u64), FlowTimer::Step, w);
        self.send.clear();
        if self.count > 0 {
            self.send.set(w.now(), FlowTimer::Send, w);
        }
    }

    pub fn on_timer(&mut self, t: FlowTimer, w: &mut impl Wire) {
        match t {
            FlowTimer::Start => {
                self.active = true;
                // A random place in the GOP, so that flows do not start in step.
                self.frame = (self.rng.uniform() * GOP.len() as f64) as u64;
                self.start_frame(w);
            }
            FlowTimer::Step if self.active => {
                if self.next_frame.fire(FlowTimer::Step, w) {
                    self.start_frame(w);
                }
            }
            FlowTimer::Send if self.active => {
                if !self.send.fire(FlowTimer::Send, w) {
                    return;
                }
                w.send(Payload::Udp { seq: self.seq }, self.size);
                self.seq += 1;
                self.sent += 1;
                if self.sent < self.count {
                    // Paced evenly over the frame interval.
                    let at = self.frame_start + self.sent as f64 * self.frame_ns / self.count as f64;
                    self.send.set(SimTime(at.round() as u64), FlowTimer::Send, w);
                }
            }
            FlowTimer::Stop => {
                self.active = false;
                self.send.clear();
                self.next_frame.clear();
            }
            _ => {}
        }
    }
}

super::udp_app!(Video, "video");
