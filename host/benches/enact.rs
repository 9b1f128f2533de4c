//! Enactment costs on the kernel that runs it (freeze time, migration bandwidth, move latency):
//!
//! 1. cpuset rewrite latency: one `cpuset.cpus` write to a cgroup holding a process of 1,
//!    100 and 10,000 threads, alternating between two CPU sets (the kernel updates every
//!    task's affinity inside the write);
//! 2. where there are two NUMA nodes or more: migration throughput of the fast mode against
//!    the kernel's cpuset path on the same memory (64 MiB, 256 MiB and 1 GiB, moved back and
//!    forth between two nodes), and plain memcpy bandwidth in the same run as the ceiling.
//!
//! `cargo bench -p placed --bench enact [-- --runs N] [--threads 1,100,10000] [--sizes 64,256,1024]
//! [--workers 1,4] [--chunk-pages 1024] [--migration-runs 3] [--verbose]`.
//! Needs root and a writable cpuset hierarchy, else it says why and exits 0. Each cell is
//! the median of N runs (default 9 for latency, 3 for migration) with the min and max.
//! In the numa-vm guest (QEMU TCG) the figures say how the code paths compare, never what
//! real hardware does.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use placed_core::cpuset::{CpuSet, NodeSet};
use placed_host::cgroup::CgroupPath;
use placed_host::enact::{ApplyOptions, Host};
use placed_host::migrate::Mode;

fn arg<T: std::str::FromStr>(args: &[String], name: &str) -> Option<T> {
    let i = args.iter().position(|a| a == name)?;
    args.get(i + 1)?.parse().ok()
}

fn list(args: &[String], name: &str, default: &[usize]) -> Vec<usize> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .map(|s| s.split(',').filter_map(|x| x.parse().ok()).collect())
        .unwrap_or_else(|| default.to_vec())
}

/// Median, min, max.
fn stats(mut xs: Vec<f64>) -> (f64, f64, f64) {
    xs.sort_by(f64::total_cmp);
    (xs[xs.len() / 2], xs[0], xs[xs.len() - 1])
}

/// The load process: this binary with `--load threads,mib`.
fn load_main(spec: &str) {
    let (threads, mib) = spec.split_once(',').expect("threads,mib");
    let (threads, mib): (usize, usize) =
        (threads.parse().expect("threads"), mib.parse().expect("mib"));
    let mut line = String::new();
    std::io::stdin().read_line(&mut line).expect("stdin");
    let mut mem = vec![0u8; mib << 20];
    for i in (0..mem.len()).step_by(4096) {
        mem[i] = 1;
    }
    for _ in 1..threads {
        std::thread::Builder::new()
            .stack_size(32 << 10)
            .spawn(|| {
                loop {
                    std::thread::sleep(Duration::from_secs(3600));
                }
            })
            .expect("thread");
    }
    println!("ready");
    std::io::stdout().flush().expect("stdout");
    loop {
        std::thread::sleep(Duration::from_secs(3600));
        std::hint::black_box(&mem);
    }
}

/// A cgroup the bench created: thawed and removed on drop, so that a panic anywhere after
/// its creation (a load that cannot start, a failed attach) leaves nothing behind.
struct Created {
    host: Host,
    cg: CgroupPath,
}

impl Created {
    fn new(host: &Host, cg: CgroupPath, cpus: &CpuSet, mems: &NodeSet) -> Self {
        host.cgroups()
            .create(&cg, cpus, mems)
            .expect("create cgroup");
        Self {
            host: host.clone(),
            cg,
        }
    }
}

impl Drop for Created {
    fn drop(&mut self) {
        let cgroups = self.host.cgroups();
        let _ = cgroups.set_frozen(&self.cg, false);
        // Normally empty by now (the load was killed first); a task that still is in it
        // would make rmdir fail with EBUSY, so move it out.
        for pid in cgroups.procs(&self.cg).unwrap_or_default() {
            let _ = cgroups.attach(&CgroupPath::root(), pid);
        }
        // A killed task leaves the cgroup asynchronously: retry for up to a second.
        for _ in 0..50 {
            if cgroups.remove(&self.cg).is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        eprintln!("warning: cannot remove {}", self.cg);
    }
}

/// A cgroup with one load process; the load is killed, then the cgroup removed, on drop.
struct Bench {
    // Declared before `cg`: fields drop in order, and the cgroup goes after its load
    // (Bench::drop has killed it by then).
    child: Child,
    cg: Created,
}

impl Bench {
    fn new(
        host: &Host,
        name: &str,
        cpus: &CpuSet,
        mems: &NodeSet,
        threads: usize,
        mib: usize,
    ) -> Self {
        let cg = CgroupPath::parse(&format!("placed-bench-{}-{name}", std::process::id()))
            .expect("name");
        // From here on, the guard removes the cgroup whatever panics.
        let cg = Created::new(host, cg, cpus, mems);
        let child = Command::new(std::env::current_exe().expect("exe"))
            .args(["--load", &format!("{threads},{mib}")])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn load");
        // From here on, drop also kills the load.
        let mut b = Self { child, cg };
        host.cgroups()
            .attach(&b.cg.cg, b.child.id())
            .expect("attach");
        writeln!(b.child.stdin.as_mut().expect("stdin"), "go").expect("go");
        let mut line = String::new();
        BufReader::new(b.child.stdout.as_mut().expect("stdout"))
            .read_line(&mut line)
            .expect("ready");
        b
    }

