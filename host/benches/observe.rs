//! How steady is an observed rate on this host, and what difference can the default
//! protocol resolve in 10 s? The figures behind `Protocol::default()`.
//!
//! For a steady CPU-bound and a steady memory-bound `placed-testload` pinned to PU 0, with
//! PU 1 idle or running a busy loop, it scrapes the workload's Prometheus counter through the
//! real source and noise probe in contiguous 0.5 s windows (34 s per run, from the moment
//! the workload is ready), then reports, as medians over runs:
//!
//! - the coefficient of variation of the rate in 0.5, 1 and 2 s windows (1 and 2 s windows
//!   are adjacent 0.5 s windows merged: exactly what a longer window would have read);
//! - the first 2 s relative to the steady median (how long a warm-up is needed);
//! - the smallest difference the protocol resolves with 8 s of windows (10 s with the
//!   warm-up): over A/A pairs of 8-second blocks of one run, the `d` for which a candidate
//!   `(1 + d)` times faster is called `Higher` (and `1/(1+d)` `Lower`); the Moses interval is
//!   shift-equivariant on logs, so `d = max(1/lo, hi) - 1` exactly. Pairs across runs are
//!   shown too: that is what comparing across a restart would cost;
//! - one end-to-end A/A comparison with `Protocol::default()`.
//!
//! `cargo bench -p placed --bench observe`; `PLACED_BENCH_RUNS` sets the runs (default 3).
//! Figures from a small shared VM are not real placement results.

#[path = "../../tests/support/bins.rs"]
mod bins;

use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::Context;
use placed_host::observe::prometheus::text::Selector;
use placed_host::observe::{
    DisturbanceRules, Measurement, ProcProbe, PrometheusConfig, PrometheusSource, Protocol, Target,
    WindowRecord, coefficient_of_variation, compare, measure, median, ratio_interval,
};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// Windows of 0.5 s before the steady part (the warm-up looked at).
const HEAD: usize = 4;
/// Steady windows per run: 32 s, four 8-second blocks.
const STEADY: usize = 64;
const BASE: Duration = Duration::from_millis(500);
/// 0.5 s windows in the protocol's 8 s after its 2 s warm-up.
const BLOCK: usize = 16;

#[derive(Clone, Copy)]
struct Condition {
    workload: &'static str,
    busy_neighbour: bool,
}

struct Run {
    windows: Vec<WindowRecord>,
}

