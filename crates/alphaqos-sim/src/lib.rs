//! alphaqos-sim: a deterministic packet-level simulator of the mechanisms
//! routers and hosts run for bulk science-data transfers.
//!
//! One call runs a scenario: [`Simulation::from_json`] builds the network
//! from a resolved configuration (docs/engine-config.md), [`Simulation::advance`]
//! runs the event loop, [`Simulation::results`] returns columnar tables.
//! No Python here: the bindings live in `alphaqos-py`.

pub mod apps;
pub mod bookings;
pub mod builder;
pub mod check;
pub mod config;
pub mod conn;
pub mod control;
pub mod egress;
pub mod error;
pub mod event;
pub mod knob;
pub mod metrics;
pub mod monitor;
pub mod network;
pub mod packet;
pub mod qos;
pub mod recorder;
pub mod rng;
pub mod summary;
pub mod sim;
pub mod tap;
pub mod tcp;
pub mod time;
pub mod trace;
pub mod topology;
pub mod units;
pub mod workload;
pub mod world;

pub use config::Config;
pub use metrics::{Column, Table};
pub use sim::Simulation;
pub use time::{Duration, SimTime};
pub use units::{Bytes, DataRate};

pub const VERSION: &str = env!("CARGO_PKG_VERSION");
