//! Starting a workload: the built-in kernel process, or an external definition's setup,
//! server, readiness check and command, with the metric source each one is read from.

use std::io::Read;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use placed_core::cpuset::CpuSet;
use placed_host::observe::{
    AnySource, Kind, LineMetric, LinePattern, Reporter, SourceSpec, block_on, pushed,
};

use super::external::{Definition, Metric, Values, substitute, substitute_all};
use super::launch::{self, Capture, Process};
use super::{Error, Launch, Running};

/// Bound on one run of a server's readiness check.
const READY_CHECK_TIMEOUT: Duration = Duration::from_secs(5);

/// Starts a built-in kernel: `<exe> workload run <name> --threads N`.
pub(crate) fn builtin(name: &str, launch: &Launch<'_>) -> Result<Running, Error> {
    let start = |detail: String| Error::Start {
        name: name.to_owned(),
        detail,
    };
    let argv = vec![
        launch.exe.display().to_string(),
        "workload".into(),
        "run".into(),
        name.to_owned(),
        "--threads".into(),
        launch.threads.to_string(),
    ];
    let mut process = launch::spawn(&argv, &launch.cgroups(), launch.scratch, Capture::Stdout)
        .map_err(|e| start(format!("{}: {e}", argv.join(" "))))?;
    let (reporter, source) = pushed::channel(name, Kind::Counter);
    let Some(stdout) = process.child.stdout.take() else {
        let _ = process.kill();
        return Err(start("no stdout pipe".into()));
    };
    let who = name.to_owned();
    let mut warned = false;
    let reader = launch::read_lines(name.to_owned(), stdout, move |line| {
        match line.trim().parse::<f64>() {
            // An error means nobody measures now: keep draining the pipe regardless.
            Ok(total) => drop(reporter.report(total)),
            Err(_) if !warned => {
                warned = true;
                tracing::warn!(workload = %who, line, "kernel printed a line that is not a number");
            }
            Err(_) => {}
        }
    });
    let reader = match reader {
        Ok(r) => r,
        Err(e) => {
            let _ = process.kill();
            return Err(start(format!("cannot start the reader thread: {e}")));
        }
    };
    Ok(Running {
        name: name.to_owned(),
        source: AnySource::Pushed(source),
        processes: vec![process],
        readers: vec![reader],
        cgroups: launch.cgroups(),
    })
}

/// Starts an external workload. Every process started before a failure is stopped
/// before the error is returned.
pub(crate) fn external(def: &Definition, launch: &Launch<'_>) -> Result<Running, Error> {
    let mut running = Running {
        name: def.name.clone(),
        source: AnySource::Pushed(pushed::channel(def.name.clone(), Kind::Gauge).1),
        processes: Vec::new(),
        readers: Vec::new(),
        cgroups: launch.cgroups(),
    };
    // On error `running` drops here, which kills whatever was started.
    external_into(def, launch, &mut running).map_err(|detail| Error::Start {
        name: def.name.clone(),
        detail,
    })?;
    Ok(running)
}

fn external_into(
    def: &Definition,
    launch: &Launch<'_>,
    running: &mut Running,
) -> Result<(), String> {
    if let Some(why) = def.unavailable() {
        return Err(why);
    }
    let values = Values {
        threads: launch.threads,
        scratch: launch.scratch.display().to_string(),
        port: free_port()?,
    };
    let cgroups = launch.cgroups();
    let setup_timeout = Duration::from_secs_f64(def.setup_timeout_s.max(0.0));
    for command in &def.setup {
        launch::run_to_end(
            &substitute_all(command, &values),
            &cgroups,
            launch.scratch,
            setup_timeout,
        )
        .map_err(|e| format!("setup: {e}"))?;
    }
    if let Some(server) = &def.server {
        let argv = substitute_all(&server.command, &values);
        let process = launch::spawn(&argv, &cgroups, launch.scratch, Capture::Neither)
            .map_err(|e| format!("cannot start server {}: {e}", argv.join(" ")))?;
        running.processes.push(process);
        let ready = substitute_all(&server.ready, &values);
        wait_ready(
            running.processes.last_mut(),
            &ready,
            launch,
            Duration::from_secs_f64(server.ready_timeout_s.max(0.0)),
        )?;
    }
    for command in &def.prepare {
        launch::run_to_end(
            &substitute_all(command, &values),
            &cgroups,
            launch.scratch,
            setup_timeout,
        )
        .map_err(|e| format!("prepare: {e}"))?;
    }
    let argv = substitute_all(&def.command, &values);
    let capture = match def.metric {
        Metric::Output { .. } => Capture::Both,
        _ => Capture::Neither,
    };
    let mut process = launch::spawn(&argv, &cgroups, launch.scratch, capture)
        .map_err(|e| format!("cannot start {}: {e}", argv.join(" ")))?;
    let streams = [
        process
            .child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
        process
            .child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
    ];
    running.processes.push(process);
    attach_metric(def, launch, &values, streams, running)
}