    fn path(&self) -> &CgroupPath {
        &self.cg.cg
    }

    fn container(&self) -> placed_host::containers::Container {
        self.cg
            .host
            .resolve(&format!("cgroup:{}", self.path()))
            .expect("resolve")
    }
}

impl Drop for Bench {
    fn drop(&mut self) {
        let _ = self.cg.host.cgroups().set_frozen(self.path(), false);
        let _ = self.child.kill();
        let _ = self.child.wait();
        // `cg` drops next and removes the cgroup.
    }
}

fn latency(host: &Host, cpus: &CpuSet, mems: &NodeSet, threads: &[usize], runs: usize) {
    let a: CpuSet = cpus.first().into_iter().collect();
    let b: CpuSet = if cpus.len() > 1 {
        cpus.clone()
    } else {
        a.clone()
    };
    println!(
        "\ncpuset.cpus rewrite latency (cgroup {}, alternating {a} and {b}; median of {runs}, [min, max])",
        host.cgroups().version()
    );
    println!(
        "{:>8}  {:>12}  {:>22}  {:>14}",
        "THREADS", "MEDIAN", "RANGE", "PER THREAD"
    );
    for &n in threads {
        let started = Instant::now();
        let bench = Bench::new(host, &format!("lat{n}"), &a, mems, n, 0);
        let spawn = started.elapsed();
        let mut times = Vec::new();
        for i in 0..runs * 2 {
            let target = if i % 2 == 0 { &b } else { &a };
            let t = Instant::now();
            host.cgroups()
                .set_cpus(bench.path(), target)
                .expect("write cpuset.cpus");
            times.push(t.elapsed().as_secs_f64());
        }
        let (med, lo, hi) = stats(times);
        println!(
            "{n:>8}  {:>9.3} ms  [{:>8.3}, {:>8.3}] ms  {:>11.2} µs   (load started in {:.1} s)",
            med * 1e3,
            lo * 1e3,
            hi * 1e3,
            med * 1e6 / n as f64,
            spawn.as_secs_f64()
        );
    }
}

fn memcpy_bandwidth(mib: usize, runs: usize) -> (f64, f64, f64) {
    let src = vec![1u8; mib << 20];
    let mut dst = vec![0u8; mib << 20];
    dst.copy_from_slice(&src);
    let mut xs = Vec::new();
    for _ in 0..runs {
        let t = Instant::now();
        dst.copy_from_slice(std::hint::black_box(&src));
        std::hint::black_box(&dst);
        xs.push((mib << 20) as f64 / t.elapsed().as_secs_f64());
    }
    stats(xs)
}

fn mibs(x: f64) -> f64 {
    x / f64::from(1 << 20)
}

/// One way of moving memory, as the bench compares them.
struct Variant {
    label: String,
    mode: Mode,
    opts: ApplyOptions,
}

fn variants(workers: &[usize], chunk: usize) -> Vec<Variant> {
    let mut v = vec![Variant {
        label: "kernel (cpuset.mems)".into(),
        mode: Mode::Kernel,
        opts: ApplyOptions::default(),
    }];
    let move_pages = ApplyOptions {
        chunk_pages: chunk,
        whole_process_bytes: Some(0),
        ..ApplyOptions::default()
    };
    for &w in workers {
        for freeze in [true, false] {
            v.push(Variant {
                label: format!(
                    "fast move_pages x{w}{}",
                    if freeze { " frozen" } else { "" }
                ),
                mode: Mode::Fast { workers: w, freeze },
                opts: move_pages.clone(),
            });
        }
    }
    v.push(Variant {
        label: "fast migrate_pages frozen".into(),
        mode: Mode::Fast {
            workers: 1,
            freeze: true,
        },
        opts: ApplyOptions {
            whole_process_bytes: Some(u64::MAX),
            ..ApplyOptions::default()
        },
    });
    v
}

fn migration(
    host: &Host,
    cpus: &CpuSet,
    nodes: &NodeSet,
    sizes: &[usize],
    variants: &[Variant],
    runs: usize,
    verbose: bool,
) {
    let n0: NodeSet = nodes.first().into_iter().collect();
    let n1: NodeSet = nodes.last().into_iter().collect();
    let (cm, clo, chi) = memcpy_bandwidth(256, 5);
    println!(
        "\nmemcpy (256 MiB, one thread, median of 5): {:.0} MiB/s [{:.0}, {:.0}]",
        mibs(cm),
        mibs(clo),
        mibs(chi)
    );
    println!(
        "\nmigration between nodes {n0} and {n1}, alternating directions (median of {runs}, [min, max])"
    );
    println!(
        "{:>7}  {:<28}  {:>8}  {:>18}  {:>10}  {:>7}",
        "SIZE", "MODE", "MiB/s", "RANGE", "VS KERNEL", "MEMCPY"
    );
    for &mib in sizes {
        let bench = Bench::new(host, &format!("mig{mib}"), cpus, &n0, 4, mib);
        let c = bench.container();
        let mut results: Vec<Vec<f64>> = vec![Vec::new(); variants.len()];
        let mut to_n1 = true;
        // Interleaved, so that drift in the machine hits every mode alike.
        for _ in 0..runs {
            for (v, out) in variants.iter().zip(results.iter_mut()) {
                let target = if to_n1 { &n1 } else { &n0 };
                let r = host
                    .apply_with(&c, cpus, target, &v.mode, &v.opts)
                    .expect("apply");
                to_n1 = !to_n1;
                if verbose {
                    let w = r.migration.workers.as_ref();
                    eprintln!(
                        "  {mib} MiB {}: moved {} in {:?} (cpuset writes {:?}, frozen {:?}, workers {:?}, failed {:?}), left {}",
                        v.label,
                        r.migration.bytes_moved,
                        r.migration.duration,
                        r.cpuset_write,
                        r.migration.frozen_for,
                        w.map(|w| w.duration),
                        w.map(|w| &w.pages_failed),
                        r.migration.left_on_old_nodes
                    );
                }
                if r.migration.left_on_old_nodes > (r.migration.bytes_moved / 20) {
                    eprintln!(
                        "note: {} bytes left on the old node by {}",
                        r.migration.left_on_old_nodes, v.label
                    );
                }
                out.push(r.migration.bytes_moved as f64 / r.migration.duration.as_secs_f64());
            }
        }
        let kernel = stats(results[0].clone()).0;
        for (v, xs) in variants.iter().zip(results) {
            let (m, lo, hi) = stats(xs);
            println!(
                "{:>5}Mi  {:<28}  {:>8.0}  [{:>6.0}, {:>7.0}]  {:>9.2}x  {:>6.0}%",
                mib,
                v.label,
                mibs(m),
                mibs(lo),
                mibs(hi),
                m / kernel,
                100.0 * m / cm
            );
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(spec) = arg::<String>(&args, "--load") {
        load_main(&spec);
        return;
    }
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        println!("enact bench: skipped, because it needs root");
        return;
    }
    let host = match Host::detect() {
        Ok(h) => h,
        Err(e) => {
            println!("enact bench: skipped, because there is no usable cpuset hierarchy: {e}");
            return;
        }
    };
    let cpus = host.online_cpus().expect("online CPUs");
    let nodes = host.memory_nodes().expect("memory nodes");
    let runs: usize = arg(&args, "--runs").unwrap_or(9);
    println!(
        "enact bench: cgroup {}, CPUs {cpus}, memory nodes {nodes}, kernel {}",
        host.cgroups().version(),
        std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .unwrap_or_default()
            .trim()
    );
    latency(
        &host,
        &cpus,
        &nodes.first().into_iter().collect(),
        &list(&args, "--threads", &[1, 100, 10_000]),
        runs,
    );
    if nodes.len() < 2 {
        println!(
            "\nmigration: skipped, because this host has one NUMA node (run it in a numa-vm guest)"
        );
        return;
    }
    let workers = list(
        &args,
        "--workers",
        &[1, placed_host::migrate::default_workers()],
    );
    let variants = variants(&workers, arg(&args, "--chunk-pages").unwrap_or(1024));
    migration(
        &host,
        &cpus,
        &nodes,
        &list(&args, "--sizes", &[64, 256, 1024]),
        &variants,
        arg(&args, "--migration-runs").unwrap_or(3),
        args.iter().any(|a| a == "--verbose"),
    );
}
