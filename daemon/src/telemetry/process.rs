//! The standard process metrics (`process_cpu_seconds_total`, `process_resident_memory_bytes`,
//! `process_open_fds`, `process_max_fds`, `process_start_time_seconds`), read from /proc at
//! each scrape under the names every Prometheus client library uses, so existing dashboards
//! and alerts work unchanged.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;

/// This process, as /proc shows it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Stats {
    pub cpu_seconds: f64,
    pub resident_bytes: f64,
    pub open_fds: f64,
    pub max_fds: f64,
    pub start_time_seconds: f64,
}

impl Stats {
    /// Reads /proc/self; a figure that cannot be read is left out (`None` for the whole
    /// when /proc/self/stat cannot be read, e.g. without /proc).
    pub fn read() -> Option<Self> {
        let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
        let boot = std::fs::read_to_string("/proc/stat").ok();
        let limits = std::fs::read_to_string("/proc/self/limits").ok();
        let open_fds = std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count());
        let mut s = parse_stat(&stat, ticks_per_second(), page_size())?;
        s.open_fds = open_fds as f64;
        s.max_fds = limits.as_deref().and_then(max_open_files).unwrap_or(0.0);
        if let Some(boot) = boot.as_deref().and_then(boot_time) {
            s.start_time_seconds += boot;
        }
        Some(s)
    }
}

fn ticks_per_second() -> f64 {
    // SAFETY: sysconf reads a constant of the C library and has no preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 { t as f64 } else { 100.0 }
}

fn page_size() -> f64 {
    // SAFETY: as above.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 { p as f64 } else { 4096.0 }
}

/// CPU time, resident memory and start time (seconds after boot) from /proc/self/stat.
pub fn parse_stat(stat: &str, ticks: f64, page: f64) -> Option<Stats> {
    // The command name (field 2) may hold spaces and parentheses: fields are counted from
    // after its closing parenthesis, where field 3 (state) begins.
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let field = |n: usize| -> Option<f64> { fields.get(n - 3)?.parse().ok() };
    Some(Stats {
        cpu_seconds: (field(14)? + field(15)?) / ticks,
        start_time_seconds: field(22)? / ticks,
        resident_bytes: field(24)? * page,
        ..Stats::default()
    })
}

/// The soft limit on open files from /proc/self/limits.
pub fn max_open_files(limits: &str) -> Option<f64> {
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    let soft = line
        .strip_prefix("Max open files")?
        .split_whitespace()
        .next()?;
    if soft == "unlimited" {
        return Some(f64::INFINITY);
    }
    soft.parse().ok()
}

/// The boot time (seconds since the epoch) from /proc/stat's `btime`.
fn boot_time(stat: &str) -> Option<f64> {
    stat.lines()
        .find_map(|l| l.strip_prefix("btime "))?
        .trim()
        .parse()
        .ok()
}

/// Encodes [`Stats`] at each scrape.
#[derive(Debug)]
pub struct ProcessCollector;

impl Collector for ProcessCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let Some(s) = Stats::read() else {
            return Ok(());
        };
        let cpu = ConstCounter::new(s.cpu_seconds);
        cpu.encode(encoder.encode_descriptor(
            "process_cpu_seconds",
            "Total user and system CPU time spent in seconds.",
            None,
            cpu.metric_type(),
        )?)?;
        for (name, help, value) in [
            (
                "process_resident_memory_bytes",
                "Resident memory size in bytes.",
                s.resident_bytes,
            ),
            (
                "process_open_fds",
                "Number of open file descriptors.",
                s.open_fds,
            ),
            (
                "process_max_fds",
                "Maximum number of open file descriptors.",
                s.max_fds,
            ),
            (
                "process_start_time_seconds",
                "Start time of the process since unix epoch in seconds.",
                s.start_time_seconds,
            ),
        ] {
            let g = ConstGauge::new(value);
            g.encode(encoder.encode_descriptor(name, help, None, g.metric_type())?)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_count_from_after_the_command_name() {
        // A command name with a space and a parenthesis, as a process may choose.
        let stat = "4242 (pla ced) x) S 1 4242 4242 0 -1 4194560 500 0 0 0 250 150 0 0 20 0 \
                    9 0 12345 1000000 300 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0";
        let s = parse_stat(stat, 100.0, 4096.0).unwrap();
        assert_eq!(s.cpu_seconds, 4.0);
        assert_eq!(s.start_time_seconds, 123.45);
        assert_eq!(s.resident_bytes, 300.0 * 4096.0);
    }

    #[test]
    fn the_soft_descriptor_limit_is_read() {
        let limits = "Limit                     Soft Limit           Hard Limit           Units\n\
                      Max cpu time              unlimited            unlimited            seconds\n\
                      Max open files            1024                 524288               files\n";
        assert_eq!(max_open_files(limits), Some(1024.0));
        assert_eq!(max_open_files("nothing"), None);
    }

    #[test]
    fn this_process_is_read() {
        let s = Stats::read().expect("/proc/self");
        assert!(s.resident_bytes > 0.0 && s.open_fds >= 3.0 && s.max_fds >= s.open_fds);
        assert!(s.start_time_seconds > 1.0e9, "{s:?}");
    }
}
