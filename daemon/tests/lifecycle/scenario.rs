//! The scenario builder the lifecycle tests share: a fake host (placed-host's `fake`
//! kernel: cgroup tree, `/proc`, `/sys` in a temporary directory, processes with pids no
//! real process can have), a synthetic machine read from an hwloc XML file of the same
//! shape, models trained on made-up data for it, a state file left by a "previous run",
//! and the daemon started on all that in-process. Performance comes from pushed samples
//! ([`Running::feed`]), the one metric source that needs no real workload.
//!
//! Everything runs under tokio's paused clock: measurement windows, backoffs and watch
//! intervals pass as fast as the tasks can run, and a test synchronises on the daemon's
//! lifecycle events ([`Running::next`]), never on wall-clock time.

// A fixture that cannot build its own temporary host has failed its test: panicking with
// the error is the report it should give.
#![allow(clippy::unwrap_used, reason = "test fixture")]

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use placed::config::Config;
use placed::lifecycle::events::Sequenced;
use placed::lifecycle::{ContainerView, Daemon, Environment, Event, EventKind, ManageRequest};
use placed::state::{ContainerRecord, State, StateStore};
use placed::telemetry::{KindLabel, Metrics};
use placed_core::cpuset::{CpuSet, NodeSet};
use placed_core::machine::{Machine, TopologySource};
use placed_core::placement::{PlacementSet, important_placements};
use placed_core::policy::Policy;
use placed_core::reconcile::OnOverride;
use placed_host::cgroup::{CgroupPath, Version};
use placed_host::fake::FakeKernel;
use placed_host::migrate::HoldPoint;
use placed_host::observe::SourceSpec;
use placed_models::classes::Corpus;
use placed_models::forest::ForestParams;
use placed_models::{ClassesModel, Dataset, Model, SizesModel, TrainOptions};
use tokio::sync::broadcast::{Receiver, error::RecvError};
use tokio::task::JoinHandle;

/// Two NUMA nodes of 8 cores with 2 threads each (32 PUs, `0-31`, nodes `0-1`).
const TOPOLOGY: &str = "hwloc-xml/32em64t-2n8c2t-pci-normalio.xml";
pub const CPUS: &str = "0-31";
pub const MEMS: &str = "0-1";

/// Where every test container lives in the cgroup tree.
pub const PARENT: &str = "/ctr";

/// How long a test waits (in paused, virtual time) for an event before it fails: far longer
/// than any lifecycle step, so only a lifecycle that never gets there trips it.
const PATIENCE: Duration = Duration::from_secs(6 * 3600);

/// Interval of the pushed samples a feeder sends.
const FEED_EVERY: Duration = Duration::from_millis(100);

pub fn cg(name: &str) -> String {
    format!("{PARENT}/{name}")
}

/// The synthetic machine the fake host pretends to be.
pub fn machine() -> Machine {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/topologies")
        .join(TOPOLOGY);
    Machine::load(&TopologySource::XmlFile(path), None).expect("the test topology loads")
}

/// A model for `v` vCPUs on `machine`, trained on [`data`].
pub fn model(machine: &Machine, v: usize) -> Model {
    placed_models::fit(&data(machine, v), &options())
        .expect("the test model fits")
        .0
}

/// The forest the test models use: small, so that fitting is quick.
pub fn options() -> TrainOptions {
    TrainOptions {
        forest: ForestParams::new().n_trees(5),
        counters_as_inputs: false,
        ..TrainOptions::default()
    }
}

/// Made-up data for `v` vCPUs on `machine` where each placement's performance depends on
/// its index: four families, two rising and two falling.
pub fn data(machine: &Machine, v: usize) -> Dataset {
    let set = important_placements(machine, v).expect("placements for the test v");
    placed_models::fake::four_families(&set, |up, w, i| {
        let (j, step) = (0.01 * f64::from(w), 0.1 * i as f64);
        if up {
            1.0 + step + j
        } else {
            (1.0 - step / 2.0 - j).max(0.2)
        }
    })
}

