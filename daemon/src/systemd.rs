//! systemd integration: `Type=notify` readiness, reloads, status lines, and the watchdog.
//!
//! Outside systemd (`NOTIFY_SOCKET` unset) every call is a no-op, so the daemon runs the same
//! by hand, in tests and under the unit.

use std::time::Duration;

use sd_notify::NotifyState;
use tokio_util::sync::CancellationToken;

/// Tells systemd the daemon is ready: state restored, sockets listening.
pub fn ready(status: &str) {
    notify(&[NotifyState::Ready, NotifyState::Status(status)]);
}

/// Tells systemd a reload has begun: `RELOADING=1` with the `CLOCK_MONOTONIC` time of the
/// request, as systemd >= 253 requires of `Type=notify-reload` services (it then waits for
/// [`ready`]); older systemd (Debian 12 has 252) takes `RELOADING=1` as a state change and
/// ignores the time. The unit's `ExecReload=kill -HUP` works on both.
pub fn reloading() {
    match NotifyState::monotonic_usec_now() {
        Ok(now) => notify(&[
            NotifyState::Reloading,
            now,
            NotifyState::Status("reloading the configuration"),
        ]),
        // Without the time systemd >= 253 would fail the reload; a status line it takes.
        Err(e) => {
            tracing::warn!(error = %e, "cannot read the monotonic clock for systemd's reload notice");
            notify(&[NotifyState::Status("reloading the configuration")]);
        }
    }
}

pub fn status(status: &str) {
    notify(&[NotifyState::Status(status)]);
}

pub fn stopping() {
    notify(&[NotifyState::Stopping, NotifyState::Status("stopping")]);
}

fn notify(states: &[NotifyState<'_>]) {
    if let Err(e) = sd_notify::notify(false, states) {
        tracing::warn!(error = %e, "cannot notify systemd");
    }
}

/// The interval at which to ping the watchdog (half of `WatchdogSec`), if one is set.
pub fn watchdog_interval() -> Option<Duration> {
    let mut usec = 0u64;
    sd_notify::watchdog_enabled(false, &mut usec).then(|| Duration::from_micros(usec / 2))
}

/// Pings the watchdog until cancelled, as long as `alive` answers: a wedged daemon stops
/// pinging and systemd restarts it.
pub async fn watchdog<F, Fut>(interval: Duration, cancel: CancellationToken, alive: F)
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let mut tick = tokio::time::interval(interval);
    loop {
        tokio::select! {
            _ = cancel.cancelled() => return,
            _ = tick.tick() => {
                if tokio::time::timeout(interval, alive()).await.unwrap_or(false) {
                    notify(&[NotifyState::Watchdog]);
                } else {
                    tracing::error!("daemon did not answer its own liveness check; not pinging the watchdog");
                }
            }
        }
    }
}
