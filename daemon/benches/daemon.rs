//! The daemon under load, on this host (root, cgroup v1 or v2): `cargo bench -p placed
//! --bench daemon [-- --containers N --rate R --seconds S]`.
//!
//! 1. Resources: the real `placed` managing N containers (default 100; cgroups with a
//!    `sleep` each) that push one performance sample per second each, as a container
//!    observed with 1 s windows does; CPU time and resident memory of the daemon over the
//!    run.
//! 2. gRPC latency, p50 and p99: `Predict` and `ReportMetric` at R requests/s (default
//!    1,000) from 16 concurrent clients on the Unix socket. This host has one placement per
//!    container size, so no model can exist here: the containers' predictions are seeded
//!    into the state file (marked simulated) and `Predict` serves them, which is the path
//!    orchestrators hit once a container is predicted.
//! 3. Time from a container's appearance (cgroup created, task attached) to its placement
//!    (cpuset rewritten) under a pinned policy, median of 10. Each container
//!    has a CPU quota of one CPU, so its v is 1 and its placement differs from where it
//!    starts (v1 hosts: the cpu controller beside cpuset).
//!
//! Figures from this shared 2-core VM are indicative only; medians over repeated runs are
//! what the closing notes report.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use placectl::client::{self, Target};
use placed::state::{
    ContainerRecord, Lifecycle, ObservationRecord, PredictedRecord, PredictionRecord, State,
    StateStore,
};
use placed_core::cpuset::{CpuSet, NodeSet};
use placed_core::machine::{Machine, TopologySource};
use placed_core::policy::Policy;
use placed_host::cgroup::{CgroupPath, Cgroups};
use placed_host::enact::Host;
use placed_proto::v1 as pb;

struct Args {
    containers: usize,
    rate: u64,
    seconds: u64,
}

fn args() -> Args {
    let a: Vec<String> = std::env::args().collect();
    let get = |name: &str, default: u64| {
        a.iter()
            .position(|x| x == name)
            .and_then(|i| a.get(i + 1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    Args {
        containers: usize::try_from(get("--containers", 100)).unwrap_or(100),
        rate: get("--rate", 1000),
        seconds: get("--seconds", 10),
    }
}

/// Test cgroups under one parent, removed at the end.
struct Tree {
    cgroups: Cgroups,
    parent: CgroupPath,
    children: Vec<Child>,
}

impl Tree {
    fn new(host: &Host, cpus: &CpuSet, mems: &NodeSet) -> Self {
        let parent = CgroupPath::parse(&format!("placed-bench-{}", std::process::id()))
            .expect("cgroup name");
        host.cgroups()
            .create(&parent, cpus, mems)
            .expect("create the bench cgroup");
        Self {
            cgroups: host.cgroups().clone(),
            parent,
            children: Vec::new(),
        }
    }

    fn add(&mut self, name: &str, cpus: &CpuSet, mems: &NodeSet) -> (CgroupPath, u32) {
        let cg = self.parent.child(name).expect("name");
        self.cgroups.create(&cg, cpus, mems).expect("create");
        let child = Command::new("sleep")
            .arg("3600")
            .stdout(Stdio::null())
            .spawn()
            .expect("sleep");
        let pid = child.id();
        self.cgroups.attach(&cg, pid).expect("attach");
        self.children.push(child);
        (cg, pid)
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
        let tree = self
            .cgroups
            .subtree(&self.parent)
            .unwrap_or_else(|_| vec![self.parent.clone()]);
        for cg in tree.iter().rev() {
            let _ = self.cgroups.remove(cg);
        }
    }
}

fn start_daemon(dir: &Path, parent: &CgroupPath, policy: &str) -> Child {
    let config = dir.join("placed.toml");
    std::fs::write(
        &config,
        format!(
            "[daemon]\nstate_file = \"{d}/state.json\"\nmodel_dir = \"{d}/models\"\n\
             [grpc]\nsocket = \"{d}/placed.sock\"\n[metrics]\nenabled = false\n\
             [containers]\nruntimes = []\ncgroups = [\"{parent}\"]\nresync_interval = \"30s\"\n\
             [policy]\ndefault = \"{policy}\"\n\
             [observe]\nwarmup = \"1s\"\nwindow = \"1s\"\nwindows = 8\nmax_foreign_load = 1.0\nmax_steal = 1.0\n",
            d = dir.display(),
        ),
    )
    .expect("config");
    let child = Command::new(env!("CARGO_BIN_EXE_placed"))
        .arg("--config")
        .arg(&config)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start placed");
    let sock = dir.join("placed.sock");
    let start = Instant::now();
    while !sock.exists() && start.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(500));
    child
}

fn stop(mut child: Child) {
    // SAFETY: kill(2) on our own unreaped child.
    unsafe { libc::kill(i32::try_from(child.id()).unwrap_or(0), libc::SIGTERM) };
    let _ = child.wait();
}

/// CPU seconds (user + system) and resident bytes of a process, from /proc.
fn usage(pid: u32) -> (f64, u64) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let after = stat.rsplit(')').next().unwrap_or("");
    let f: Vec<&str> = after.split_whitespace().collect();
    // Fields 14 and 15 (utime, stime) are at 11 and 12 after the comm.
    let ticks: f64 = f.get(11).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0)
        + f.get(12).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    let statm = std::fs::read_to_string(format!("/proc/{pid}/statm")).unwrap_or_default();
    let rss_pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    (ticks / hz.max(1.0), rss_pages * 4096)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    // The rank of a percentile in a sorted sample; p is in [0, 1], so it fits.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn seeded_state(machine: &Machine, ids: &[(String, String)], placement: &str) -> State {
    State {
        written_unix_ms: 0,
        unmanaged: Vec::new(),
        reservations: Vec::new(),
        stopped_models: Vec::new(),
        fingerprint: machine.fingerprint().to_owned(),
        containers: ids
            .iter()
            .map(|(id, name)| ContainerRecord {
                state: Lifecycle::Watched,
                metric: Some(placed_host::observe::SourceSpec::Pushed { counter: false }),
                prediction: Some(PredictionRecord {
                    model_id: "bench-simulated".into(),
                    model_path: "(seeded by the benchmark)".into(),
                    provenance: placed_models::Provenance::Simulated,
                    vcpus: 1,
                    baseline: placement.into(),
                    probe: placement.into(),
                    observations: vec![ObservationRecord {
                        placement: placement.into(),
                        value: 1000.0,
                        low: 990.0,
                        high: 1010.0,
                        source: "pushed".into(),
                        windows: 8,
                        dropped: 0,
                    }],
                    placements: vec![PredictedRecord {
                        placement: placement.into(),
                        relative: 1.0,
                        spread: 0.0,
                        measured: true,
                        interval: None,
                    }],
                    warnings: vec!["seeded by the benchmark: simulated".into()],
                    unix_ms: 0,
                    below_gate: None,
                    novel: false,
                    third: None,
                    across_classes: false,
                }),
                ..ContainerRecord::new(id, name, 1, Policy::Observe)
            })
            .collect(),
    }
}