/// What a test starts the daemon on.
pub struct Scenario {
    pub kernel: Arc<FakeKernel>,
    pub machine: Machine,
    pub config: Config,
    /// Where moves wait (fast mode only), when a test holds them there.
    pub hold: Option<HoldPoint>,
    dir: tempfile::TempDir,
    records: Vec<ContainerRecord>,
}

impl Scenario {
    /// A cgroup v1 fake host of the machine's shape with an empty `/ctr`, no container
    /// engines, no models and no state file. Measurements are short (1 s warm-up, six
    /// windows of 500 ms) and nothing counts as foreign load (nothing runs).
    pub fn new() -> Self {
        Self::on(Version::V1)
    }

    /// As [`Scenario::new`], on a cgroup v1 or v2 fake host (v2: the root offers cpuset).
    pub fn on(version: Version) -> Self {
        let kernel = match version {
            Version::V1 => FakeKernel::v1(CPUS, MEMS),
            Version::V2 => FakeKernel::v2(CPUS, MEMS, "cpuset"),
        };
        kernel.cgroup(PARENT, "", "");
        let dir = tempfile::tempdir().unwrap();
        let mut config = Config::default();
        config.daemon.state_file = dir.path().join("state.json");
        config.daemon.model_dir = dir.path().join("models");
        config.grpc.socket = dir.path().join("placed.sock");
        config.containers.runtimes = Vec::new();
        config.containers.cgroups = Vec::new();
        config.observe.warmup = Duration::from_secs(1);
        config.observe.window = Duration::from_millis(500);
        config.observe.windows = 6;
        config.observe.max_foreign_load = Some(1.0);
        // A steady feed measures the same everywhere, which the test models do not predict:
        // only the drift tests compare observations with predictions.
        config.policy.drift = 1e9;
        std::fs::create_dir_all(&config.daemon.model_dir).unwrap();
        Self {
            kernel,
            machine: machine(),
            config,
            hold: None,
            dir,
            records: Vec::new(),
        }
    }

    /// A container: cgroup `/ctr/<name>` on `cpus`/`mems` (empty: its parent's, the whole
    /// machine) with one process of two threads and 64 MiB on each of its nodes; returns
    /// its pid.
    pub fn container(&self, name: &str, cpus: &str, mems: &str) -> u32 {
        self.kernel.cgroup(&cg(name), "", "");
        if self.kernel.version == Version::V2 {
            // Its own cpuset files, as the daemon's first move would give it.
            let path = CgroupPath::parse(&cg(name)).unwrap();
            self.kernel.cgroups().prepare(&path).unwrap();
        }
        self.kernel.cgroup(&cg(name), cpus, mems);
        let pid = self.kernel.process(&cg(name), 2);
        let nodes: NodeSet = if mems.is_empty() { MEMS } else { mems }.parse().unwrap();
        let per_node: Vec<(u32, u64)> = nodes.iter().map(|n| (n, 64 << 20)).collect();
        self.kernel.set_memory(pid, &per_node);
        pid
    }

    /// Installs a model for `v` as `placed-train` would (trained once per test binary).
    pub fn with_model(self, v: usize) -> Self {
        static TRAINED: Mutex<BTreeMap<usize, Vec<u8>>> = Mutex::new(BTreeMap::new());
        let path = self
            .config
            .daemon
            .model_dir
            .join(format!("{}-v{v}.json", self.machine.fingerprint()));
        let mut trained = TRAINED.lock().unwrap_or_else(|p| p.into_inner());
        match trained.get(&v) {
            Some(bytes) => std::fs::write(&path, bytes).unwrap(),
            None => {
                let text = model(&self.machine, v).file_text().unwrap();
                std::fs::write(&path, text).unwrap();
                trained.insert(v, std::fs::read(&path).unwrap());
            }
        }
        drop(trained);
        self
    }

