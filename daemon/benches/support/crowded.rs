//! A daemon crowded with managed containers, in-process on placed-host's fake kernel (no
//! root), for the answer-time benches: a synthetic 224-PU machine of 8 NUMA nodes of 14
//! cores with 2 threads (`pack:8 numa:1 l3:1 core:14 pu:2`), N containers under the observe
//! policy (2 vCPUs each, holding no units, so every decision sees the whole machine), and
//! the command-line arguments and percentiles the benches print.

// Each bench uses a part.
#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use placed::config::Config;
use placed::lifecycle::{Daemon, Environment, ManageRequest};
use placed::telemetry::Metrics;
use placed_core::machine::{Machine, TopologySource};
use placed_core::policy::Policy;
use placed_host::fake::FakeKernel;

const SHAPE: &str = "pack:8 numa:1 l3:1 core:14 pu:2";

/// `--name N` from the bench's arguments, or `default`.
pub fn arg(name: &str, default: usize) -> usize {
    let a: Vec<String> = std::env::args().collect();
    a.iter()
        .position(|x| x == name)
        .and_then(|i| a.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Prints the median and p99 of `times` (nearest rank below).
pub fn report(what: &str, mut times: Vec<Duration>) {
    times.sort();
    let at = |pct: usize| times[(times.len() - 1) * pct / 100].as_secs_f64() * 1e3;
    println!(
        "{what:<48} median {:>9.3} ms   p99 {:>9.3} ms   ({} calls)",
        at(50),
        at(99),
        times.len()
    );
}

/// The fake host and the daemon's configuration, before it starts.
pub struct Crowd {
    pub machine: Machine,
    pub config: Config,
    kernel: Arc<FakeKernel>,
    containers: usize,
    pub dir: tempfile::TempDir,
}

impl Crowd {
    /// The machine with `containers` cgroups `/ctr/c<i>`, each with a process.
    pub fn new(containers: usize) -> Self {
        let machine = Machine::load(&TopologySource::Synthetic(SHAPE.into()), None)
            .expect("the synthetic machine");
        let kernel = FakeKernel::v1(&machine.pus.usable.to_string(), "0-7");
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
        Self {
            machine,
            config,
            kernel,
            containers,
            dir,
        }
    }

    /// Starts the daemon and manages every container.
    pub async fn start(&self) -> Daemon {
        let env = Environment {
            machine: self.machine.clone(),
            host: self.kernel.host(),
            pmu: false,
            migration_hold: None,
            // A fake host: what it measures is SIMULATED.
            provenance: placed_models::Provenance::Simulated,
        };
        let daemon = Daemon::start(self.config.clone(), env, Arc::new(Metrics::default()))
            .await
            .expect("the daemon starts");
        for i in 0..self.containers {
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
        println!(
            "{} PUs, {} NUMA nodes, {} managed containers (SIMULATED machine, fake host)",
            self.machine.pus.usable.len(),
            self.machine.units.len(),
            self.containers
        );
        daemon
    }
}