async fn latency(
    socket: PathBuf,
    names: Arc<Vec<String>>,
    rate: u64,
    seconds: u64,
    which: &'static str,
) -> (Vec<Duration>, usize) {
    const CLIENTS: u64 = 16;
    let per_client = Duration::from_secs_f64(CLIENTS as f64 / rate as f64);
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let mut tasks = Vec::new();
    for c in 0..CLIENTS {
        let socket = socket.clone();
        let names = names.clone();
        tasks.push(tokio::spawn(async move {
            let mut client = client::connect(&Target::Unix(socket))
                .await
                .expect("connect");
            let mut lat = Vec::new();
            let mut errors = 0usize;
            let mut tick = tokio::time::interval(per_client);
            let mut i = usize::try_from(c).unwrap_or(0);
            while Instant::now() < deadline {
                tick.tick().await;
                let name = names[i % names.len()].clone();
                i += 1;
                let t = Instant::now();
                let ok = match which {
                    "predict" => client
                        .predict(pb::PredictRequest { container: name })
                        .await
                        .is_ok(),
                    _ => client
                        .report_metric(tokio_stream::iter(vec![pb::ReportMetricRequest {
                            container: name,
                            value: 1000.0,
                            time: None,
                        }]))
                        .await
                        .is_ok_and(|r| r.into_inner().accepted == 1),
                };
                lat.push(t.elapsed());
                if !ok {
                    errors += 1;
                }
            }
            (lat, errors)
        }));
    }
    let mut all = Vec::new();
    let mut errors = 0;
    for t in tasks {
        let (l, e) = t.await.expect("client task");
        all.extend(l);
        errors += e;
    }
    all.sort();
    (all, errors)
}