fn main() -> anyhow::Result<()> {
    // Cargo runs benches with --bench; nothing to parse beyond it.
    let runs: usize = std::env::var("PLACED_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    runtime.block_on(bench(runs))
}

async fn bench(runs: usize) -> anyhow::Result<()> {
    let conditions = [
        Condition {
            workload: "cpu",
            busy_neighbour: false,
        },
        Condition {
            workload: "cpu",
            busy_neighbour: true,
        },
        Condition {
            workload: "mem",
            busy_neighbour: false,
        },
        Condition {
            workload: "mem",
            busy_neighbour: true,
        },
    ];
    println!("observe bench on {}", host());
    println!("FIGURES FROM A 2-vCPU SHARED VM: NOT REAL PLACEMENT RESULTS");
    println!("load average at start: {}", loadavg());
    println!(
        "{runs} runs per condition, each {HEAD} + {STEADY} windows of 0.5 s; figures are medians over runs\n"
    );

    let mut all: Vec<(Condition, Vec<Run>)> = Vec::new();
    for c in conditions {
        let mut rs = Vec::new();
        for _ in 0..runs {
            rs.push(series(c).await?);
        }
        all.push((c, rs));
    }

    println!("Coefficient of variation of the observed rate");
    println!(
        "{:<5} {:<10} {:>8} {:>8} {:>8}  {:>8}  {:>28}  {:>6} {:>7} {:>7} {:>7}",
        "load",
        "other PU",
        "CV 0.5s",
        "CV 1s",
        "CV 2s",
        "flagged",
        "first 4 x 0.5 s / steady",
        "steal",
        "irq/s",
        "invol/s",
        "rqwait"
    );
    for (c, rs) in &all {
        let cv = |k: usize| {
            med(rs
                .iter()
                .filter_map(|r| coefficient_of_variation(&merged(&steady(r), k))))
        };
        let flagged = med(rs.iter().map(|r| {
            steady(r)
                .iter()
                .filter(|w| !w.disturbances.is_empty())
                .count() as f64
                / STEADY as f64
        }));
        let head: Vec<String> = (0..HEAD)
            .map(|i| {
                let x = med(rs.iter().filter_map(|r| {
                    let m = median(&values(&steady(r)))?;
                    Some(r.windows[i].value / m)
                }));
                format!("{x:.3}")
            })
            .collect();
        let cv_kept = med(rs.iter().filter_map(|r| {
            let kept: Vec<f64> = steady(r)
                .iter()
                .filter(|w| w.disturbances.is_empty())
                .map(|w| w.value)
                .collect();
            coefficient_of_variation(&kept)
        }));
        let noise = |f: fn(&WindowRecord) -> f64| {
            med(rs
                .iter()
                .filter_map(|r| median(&steady(r).iter().map(f).collect::<Vec<_>>())))
        };
        println!(
            "{:<5} {:<10} {:>7.2}% {:>7.2}% {:>7.2}%  {:>7.1}% {:>8.2}%  {:>28}  {:>5.2}% {:>6.1}% {:>7.0} {:>7.1} {:>7.3}",
            c.workload,
            if c.busy_neighbour { "busy" } else { "idle" },
            100.0 * cv(1),
            100.0 * cv(2),
            100.0 * cv(4),
            100.0 * flagged,
            100.0 * cv_kept,
            head.join(" "),
            100.0 * noise(|w| w.noise.steal),
            100.0 * noise(|w| w.noise.foreign),
            noise(|w| w.noise.interrupts_per_s),
            noise(|w| w.noise.involuntary_switches_per_s),
            noise(|w| w.noise.runqueue_wait),
        );
    }

    println!(
        "\nSmallest difference resolved at 95% with 8 s of windows (10 s with the 2 s warm-up)"
    );
    println!(
        "d such that a (1+d)x faster candidate is called Higher; over A/A pairs of 8-second blocks"
    );
    println!(
        "{:<5} {:<10} {:>12} | {:>22} | {:>22}",
        "load", "other PU", "window", "same run: median  worst", "across runs: median  worst"
    );
    for (c, rs) in &all {
        for (k, kept_only) in [(1_usize, false), (2, false), (4, false), (1, true)] {
            let per_block = BLOCK / k;
            let blocks: Vec<(usize, Vec<f64>)> = rs
                .iter()
                .enumerate()
                .flat_map(|(i, r)| {
                    let kept: Vec<WindowRecord> = steady(r);
                    let m = merged_records(&kept, k);
                    m.chunks(per_block)
                        .filter(|b| b.len() == per_block)
                        .map(|b| {
                            (
                                i,
                                b.iter()
                                    .filter(|w| w.1 || !kept_only)
                                    .map(|w| w.0)
                                    .collect(),
                            )
                        })
                        .collect::<Vec<_>>()
                })
                .collect();
            let (mut same, mut across) = (Vec::new(), Vec::new());
            for (i, (ri, a)) in blocks.iter().enumerate() {
                for (rj, b) in &blocks[i + 1..] {
                    let d = ratio_interval(a, b, 0.95)
                        .map_or(f64::INFINITY, |e| (1.0 / e.lo).max(e.hi) - 1.0);
                    if ri == rj {
                        same.push(d)
                    } else {
                        across.push(d)
                    }
                }
            }
            let show = |xs: &[f64]| match (median(xs), xs.iter().copied().reduce(f64::max)) {
                (Some(m), Some(w)) => {
                    format!("{:>6.2}% {:>6.2}% (n={})", 100.0 * m, 100.0 * w, xs.len())
                }
                _ => "n/a (too few windows)".to_owned(),
            };
            println!(
                "{:<5} {:<10} {:>5.1} s {:<4} | {:>22} | {:>22}",
                c.workload,
                if c.busy_neighbour { "busy" } else { "idle" },
                BASE.as_secs_f64() * k as f64,
                if kept_only { "kept" } else { "all" },
                show(&same),
                show(&across),
            );
        }
    }

    println!("\nEnd-to-end A/A with Protocol::default(): two measurements of one run, compared");
    for (c, _) in &all {
        let label = format!(
            "{:<5} {:<5}",
            c.workload,
            if c.busy_neighbour { "busy" } else { "idle" }
        );
        let relaxed = Protocol {
            rules: DisturbanceRules {
                max_foreign: f64::INFINITY,
                ..Protocol::default().rules
            },
            ..Protocol::default()
        };
        for (protocol, which) in [
            (Protocol::default(), "default"),
            (relaxed, "no foreign rule"),
        ] {
            let label = format!("{label} {which:<16}");
            match default_pair(*c, &protocol).await {
                Ok((a, b, secs)) => {
                    let cmp = compare(&a, &b, 0.95, Protocol::default().margin)?;
                    println!(
                        "{label} verdict {:<12} ratio {:.4} [{:.4}, {:.4}]  dropped {}+{} windows  {:.1} s per measurement",
                        format!("{:?}", cmp.verdict),
                        cmp.ratio.value,
                        cmp.ratio.lo,
                        cmp.ratio.hi,
                        a.dropped(),
                        b.dropped(),
                        secs,
                    );
                }
                Err(e) => println!("{label} no measurement: {e:#}"),
            }
        }
    }
    println!("\nload average at end: {}", loadavg());
    Ok(())
}

/// One run: the workload (and its neighbour) started, measured in contiguous 0.5 s windows
/// from the moment it is ready, stopped. Nothing is dropped while measuring.
async fn series(c: Condition) -> anyhow::Result<Run> {
    let default = Protocol::default();
    let protocol = Protocol {
        warmup: Duration::ZERO,
        window: BASE,
        windows: HEAD + STEADY,
        extra_windows: 0,
        min_windows: 8,
        rules: DisturbanceRules {
            max_steal: f64::INFINITY,
            max_foreign: f64::INFINITY,
            max_frequency_spread: f64::INFINITY,
            outlier_factor: f64::INFINITY,
            ..default.rules.clone()
        },
        ..default.clone()
    };
    let (m, _) = with_workload(c, async |source, probe| {
        measure(source, &probe, &protocol).await
    })
    .await?;
    // Classified afterwards with the default rules, so that raw and kept figures can both
    // be shown.
    let mut windows = m.windows;
    let noise: Vec<&placed_host::observe::Noise> = windows.iter().map(|w| &w.noise).collect();
    let verdicts = default.rules.classify(&noise, &vec![false; noise.len()]);
    for (w, d) in windows.iter_mut().zip(verdicts) {
        w.disturbances = d;
    }
    Ok(Run { windows })
}

/// Two back-to-back measurements of one run.
async fn default_pair(
    c: Condition,
    protocol: &Protocol,
) -> anyhow::Result<(Measurement, Measurement, f64)> {
    let ((a, b), secs) = with_workload(c, async |source, probe| {
        let a = measure(source, &probe, protocol).await?;
        let b = measure(source, &probe, protocol).await?;
        Ok((a, b))
    })
    .await?;
    Ok((a, b, secs / 2.0))
}

async fn with_workload<T>(
    c: Condition,
    body: impl AsyncFnOnce(
        &mut PrometheusSource,
        ProcProbe,
    ) -> Result<T, placed_host::observe::ObserveError>,
) -> anyhow::Result<(T, f64)> {
    let mut neighbour = if c.busy_neighbour {
        Some(spawn(&["cpu", "--cpu", "1"]).await?.0)
    } else {
        None
    };
    let (mut child, address) = spawn(&[c.workload, "--cpu", "0", "--serve", "127.0.0.1:0"]).await?;
    let pid = child.id().context("workload pid")?;
    let mut source = PrometheusSource::connect(PrometheusConfig {
        url: format!("http://{address}/metrics"),
        selector: Selector::parse("testload_ops_total")?,
        kind: None,
        timeout: Duration::from_secs(2),
    })
    .await?;
    let probe = ProcProbe::new(Target::Process(pid), Some("0".parse()?));
    let started = Instant::now();
    let result = body(&mut source, probe).await;
    let secs = started.elapsed().as_secs_f64();
    child.kill().await?;
    if let Some(n) = neighbour.as_mut() {
        n.kill().await?;
    }
    Ok((result?, secs))
}

async fn spawn(args: &[&str]) -> anyhow::Result<(Child, String)> {
    let mut child = Command::new(crate::bins::bin("placed-testload"))
        .args(args)
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .context("start placed-testload")?;
    let stdout = child.stdout.take().context("stdout")?;
    let mut lines = BufReader::new(stdout).lines();
    let first = lines.next_line().await?.context("no ready line")?;
    let address = first
        .strip_prefix("ready ")
        .context("bad ready line")?
        .to_owned();
    // Keep draining so a pushing child never blocks on a full pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    Ok((child, address))
}

fn steady(r: &Run) -> Vec<WindowRecord> {
    r.windows[HEAD..].to_vec()
}

fn values(ws: &[WindowRecord]) -> Vec<f64> {
    ws.iter().map(|w| w.value).collect()
}

/// Rates of `k` adjacent windows merged (length-weighted), all windows kept.
fn merged(ws: &[WindowRecord], k: usize) -> Vec<f64> {
    merged_records(ws, k).into_iter().map(|(v, _)| v).collect()
}

/// Merged rates with whether every part was undisturbed.
fn merged_records(ws: &[WindowRecord], k: usize) -> Vec<(f64, bool)> {
    ws.chunks(k)
        .filter(|c| c.len() == k)
        .map(|c| {
            let len: f64 = c.iter().map(|w| w.length_s).sum();
            let work: f64 = c.iter().map(|w| w.value * w.length_s).sum();
            (work / len, c.iter().all(|w| w.disturbances.is_empty()))
        })
        .collect()
}

fn med(xs: impl Iterator<Item = f64>) -> f64 {
    median(&xs.collect::<Vec<_>>()).unwrap_or(f64::NAN)
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map_or_else(|_| "?".to_owned(), |s| s.trim().to_owned())
}

fn host() -> String {
    let cpus = std::thread::available_parallelism().map_or(0, usize::from);
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_owned())
        })
        .unwrap_or_default();
    format!("{cpus} PUs, {model}")
}
