//! Run a resolved configuration (JSON, docs/engine-config.md) and print the
//! engine's speed: for profiling the event loop without Python.
//!
//! cargo run --release -p alphaqos-sim --example run_config -- config.json

use std::time::Instant;

fn main() {
    let path = std::env::args().nth(1).expect("usage: run_config CONFIG.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut sim = alphaqos_sim::Simulation::from_json(&text).unwrap_or_else(|e| panic!("{path}: {e}"));
    let start = Instant::now();
    sim.run();
    let wall = start.elapsed().as_secs_f64();
    let simulated = sim.duration().as_nanos() as f64 * 1e-9;
    println!(
        "{} events in {wall:.2} s: {:.2} M events/s, {:.2} simulated s per wall s",
        sim.events(),
        sim.events() as f64 / wall / 1e6,
        simulated / wall
    );
}
