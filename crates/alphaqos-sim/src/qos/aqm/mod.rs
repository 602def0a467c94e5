//! Active queue management: drop decisions made before the buffer is full.

pub mod red;
pub mod wred;
