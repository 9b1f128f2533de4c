//! Logs through `tracing`: text without colours or timestamps under journald (which adds
//! its own), text with timestamps on a terminal, or JSON lines for log shippers.
//!
//! Under journald each line starts with its syslog priority as sd-daemon(3) describes
//! (`<3>` error, `<4>` warning, `<6>` info, `<7>` debug and trace): journald strips the
//! prefix and files the line under that priority, so `journalctl -p warning -u placed`
//! shows warnings and errors. The prefix is written only when stderr really is the journal
//! stream systemd connected (`JOURNAL_STREAM` names stderr's device and inode), not merely
//! when the variable is inherited by a process whose stderr went elsewhere.
//!
//! The level filter can be changed while running ([`LogControl::set_level`], from a reload).

use std::ffi::OsStr;
use std::fmt;
use std::os::fd::AsFd;

use tracing::{Event, Level, Subscriber};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::reload;
use tracing_subscriber::util::SubscriberInitExt;

use crate::config::LogFormat;

/// The syslog priority journald files a line of this level under.
pub fn priority(level: Level) -> u8 {
    match level {
        Level::ERROR => 3,
        Level::WARN => 4,
        Level::INFO => 6,
        Level::DEBUG | Level::TRACE => 7,
    }
}

/// Whether `journal_stream` (the value of `JOURNAL_STREAM`, `<device>:<inode>` in decimal)
/// names the file `fd` is open on.
pub fn is_journal(journal_stream: Option<&OsStr>, fd: impl AsFd) -> bool {
    let Some((dev, ino)) = journal_stream
        .and_then(OsStr::to_str)
        .and_then(|v| v.split_once(':'))
    else {
        return false;
    };
    let (Ok(dev), Ok(ino)) = (dev.parse::<u64>(), ino.parse::<u64>()) else {
        return false;
    };
    match nix::sys::stat::fstat(fd) {
        Ok(st) => st.st_dev == dev && st.st_ino == ino,
        Err(_) => false,
    }
}

/// Whether this process's stderr is connected to the journal.
pub fn stderr_is_journal() -> bool {
    is_journal(
        std::env::var_os("JOURNAL_STREAM").as_deref(),
        std::io::stderr(),
    )
}

/// A formatter that puts the event's sd-daemon priority prefix before what `inner` writes.
#[derive(Debug, Clone)]
pub struct Prefixed<F> {
    inner: F,
}

impl<F> Prefixed<F> {
    pub fn new(inner: F) -> Self {
        Self { inner }
    }
}

impl<S, N, F> FormatEvent<S, N> for Prefixed<F>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
    F: FormatEvent<S, N>,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        write!(writer, "<{}>", priority(*event.metadata().level()))?;
        self.inner.format_event(ctx, writer, event)
    }
}

/// Changes the running daemon's log level.
#[derive(Debug, Clone)]
pub struct LogControl {
    filter: reload::Handle<EnvFilter, tracing_subscriber::Registry>,
    /// `RUST_LOG` was set: it wins over the configuration, at start and on reload.
    from_env: bool,
}

/// A log level the configuration gave that is not a valid filter.
#[derive(Debug, thiserror::Error)]
#[error(
    "daemon.log_level = {level:?} is not a log filter (e.g. \"info\" or \"info,placed=debug\"): {detail}"
)]
pub struct LevelError {
    pub level: String,
    pub detail: String,
}

impl LogControl {
    /// Applies `level` (an `EnvFilter` directive such as `info` or `warn,placed=debug`).
    /// Returns whether it took effect: not while `RUST_LOG` overrides the configuration.
    pub fn set_level(&self, level: &str) -> Result<bool, LevelError> {
        let filter = parse_level(level)?;
        if self.from_env {
            return Ok(false);
        }
        self.filter
            .reload(filter)
            .map_err(|e| LevelError::new(level, &e))
            .map(|()| true)
    }
}

pub fn parse_level(level: &str) -> Result<EnvFilter, LevelError> {
    EnvFilter::try_new(level).map_err(|e| LevelError::new(level, &e))
}

impl LevelError {
    /// The level and the parser's complaint (which quotes the bad directive) are cut: the
    /// level comes from the configuration file, of any length.
    fn new(level: &str, e: &dyn std::fmt::Display) -> Self {
        Self {
            level: placed_core::text::clip(level, 80),
            detail: placed_core::text::clip(&e.to_string(), 200),
        }
    }
}

/// Sets up the global subscriber at `level` (`RUST_LOG` overrides it). A second call (tests)
/// keeps the first subscriber and returns `None`.
pub fn init(format: LogFormat, level: &str) -> Option<LogControl> {
    let env = EnvFilter::try_from_default_env().ok();
    let from_env = env.is_some();
    let filter = env
        .or_else(|| parse_level(level).ok())
        .unwrap_or_else(|| EnvFilter::new("info"));
    let (filter, handle) = reload::Layer::new(filter);
    let journal = stderr_is_journal();
    let result = tracing_subscriber::registry()
        .with(filter)
        .with(layer(format, journal, std::io::stderr))
        .try_init();
    result.ok().map(|()| LogControl {
        filter: handle,
        from_env,
    })
}

/// The formatting layer for `format`, with priority prefixes when `journal`, writing to
/// `writer`.
pub fn layer<S, W>(
    format: LogFormat,
    journal: bool,
    writer: W,
) -> Box<dyn tracing_subscriber::Layer<S> + Send + Sync>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    W: for<'w> tracing_subscriber::fmt::MakeWriter<'w> + Send + Sync + 'static,
{
    let base = tracing_subscriber::fmt::layer()
        .with_writer(writer)
        .with_ansi(false);
    match (format, journal) {
        (LogFormat::Json, false) => Box::new(base.json().flatten_event(true)),
        // journald strips the prefix: the journal's MESSAGE is still one JSON object.
        (LogFormat::Json, true) => Box::new(base.json().event_format(Prefixed::new(
            tracing_subscriber::fmt::format().json().flatten_event(true),
        ))),
        (LogFormat::Text, false) => Box::new(base),
        // The priority says the level (journalctl colours it and filters on it), and the
        // padded level word would leave a leading space once journald strips the prefix.
        (LogFormat::Text, true) => Box::new(
            base.event_format(Prefixed::new(
                tracing_subscriber::fmt::format()
                    .without_time()
                    .with_target(false)
                    .with_level(false)
                    .with_ansi(false),
            )),
        ),
    }
}

#[cfg(test)]
mod tests;
