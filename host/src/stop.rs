//! One way to stop, for the three binaries: SIGINT, SIGTERM and SIGHUP become a [`Stop`],
//! seen by blocking work as a flag, by async code as a cancellation token, and by messages
//! as the signal's name.
//!
//! [`SignalWatch::start`] registers safe handlers ([`signal_hook`]: the handler only records
//! the signal and wakes a thread of ours; no `unsafe` here) and routes each signal on that
//! thread: SIGINT and SIGTERM stop; SIGHUP stops too, or calls a reload hook instead
//! ([`OnHangup::Reload`]). The first stop wins and is announced once; later signals are
//! only logged, so a second Ctrl-C cannot cut short the orderly stop the first one began (a
//! frozen container is thawed, a cpuset settled). SIGKILL cannot be caught.
//!
//! The handlers are installed with `SA_RESTART`, so a system call a signal interrupts
//! resumes. Once a watch is dropped, the signals it took are ignored for the rest of the
//! process (the handler stays installed with nothing to do); keep the watch for as long as
//! the work it guards.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::JoinHandle;

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::{Handle, Signals};
use tokio_util::sync::CancellationToken;

/// A signal this module routes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Signal {
    /// SIGINT: Ctrl-C.
    Interrupt,
    /// SIGTERM: systemd, `docker stop`, `kill`.
    Terminate,
    /// SIGHUP: the terminal went away, or (for a daemon) "reload".
    Hangup,
}

impl Signal {
    const ALL: [Signal; 3] = [Signal::Interrupt, Signal::Terminate, Signal::Hangup];

    pub fn name(self) -> &'static str {
        match self {
            Signal::Interrupt => "SIGINT",
            Signal::Terminate => "SIGTERM",
            Signal::Hangup => "SIGHUP",
        }
    }

    /// The signal's number.
    pub fn number(self) -> i32 {
        match self {
            Signal::Interrupt => SIGINT,
            Signal::Terminate => SIGTERM,
            Signal::Hangup => SIGHUP,
        }
    }

    fn from_number(n: i32) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.number() == n)
    }
}

impl std::fmt::Display for Signal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A request to stop, shared by everything that must stop. Cheap to clone; clones are the
/// same request.
#[derive(Debug, Clone, Default)]
pub struct Stop {
    inner: Arc<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    flag: Arc<AtomicBool>,
    token: CancellationToken,
    /// The signal that stopped it; unset for a stop asked for by the program itself.
    signal: OnceLock<Signal>,
}

impl Stop {
    pub fn new() -> Self {
        Self::default()
    }

    /// Stops without a signal (a test, or the program deciding to end).
    pub fn request(&self) {
        self.stop(None);
    }

    /// Stops; the first cause is kept. Returns whether this call was the one that stopped.
    fn stop(&self, signal: Option<Signal>) -> bool {
        if self.is_stopped() {
            return false;
        }
        // The signal is recorded before the flag is set, so that whoever sees the stop
        // (the token is cancelled last) also sees what caused it.
        if let Some(s) = signal {
            let _ = self.inner.signal.set(s);
        }
        let first = !self.inner.flag.swap(true, Ordering::AcqRel);
        self.inner.token.cancel();
        first
    }

    pub fn is_stopped(&self) -> bool {
        self.inner.flag.load(Ordering::Acquire)
    }

    /// The flag for blocking work (set once stopped), such as
    /// [`crate::enact::ApplyOptions::cancel`].
    pub fn flag(&self) -> Arc<AtomicBool> {
        self.inner.flag.clone()
    }

    /// The token for async work (cancelled once stopped).
    pub fn token(&self) -> CancellationToken {
        self.inner.token.clone()
    }

    /// Resolves once stopped.
    pub async fn stopped(&self) {
        self.inner.token.cancelled().await;
    }

    /// The signal that stopped it, if a signal did.
    pub fn signal(&self) -> Option<Signal> {
        self.inner.signal.get().copied()
    }
}

/// What SIGHUP does.
pub enum OnHangup {
    /// Stop, like SIGINT and SIGTERM.
    Stop,
    /// Call the hook (on the watch's thread; keep it short, e.g. send on a channel) and go
    /// on running.
    Reload(Box<dyn Fn() + Send>),
}

impl std::fmt::Debug for OnHangup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            OnHangup::Stop => "Stop",
            OnHangup::Reload(_) => "Reload",
        })
    }
}

/// The signals could not be taken.
#[derive(Debug, thiserror::Error)]
#[error("cannot take SIGINT, SIGTERM and SIGHUP")]
pub struct SignalError {
    #[source]
    pub source: std::io::Error,
}

/// The thread that routes SIGINT, SIGTERM and SIGHUP to a [`Stop`] (and SIGHUP perhaps to a
/// reload hook). Dropping it, or [`SignalWatch::finish`], routes what is still pending and
/// ends the thread.
#[derive(Debug)]
pub struct SignalWatch {
    stop: Stop,
    handle: Handle,
    thread: Option<JoinHandle<()>>,
}

impl SignalWatch {
    /// Takes the three signals for `stop`. `announce` runs once, on the watch's thread, when
    /// the first signal stops it (placectl prints a line; the daemon logs).
    pub fn start(
        stop: &Stop,
        hangup: OnHangup,
        announce: impl Fn(Signal) + Send + 'static,
    ) -> Result<Self, SignalError> {
        let mut signals = Signals::new(Signal::ALL.map(Signal::number))
            .map_err(|source| SignalError { source })?;
        let handle = signals.handle();
        let route = Route {
            stop: stop.clone(),
            hangup,
            announce: Box::new(announce),
        };
        let thread = std::thread::Builder::new()
            .name("placed-signals".into())
            .spawn(move || {
                loop {
                    // Once closed, `wait` still hands over what arrived before the close.
                    for n in signals.wait() {
                        route.take(n);
                    }
                    if signals.is_closed() {
                        break;
                    }
                }
            })
            .map_err(|source| {
                handle.close();
                SignalError { source }
            })?;
        Ok(Self {
            stop: stop.clone(),
            handle,
            thread: Some(thread),
        })
    }

    pub fn stop(&self) -> &Stop {
        &self.stop
    }

    /// Routes what is pending, ends the thread, and returns the signal that stopped the
    /// work, if one did (one that arrived just before this call included).
    pub fn finish(mut self) -> Option<Signal> {
        self.close();
        self.stop.signal()
    }

    fn close(&mut self) {
        self.handle.close();
        if let Some(t) = self.thread.take() {
            if t.join().is_err() {
                tracing::error!("the signal thread panicked");
            }
        }
    }
}

impl Drop for SignalWatch {
    fn drop(&mut self) {
        self.close();
    }
}

/// What the watch's thread does with each signal.
struct Route {
    stop: Stop,
    hangup: OnHangup,
    announce: Box<dyn Fn(Signal) + Send>,
}

impl Route {
    fn take(&self, number: i32) {
        let Some(signal) = Signal::from_number(number) else {
            return;
        };
        if let (Signal::Hangup, OnHangup::Reload(reload)) = (signal, &self.hangup) {
            tracing::info!(signal = signal.name(), "reload requested");
            reload();
            return;
        }
        if self.stop.stop(Some(signal)) {
            (self.announce)(signal);
        } else {
            tracing::info!(signal = signal.name(), "already stopping");
        }
    }
}

#[cfg(test)]
mod tests;