    /// Installs a model across sizes trained on `sizes` (its file named as `placed-train
    /// fit-sizes` suggests).
    pub fn with_sizes_model(self, sizes: &[usize]) -> Self {
        let data: Vec<Dataset> = sizes.iter().map(|&v| data(&self.machine, v)).collect();
        let (model, _) = SizesModel::fit(&data, &options()).expect("the sizes model fits");
        let path = self
            .config
            .daemon
            .model_dir
            .join(format!("{}-sizes.json", self.machine.fingerprint()));
        std::fs::write(&path, model.file_text().unwrap()).unwrap();
        self
    }

    /// Installs a model across machine classes trained on SIMULATED-like data
    /// (`placed_models::fake`) of the synthetic machines `topologies` at `v` vCPUs, none of
    /// them the test machine's class, as `placed-train classes build` would.
    pub fn with_classes_model(self, topologies: &[&str], v: usize) -> Self {
        let data: Vec<Dataset> = topologies
            .iter()
            .map(|t| {
                let machine = Machine::load(&TopologySource::Synthetic((*t).into()), None)
                    .expect("a synthetic machine");
                let set = important_placements(&machine, v).expect("placements for the size");
                placed_models::fake::class_data(&machine, &set)
            })
            .collect();
        // Twenty trees, not five: with five, leaving each class out did worse than the
        // category mean on all three, and the model would refuse every host.
        let options = TrainOptions {
            forest: ForestParams::new().n_trees(20),
            ..options()
        };
        let corpus = Corpus::new(&data, &options).expect("a corpus");
        let (model, _) = ClassesModel::fit(&corpus, &options).expect("the model fits");
        let path = self.config.daemon.model_dir.join("across-classes.json");
        std::fs::write(&path, model.file_text().unwrap()).unwrap();
        self
    }

    /// A record in the state file a previous run left.
    pub fn with_record(mut self, record: ContainerRecord) -> Self {
        self.records.push(record);
        self
    }

    /// Fast moves will wait after their first chunk while the returned hold point's file
    /// exists (the test creates it when it wants the next move held).
    pub fn hold_moves(&mut self) -> HoldPoint {
        let hold = HoldPoint {
            release: self.dir.path().join("hold"),
        };
        self.hold = Some(hold.clone());
        hold
    }

    pub fn placements(&self, v: usize) -> PlacementSet {
        important_placements(&self.machine, v).unwrap()
    }

    /// Writes the state file (if any record was given) and starts the daemon on the fake
    /// host.
    pub async fn start(self) -> Running {
        if !self.records.is_empty() {
            StateStore::new(self.config.daemon.state_file.clone())
                .save(&State {
                    written_unix_ms: 0,
                    unmanaged: Vec::new(),
                    reservations: Vec::new(),
                    stopped_models: Vec::new(),
                    fingerprint: self.machine.fingerprint().to_owned(),
                    containers: self.records.clone(),
                })
                .unwrap();
        }
        let metrics = Arc::new(Metrics::default());
        let env = Environment {
            machine: self.machine.clone(),
            host: self.kernel.host(),
            pmu: false,
            migration_hold: self.hold.clone(),
            // A fake host: what it measures is SIMULATED.
            provenance: placed_models::Provenance::Simulated,
        };
        let state_file = self.config.daemon.state_file.clone();
        let model_dir = self.config.daemon.model_dir.clone();
        let daemon = Daemon::start(self.config.clone(), env, metrics.clone())
            .await
            .expect("the daemon starts on the fake host");
        let events = daemon.events(None).unwrap().live;
        Running {
            daemon,
            kernel: self.kernel,
            machine: self.machine,
            metrics,
            events,
            seen: Vec::new(),
            feeders: Mutex::new(Vec::new()),
            state_file,
            model_dir,
            config: self.config,
            _dir: self.dir,
        }
    }
}

/// The pushed samples a feeder sends, changeable while it runs.
#[derive(Clone)]
pub struct Level(Arc<AtomicU64>);

impl Level {
    pub fn set(&self, v: f64) {
        self.0.store(v.to_bits(), Ordering::Relaxed);
    }
    fn get(&self) -> f64 {
        f64::from_bits(self.0.load(Ordering::Relaxed))
    }
}

