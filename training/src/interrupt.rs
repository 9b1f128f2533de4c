//! SIGINT and SIGTERM as a flag the collector checks, so that a stopped collection still
//! stops its workload and removes its cgroups (the default action would kill the process
//! with the cgroups in place).

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::time::Duration;

static RAISED: AtomicBool = AtomicBool::new(false);
static SIGNAL: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(signal: libc::c_int) {
    // Only atomics here: a signal handler may interrupt anything, the allocator included.
    SIGNAL.store(signal, Ordering::SeqCst);
    RAISED.store(true, Ordering::SeqCst);
}

/// Installs the handler for SIGINT and SIGTERM. Idempotent.
pub fn install() -> std::io::Result<()> {
    for signal in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: the handler only stores to atomics, which is async-signal-safe; the
        // sigaction struct is zeroed (no flags, empty mask) before the handler is set.
        let rc = unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, std::ptr::null_mut())
        };
        if rc != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Whether SIGINT or SIGTERM arrived.
pub fn raised() -> bool {
    RAISED.load(Ordering::SeqCst)
}

/// The signal that arrived (0 if none).
pub fn signal() -> i32 {
    SIGNAL.load(Ordering::SeqCst)
}

/// Resolves once a signal has arrived; raced against a measurement so that Ctrl-C does not
/// wait for the measurement to end.
pub async fn wait() {
    while !raised() {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
