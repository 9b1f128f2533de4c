//! Admission and capacity answer times with many managed containers, in-process on
//! placed-host's fake kernel (no root): `cargo bench -p placed --bench admission [--
//! --containers N --calls C]`.
//!
//! The machine is synthetic, 224 PUs in 8 NUMA nodes of 14 cores with 2 threads
//! (`pack:8 numa:1 l3:1 core:14 pu:2`), with N managed containers (default 500) under the
//! observe policy, so that they hold no units and every admission sees the whole machine
//! to decide on. Each call is timed from the daemon's API (`Daemon::admit`,
//! `Daemon::capacity`), as the gRPC handlers call it; the medians and p99 are printed.
//! Answer times on this shared 2-core VM are indicative only.

use std::sync::Arc;
use std::time::{Duration, Instant};

use placed::config::Config;
use placed::lifecycle::{AdmitRequest, Daemon, Environment, ManageRequest};
use placed::telemetry::Metrics;
use placed_core::machine::{Machine, TopologySource};
use placed_core::policy::Policy;
use placed_host::fake::FakeKernel;

const SHAPE: &str = "pack:8 numa:1 l3:1 core:14 pu:2";

fn arg(name: &str, default: usize) -> usize {
    let a: Vec<String> = std::env::args().collect();
    a.iter()
        .position(|x| x == name)
        .and_then(|i| a.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The `pct`-th percentile of sorted times (nearest rank below).
fn percentile(sorted: &[Duration], pct: usize) -> Duration {
    sorted[(sorted.len() - 1) * pct / 100]
}

fn report(what: &str, mut times: Vec<Duration>) {
    times.sort();
    println!(
        "{what:<40} median {:>9.3} ms   p99 {:>9.3} ms   ({} calls)",
        percentile(&times, 50).as_secs_f64() * 1e3,
        percentile(&times, 99).as_secs_f64() * 1e3,
        times.len()
    );
}

fn main() {
    let containers = arg("--containers", 500);
    let calls = arg("--calls", 1000);
    let machine = Machine::load(&TopologySource::Synthetic(SHAPE.into()), None)
        .expect("the synthetic machine");
    let cpus = machine.pus.usable.to_string();
    let kernel = FakeKernel::v1(&cpus, "0-7");
    kernel.cgroup("/ctr", "", "");
    for i in 0..containers {
        let name = format!("/ctr/c{i}");
        kernel.cgroup(&name, "", "");
        kernel.process(&name, 1);
    }
    let dir = tempfile::tempdir().expect("a scratch directory");
    let mut config = Config::default();
    config.daemon.state_file = dir.path().join("state.json");
    config.daemon.model_dir = dir.path().join("models");
    config.containers.runtimes = Vec::new();
    config.containers.cgroups = Vec::new();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let env = Environment {
            machine: machine.clone(),
            host: kernel.host(),
            pmu: false,
            migration_hold: None,
        };
        let daemon = Daemon::start(config, env, Arc::new(Metrics::default()))
            .await
            .expect("the daemon starts");
        for i in 0..containers {
            manage(&daemon, i).await;
        }
        println!(
            "{} PUs, {} NUMA nodes, {containers} managed containers (SIMULATED machine, fake host)",
            machine.pus.usable.len(),
            machine.units.len()
        );
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

async fn manage(daemon: &Daemon, i: usize) {
    daemon
        .manage(ManageRequest {
            container: format!("/ctr/c{i}"),
            vcpus: Some(2),
            policy: Some(Policy::Observe),
            ..ManageRequest::default()
        })
        .await
        .expect("managed");
}