/// The daemon running on a scenario.
pub struct Running {
    pub daemon: Daemon,
    pub kernel: Arc<FakeKernel>,
    pub machine: Machine,
    pub metrics: Arc<Metrics>,
    events: Receiver<Arc<Sequenced>>,
    /// Every event received so far, in order.
    pub seen: Vec<Event>,
    feeders: Mutex<Vec<JoinHandle<()>>>,
    state_file: PathBuf,
    model_dir: PathBuf,
    config: Config,
    _dir: tempfile::TempDir,
}

impl Drop for Running {
    fn drop(&mut self) {
        for f in self.feeders.lock().unwrap().drain(..) {
            f.abort();
        }
    }
}

/// A pushed gauge: the easiest deterministic metric.
pub fn pushed() -> Option<SourceSpec> {
    Some(SourceSpec::Pushed { counter: false })
}

impl Running {
    /// Stops the daemon as a SIGTERM would, and starts a new one on the same host, state
    /// file and models: a restart.
    pub async fn restart(mut self) -> Self {
        self.daemon.shutdown().await;
        let env = Environment {
            machine: self.machine.clone(),
            host: self.kernel.host(),
            pmu: false,
            migration_hold: None,
            // A fake host: what it measures is SIMULATED.
            provenance: placed_models::Provenance::Simulated,
        };
        let metrics = Arc::new(Metrics::default());
        self.daemon = Daemon::start(self.config.clone(), env, metrics.clone())
            .await
            .expect("the daemon starts again");
        self.metrics = metrics;
        self.events = self.daemon.events(None).unwrap().live;
        self
    }

    /// Takes `/ctr/<name>` under management with `v` vCPUs, `policy` and a pushed metric.
    pub async fn manage(&self, name: &str, v: usize, policy: Policy) -> ContainerView {
        self.manage_overridden(name, v, policy, None).await
    }

    /// As [`Running::manage`], with an override policy of its own (`None`: the default).
    pub async fn manage_overridden(
        &self,
        name: &str,
        v: usize,
        policy: Policy,
        on_override: Option<OnOverride>,
    ) -> ContainerView {
        self.daemon
            .manage(ManageRequest {
                container: cg(name),
                vcpus: Some(v),
                policy: Some(policy),
                metric: pushed(),
                on_override,
                ..ManageRequest::default()
            })
            .await
            .expect("manage")
    }

    /// Rewrites `/ctr/<name>`'s cpuset behind the daemon's back, as systemd or
    /// `docker update` would: plain writes of `cpuset.cpus` and `cpuset.mems`.
    pub fn rewrite(&self, name: &str, cpus: &CpuSet, mems: &NodeSet) {
        let path = CgroupPath::parse(&cg(name)).unwrap();
        let cgroups = self.kernel.cgroups();
        cgroups.set_cpus(&path, cpus).unwrap();
        cgroups.set_mems(&path, mems).unwrap();
    }

    /// Pushes `value` for `/ctr/<name>` every 100 ms from now on (refusals, before the
    /// container's metric source exists or after it vanished, are ignored as an
    /// application's would be); the returned level changes the value.
    pub fn feed(&self, name: &str, value: f64) -> Level {
        let level = Level(Arc::new(AtomicU64::new(value.to_bits())));
        let (daemon, id, l) = (self.daemon.clone(), cg(name), level.clone());
        let handle = tokio::spawn(async move {
            loop {
                let _ = daemon.report(&id, l.get(), None);
                tokio::time::sleep(FEED_EVERY).await;
            }
        });
        self.feeders.lock().unwrap().push(handle);
        level
    }

    /// Waits for the next event about `/ctr/<name>` that `want` accepts; fails the test
    /// when none comes within hours of virtual time.
    pub async fn next(&mut self, name: &str, want: impl Fn(&Event) -> bool) -> Event {
        self.next_about(&cg(name), want).await
    }

