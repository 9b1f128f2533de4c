#![allow(dead_code, reason = "each test binary uses a part")]
pub mod containerd;
pub mod pods;
