//! `placed-testload`: a workload with known behaviour, for the observation tests and the
//! `observe` bench. Not a tool for operators; it is a binary only so that integration tests
//! and benches can start it as a real process (cargo hands them its path).
//!
//! It counts operations in one worker thread and reports the running total on a real
//! Prometheus endpoint (`--serve`), on stdout for a pusher to forward (`--push-ms`), or both:
//!
//! - `paced --rate R`: exactly `R` cheap operations per second, catching up after any
//!   preemption, so the true rate is known in advance;
//! - `cpu`: as fast as it can, on registers only (a steady CPU-bound workload);
//! - `mem`: streams through a buffer far larger than the last-level cache, one operation
//!   per MiB read and written (a steady memory-bound workload);
//!
//! `--cpu N` pins the process to one PU. The first stdout line is `ready <address or ->`.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::{Parser, ValueEnum};

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Mode {
    Paced,
    Cpu,
    Mem,
}

#[derive(Debug, Parser)]
#[command(about = "A workload with known behaviour for placed's observation tests")]
struct Args {
    /// What to run.
    mode: Mode,
    /// Operations per second in `paced` mode.
    #[arg(long, default_value_t = 20_000)]
    rate: u64,
    /// Buffer size in MiB in `mem` mode (the CI VM's L3 is 480 MiB).
    #[arg(long, default_value_t = 1024)]
    mib: usize,
    /// Serve `testload_ops_total` (counter) and `testload_target_rate` (gauge) here.
    #[arg(long)]
    serve: Option<String>,
    /// Print the running total on stdout this often.
    #[arg(long)]
    push_ms: Option<u64>,
    /// Pin to this PU.
    #[arg(long)]
    cpu: Option<usize>,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    if let Some(cpu) = args.cpu {
        pin(cpu)?;
    }
    let ops = Arc::new(AtomicU64::new(0));
    let worker = {
        let ops = Arc::clone(&ops);
        let (mode, rate, mib) = (args.mode, args.rate, args.mib);
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let handle = std::thread::spawn(move || run(mode, rate, mib, &ops, &ready_tx));
        // Wait until the memory buffer is touched: counting starts after that.
        ready_rx.recv().context("worker died before starting")?;
        handle
    };
    let address = match &args.serve {
        Some(addr) => {
            let listener = TcpListener::bind(addr).with_context(|| format!("bind {addr}"))?;
            let local = listener.local_addr()?.to_string();
            let ops = Arc::clone(&ops);
            let target = if matches!(args.mode, Mode::Paced) {
                args.rate
            } else {
                0
            };
            std::thread::spawn(move || serve(&listener, &ops, target));
            local
        }
        None => "-".to_owned(),
    };
    let mut out = std::io::stdout().lock();
    writeln!(out, "ready {address}")?;
    out.flush()?;
    match args.push_ms {
        Some(ms) => loop {
            std::thread::sleep(Duration::from_millis(ms));
            writeln!(out, "{}", ops.load(Ordering::Relaxed))?;
            out.flush()?;
        },
        None => {
            drop(out);
            worker
                .join()
                .map_err(|_| anyhow::anyhow!("worker panicked"))?;
            Ok(())
        }
    }
}

fn run(mode: Mode, rate: u64, mib: usize, ops: &AtomicU64, ready: &std::sync::mpsc::Sender<()>) {
    match mode {
        Mode::Paced => {
            let _ = ready.send(());
            let start = Instant::now();
            let mut done = 0_u64;
            let mut x = 1_u64;
            loop {
                let due =
                    u64::try_from(start.elapsed().as_nanos() * u128::from(rate) / 1_000_000_000)
                        .unwrap_or(u64::MAX);
                while done < due {
                    x = spin(x, 100);
                    done += 1;
                    ops.store(done, Ordering::Relaxed);
                }
                std::hint::black_box(x);
                std::thread::sleep(Duration::from_micros(500));
            }
        }
        Mode::Cpu => {
            let _ = ready.send(());
            let mut x = 1_u64;
            loop {
                x = spin(x, 10_000);
                std::hint::black_box(x);
                ops.fetch_add(1, Ordering::Relaxed);
            }
        }
        Mode::Mem => {
            const MIB: usize = 1 << 20;
            let mut buf = vec![1_u8; mib * MIB];
            let _ = ready.send(());
            loop {
                for chunk in buf.chunks_mut(MIB) {
                    // Read and write one byte per cache line.
                    for line in chunk.iter_mut().step_by(64) {
                        *line = line.wrapping_add(1);
                    }
                    std::hint::black_box(&chunk[0]);
                    ops.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
    }
}

/// `n` rounds of xorshift: registers only, no memory traffic.
fn spin(mut x: u64, n: u32) -> u64 {
    for _ in 0..n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    x
}

fn serve(listener: &TcpListener, ops: &AtomicU64, target: u64) {
    for stream in listener.incoming().flatten() {
        let _ = answer(stream, ops, target);
    }
}

fn answer(stream: TcpStream, ops: &AtomicU64, target: u64) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut line = String::new();
    while reader.read_line(&mut line)? > 2 {
        line.clear();
    }
    let body = format!(
        "# HELP testload_ops_total Operations done.\n# TYPE testload_ops_total counter\ntestload_ops_total{{mode=\"w\"}} {}\n# TYPE testload_target_rate gauge\ntestload_target_rate {target}\n",
        ops.load(Ordering::Relaxed)
    );
    let mut stream = stream;
    write!(
        stream,
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    stream.flush()
}

fn pin(cpu: usize) -> anyhow::Result<()> {
    // SAFETY: cpu_set_t is plain data; zeroed is its empty value, as CPU_ZERO would make.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    anyhow::ensure!(
        cpu < usize::try_from(libc::CPU_SETSIZE)?,
        "cpu {cpu} out of range"
    );
    // SAFETY: CPU_SET writes one bit inside `set`; `cpu` was checked against the set's
    // capacity just above.
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: pid 0 is this thread's process; `set` is a valid cpu_set_t of the size given.
    let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    anyhow::ensure!(
        rc == 0,
        "sched_setaffinity to cpu {cpu}: {}",
        std::io::Error::last_os_error()
    );
    Ok(())
}