fn main() {
    // SAFETY: first statement of main, before any thread exists.
    unsafe { placed_core::machine::quiet_hwloc() };
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        println!("skipped: the daemon benchmark needs root (it creates cgroups)");
        return;
    }
    let a = args();
    let host = Host::detect().expect("a cpuset hierarchy");
    let cpus = host.online_cpus().expect("cpus");
    let mems = host.memory_nodes().expect("mems");
    let machine = Machine::load(&TopologySource::Host, None).expect("machine model");
    let set = placed_core::placement::important_placements(&machine, 1).expect("placements");
    let placement = set.placements[0].id.clone();
    println!(
        "daemon benchmark on {} ({} PUs, {} allocation units): {} containers, {} req/s, {} s per phase",
        machine.source,
        machine.pus.usable.len(),
        machine.units.len(),
        a.containers,
        a.rate,
        a.seconds
    );

    // Phase 1 and 2: N containers, adopted from a seeded state file.
    let dir = tempfile::tempdir().expect("tempdir");
    let mut tree = Tree::new(&host, &cpus, &mems);
    let mut ids = Vec::new();
    for i in 0..a.containers {
        let name = format!("c{i}");
        let (cg, _) = tree.add(&name, &cpus, &mems);
        ids.push((cg.to_string(), name));
    }
    StateStore::new(dir.path().join("state.json"))
        .save(&seeded_state(&machine, &ids, &placement))
        .expect("seed state");
    let daemon = start_daemon(dir.path(), &tree.parent, "observe");
    let pid = daemon.id();
    let socket = dir.path().join("placed.sock");
    let names: Arc<Vec<String>> = Arc::new(ids.iter().map(|(_, n)| n.clone()).collect());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    // Let the tasks build their pushed sources.
    std::thread::sleep(Duration::from_secs(2));

    // Every container pushes one sample a second.
    let (cpu0, _) = usage(pid);
    let t0 = Instant::now();
    let (_, push_errors) = rt.block_on(latency(
        socket.clone(),
        names.clone(),
        u64::try_from(a.containers).unwrap_or(100),
        a.seconds,
        "report",
    ));
    let (cpu1, rss) = usage(pid);
    let elapsed = t0.elapsed().as_secs_f64();
    println!(
        "\nresources, {} containers each pushing 1 sample/s",
        a.containers
    );
    println!(
        "  daemon CPU   {:.2} % of one core ({:.2} s over {:.1} s)",
        (cpu1 - cpu0) / elapsed * 100.0,
        cpu1 - cpu0,
        elapsed
    );
    println!("  daemon RSS   {:.1} MiB", rss as f64 / (1 << 20) as f64);
    println!("  push errors  {push_errors}");

    println!("\ngRPC latency on the Unix socket, 16 clients");
    println!(
        "  {:<14} {:>8} {:>10} {:>10} {:>8} {:>12}",
        "call", "calls", "p50", "p99", "errors", "daemon CPU"
    );
    for which in ["predict", "report-metric"] {
        let (cpu0, _) = usage(pid);
        let t0 = Instant::now();
        let (lat, errors) = rt.block_on(latency(
            socket.clone(),
            names.clone(),
            a.rate,
            a.seconds,
            which,
        ));
        let (cpu1, _) = usage(pid);
        // Of one core, over the phase: the clients run on the same two CPUs.
        let busy = (cpu1 - cpu0) / t0.elapsed().as_secs_f64() * 100.0;
        println!(
            "  {:<14} {:>8} {:>8.3}ms {:>8.3}ms {:>8} {:>10.1} %",
            which,
            lat.len(),
            percentile(&lat, 0.5).as_secs_f64() * 1e3,
            percentile(&lat, 0.99).as_secs_f64() * 1e3,
            errors,
            busy
        );
    }
    stop(daemon);
    drop(tree);

    // Phase 3: appearance to placement. A pinned policy, because on a one-node host the
    // other policies leave a container where it starts.
    let dir = tempfile::tempdir().expect("tempdir");
    let mut tree = Tree::new(&host, &cpus, &mems);
    let daemon = start_daemon(dir.path(), &tree.parent, &format!("pinned:{placement}"));
    let mut times = Vec::new();
    let cpu_root = Path::new("/sys/fs/cgroup/cpu");
    for i in 0..10 {
        // The quota first (v = 1), then the cpuset cgroup the daemon watches.
        let quota_dir = tree
            .parent
            .child(&format!("n{i}"))
            .expect("name")
            .under(cpu_root);
        let quota = std::fs::create_dir_all(&quota_dir)
            .and_then(|()| std::fs::write(quota_dir.join("cpu.cfs_period_us"), "100000"))
            .and_then(|()| std::fs::write(quota_dir.join("cpu.cfs_quota_us"), "100000"));
        if let Err(e) = quota {
            println!(
                "
appearance to placement: skipped, no v1 cpu controller to set a quota ({e})"
            );
            break;
        }
        let t = Instant::now();
        let (cg, pid) = tree.add(&format!("n{i}"), &cpus, &mems);
        let _ = std::fs::write(quota_dir.join("cgroup.procs"), pid.to_string());
        let mut placed = None;
        while t.elapsed() < Duration::from_secs(30) {
            let now = host
                .cgroups()
                .cpuset(&cg)
                .map(|c| c.cpus)
                .unwrap_or_default();
            if now != cpus {
                placed = Some(t.elapsed());
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        if let Some(d) = placed {
            times.push(d);
        }
        // One container per allocation unit: free it for the next round.
        if let Some(mut c) = tree.children.pop() {
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = host.cgroups().remove(&cg);
        let _ = std::fs::remove_dir(&quota_dir);
        std::thread::sleep(Duration::from_millis(300));
    }
    let _ = std::fs::remove_dir(tree.parent.under(cpu_root));
    times.sort();
    println!("\nappearance to placement (pinned:{placement}, inotify discovery)");
    println!(
        "  placed {} of 10; median {:.1} ms, max {:.1} ms",
        times.len(),
        percentile(&times, 0.5).as_secs_f64() * 1e3,
        times.last().copied().unwrap_or_default().as_secs_f64() * 1e3
    );
    stop(daemon);
    drop(tree);
}
