//! SIGINT, SIGTERM and SIGHUP as a stop the collector and the calibration check, so that a
//! stopped run still stops its workload and removes its cgroups (the default action would
//! kill the process with the cgroups in place).
//!
//! The mechanism is `placed_host::stop`, the one the daemon and `placectl move` use; this
//! module keeps the process's one watch, installed by [`install`], for the free functions
//! the collector and the calibration call.

use std::sync::{Mutex, MutexGuard, PoisonError};

use placed_host::stop::{OnHangup, SignalWatch, Stop};

/// The process's watch, once installed; never dropped, so the signals stay taken.
static WATCH: Mutex<Option<SignalWatch>> = Mutex::new(None);

fn watch() -> MutexGuard<'static, Option<SignalWatch>> {
    WATCH.lock().unwrap_or_else(PoisonError::into_inner)
}

fn stop() -> Option<Stop> {
    watch().as_ref().map(|w| w.stop().clone())
}

/// Takes SIGINT, SIGTERM and SIGHUP. Idempotent.
pub fn install() -> std::io::Result<()> {
    let mut slot = watch();
    if slot.is_none() {
        let w = SignalWatch::start(&Stop::new(), OnHangup::Stop, |signal| {
            tracing::warn!(signal = signal.name(), "stopping after the current step");
        })
        .map_err(std::io::Error::other)?;
        *slot = Some(w);
    }
    Ok(())
}

/// Whether a signal arrived.
pub fn raised() -> bool {
    stop().is_some_and(|s| s.is_stopped())
}

/// The number of the signal that arrived (0 if none).
pub fn signal() -> i32 {
    stop()
        .and_then(|s| s.signal())
        .map_or(0, placed_host::stop::Signal::number)
}

/// Resolves once a signal has arrived (never, before [`install`]); raced against a
/// measurement so that Ctrl-C does not wait for the measurement to end.
pub async fn wait() {
    match stop() {
        Some(s) => s.stopped().await,
        None => std::future::pending().await,
    }
}
