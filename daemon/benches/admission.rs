//! Admission and capacity answer times with many managed containers, in-process on
//! placed-host's fake kernel (no root): `cargo bench -p placed --bench admission [--
//! --containers N --calls C]`.
//!
//! The machine is synthetic (support/crowded.rs: 224 PUs in 8 NUMA nodes) with N managed
//! containers (default 500) under the observe policy, so that they hold no units and every
//! admission sees the whole machine to decide on. Each call is timed from the daemon's API
//! (`Daemon::admit`, `Daemon::capacity`), as the gRPC handlers call it; the medians and
//! p99 are printed. Answer times on this shared 2-core VM are indicative only.

#[path = "support/crowded.rs"]
mod crowded;

use std::time::Instant;

use placed::lifecycle::AdmitRequest;
use placed_core::policy::Policy;

use crowded::{Crowd, arg, report};

fn main() {
    let calls = arg("--calls", 1000);
    let crowd = Crowd::new(arg("--containers", 500));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let daemon = crowd.start().await;
        for (v, policy) in [
            (28, Policy::SmartAggressive),
            (56, Policy::SmartAggressive),
            (28, Policy::Conservative),
        ] {
            let mut times = Vec::with_capacity(calls);
            for _ in 0..calls {
                let req = AdmitRequest {
                    name: "bench".into(),
                    vcpus: v,
                    policy: Some(policy.clone()),
                    ..AdmitRequest::default()
                };
                let t = Instant::now();
                daemon.admit(req).await.expect("admitted");
                times.push(t.elapsed());
            }
            report(&format!("Admit v={v} {}", policy.name()), times);
        }
        let mut times = Vec::with_capacity(calls);
        for _ in 0..calls {
            let t = Instant::now();
            let c = daemon.capacity(&[14, 28, 56]);
            std::hint::black_box(c);
            times.push(t.elapsed());
        }
        report("GetCapacity sizes 14, 28, 56", times);
        daemon.shutdown().await;
    });
}