    /// As [`Running::next`], for events whose `container` is `id` (a reservation's id, for
    /// reservation events).
    pub async fn next_about(&mut self, id: &str, want: impl Fn(&Event) -> bool) -> Event {
        let id = id.to_owned();
        let found = tokio::time::timeout(PATIENCE, async {
            loop {
                match self.events.recv().await {
                    Ok(e) => {
                        self.seen.push(e.event.clone());
                        if e.event.container == id && want(&e.event) {
                            return e.event.clone();
                        }
                    }
                    Err(RecvError::Lagged(n)) => panic!("the test fell {n} events behind"),
                    Err(RecvError::Closed) => panic!("the daemon's event stream closed"),
                }
            }
        })
        .await;
        match found {
            Ok(e) => e,
            Err(_) => panic!(
                "no matching event for {id}; events so far:\n{}",
                self.seen
                    .iter()
                    .map(|e| format!("  {} {:?} {:?} {}", e.container, e.kind, e.state, e.message))
                    .collect::<Vec<_>>()
                    .join("\n")
            ),
        }
    }

    /// Waits until no operation holds `/ctr/<name>`: a step's last event (placed, watched)
    /// goes out before it has written the state file and let go of the container.
    pub async fn until_free(&mut self, name: &str) {
        let id = cg(name);
        let free = tokio::time::timeout(PATIENCE, async {
            while self.daemon.container(&id).is_ok_and(|v| v.doing.is_some()) {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await;
        assert!(free.is_ok(), "{id} stayed busy");
        self.drain();
    }

    /// Lets `d` of virtual time pass, collecting the events sent meanwhile.
    pub async fn idle(&mut self, d: Duration) {
        tokio::time::sleep(d).await;
        self.drain();
    }

    /// Collects the events already sent.
    pub fn drain(&mut self) {
        while let Ok(e) = self.events.try_recv() {
            self.seen.push(e.event.clone());
        }
    }

    /// The events about `/ctr/<name>` of `kind` seen so far.
    pub fn seen(&self, name: &str, kind: EventKind) -> Vec<Event> {
        let id = cg(name);
        self.seen
            .iter()
            .filter(|e| e.container == id && e.kind == kind)
            .cloned()
            .collect()
    }

    pub fn state_file(&self) -> PathBuf {
        self.state_file.clone()
    }

    pub fn model_dir(&self) -> PathBuf {
        self.model_dir.clone()
    }

    pub fn placements_for(&self, v: usize) -> PlacementSet {
        important_placements(&self.machine, v).unwrap()
    }

    /// The daemon's production data file for containers of `v` vCPUs.
    pub fn production_file(&self, v: usize) -> PathBuf {
        self.state_file
            .parent()
            .expect("a state dir")
            .join("production")
            .join(format!("{}-v{v}.jsonl", self.placements_for(v).fingerprint))
    }

    /// The container's record as the daemon holds it.
    pub fn record(&self, name: &str) -> ContainerRecord {
        self.daemon.container(&cg(name)).expect("managed").record
    }

    /// The container's records in the state file on disk.
    pub fn on_disk(&self, name: &str) -> Option<ContainerRecord> {
        let state = StateStore::new(self.state_file.clone())
            .load(self.machine.fingerprint())
            .unwrap()?;
        state.containers.into_iter().find(|r| r.id == cg(name))
    }

    /// What the fake kernel's cpuset of `/ctr/<name>` holds now.
    pub fn cpuset(&self, name: &str) -> (CpuSet, NodeSet) {
        let rel = cg(name);
        let (cpus, mems) = match self.kernel.version {
            Version::V1 => ("cpuset.cpus", "cpuset.mems"),
            Version::V2 => ("cpuset.cpus.effective", "cpuset.mems.effective"),
        };
        (
            self.kernel.file(&format!("{rel}/{cpus}")).parse().unwrap(),
            self.kernel.file(&format!("{rel}/{mems}")).parse().unwrap(),
        )
    }

    /// Errors the daemon counted, by kind (`lifecycle`, `enact`, `state`, ...).
    pub fn errors(&self, kind: &str) -> u64 {
        self.metrics
            .errors
            .get_or_create(&KindLabel { kind: kind.into() })
            .get()
    }
}