/// The workload's performance source: its output parsed line by line, its Prometheus
/// endpoint, or a command, as its definition says.
fn attach_metric(
    def: &Definition,
    launch: &Launch<'_>,
    values: &Values,
    streams: [Option<Box<dyn Read + Send>>; 2],
    running: &mut Running,
) -> Result<(), String> {
    match &def.metric {
        Metric::Output {
            regex,
            mode,
            stream,
        } => {
            let pattern =
                LinePattern::new(regex, *mode).map_err(|e| format!("metric.regex: {e}"))?;
            let (reporter, source) = pushed::channel(def.name.clone(), mode.kind());
            running.source = AnySource::Pushed(source);
            // One parser for both pipes: an `increment` metric keeps one running total.
            let metric = Arc::new(Mutex::new(LineMetric::new(pattern)));
            let [stdout, stderr] = streams;
            let wanted = [(stdout, stream.stdout()), (stderr, stream.stderr())];
            for (pipe, read_it) in wanted {
                let Some(pipe) = pipe else { continue };
                let parse = ReadLine {
                    metric: Arc::clone(&metric),
                    reporter: read_it.then(|| reporter.clone()),
                };
                let reader =
                    launch::read_lines(def.name.clone(), pipe, move |line| parse.line(line))
                        .map_err(|e| format!("cannot start a reader thread: {e}"))?;
                running.readers.push(reader);
            }
        }
        Metric::Prometheus { url, selector } => {
            let spec = SourceSpec::Prometheus {
                url: substitute(url, values)?,
                selector: selector.clone(),
            };
            running.source = build(spec, &def.name, launch)?;
        }
        Metric::Command { argv, counter } => {
            let spec = SourceSpec::Command {
                argv: substitute_all(argv, values),
                counter: *counter,
            };
            running.source = build(spec, &def.name, launch)?;
        }
    }
    Ok(())
}

/// One pipe's lines into the workload's metric.
struct ReadLine {
    /// Shared by the stdout and stderr readers.
    metric: Arc<Mutex<LineMetric>>,
    /// `None` for a stream the metric does not read (drained only).
    reporter: Option<Reporter>,
}

impl ReadLine {
    fn line(&self, line: &str) {
        let Some(reporter) = &self.reporter else {
            return;
        };
        let value = self
            .metric
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .line(line);
        if let Some(value) = value {
            // An error means nobody measures now; the line is dropped.
            let _ = reporter.report(value);
        }
    }
}

/// Builds a pulled source on a thread of its own: the caller may be inside an async
/// runtime, where another cannot be entered.
fn build(spec: SourceSpec, name: &str, launch: &Launch<'_>) -> Result<AnySource, String> {
    let cgroup = launch.cgroup_dir.to_path_buf();
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                // The operator's own workload file: its commands run as the operator.
                block_on(spec.build(
                    name,
                    &cgroup,
                    &CpuSet::new(),
                    placed_host::observe::Commands::Own,
                ))
                .map_err(|e| e.to_string())?
                .map(|(source, _)| source)
                .map_err(|e| format!("metric: {e}"))
            })
            .join()
            .map_err(|_| "building the metric source panicked".to_owned())?
    })
}

/// Polls `ready` until it succeeds, the server exits, or `timeout` passes.
fn wait_ready(
    server: Option<&mut Process>,
    ready: &[String],
    launch: &Launch<'_>,
    timeout: Duration,
) -> Result<(), String> {
    let Some(server) = server else { return Ok(()) };
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(status) = server.exited() {
            return Err(format!(
                "server {} exited ({status}) before it was ready",
                server.what
            ));
        }
        // Outside the workload's cgroups: the check is not part of the workload.
        let last = match launch::run_to_end(ready, &[], launch.scratch, READY_CHECK_TIMEOUT) {
            Ok(()) => return Ok(()),
            Err(e) => e,
        };
        if Instant::now() >= deadline {
            return Err(format!(
                "server {} not ready after {timeout:?}; last check: {last}",
                server.what
            ));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A TCP port free now on the loopback interface, for a server to listen on.
fn free_port() -> Result<u16, String> {
    let listener = std::net::TcpListener::bind(("127.0.0.1", 0))
        .map_err(|e| format!("cannot find a free port: {e}"))?;
    listener
        .local_addr()
        .map(|a| a.port())
        .map_err(|e| format!("cannot find a free port: {e}"))
}
