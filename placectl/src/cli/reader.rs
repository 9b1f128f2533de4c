//! Whether stdout's reader went away, noticed as it happens rather than at the next write:
//! a `placectl watch | head -1` whose `head` has its line ends then, even when no further
//! event comes to write.
//!
//! poll(2) on stdout with no events asked reports only POLLERR (a pipe whose read end is
//! closed) and POLLHUP (a terminal or socket that hung up); a file or /dev/null reports
//! neither, and the wait lasts as long as the process.

/// Resolves once stdout's reader has gone; never, when stdout is not something whose
/// reader can go.
pub async fn gone() {
    let (tx, rx) = tokio::sync::oneshot::channel();
    // A thread of its own, left blocked in poll(2) while the reader stays: a runtime's
    // blocking task would hold the runtime's shutdown until the reader went.
    let watching = std::thread::Builder::new()
        .name("stdout-reader".into())
        .spawn(move || {
            if hung_up(libc::STDOUT_FILENO) {
                let _ = tx.send(());
            }
        });
    match watching {
        Ok(_) if rx.await.is_ok() => {}
        // No thread, or stdout cannot be polled: only a write will tell.
        _ => std::future::pending().await,
    }
}

/// Waits until `fd` reports an error or a hang-up; false when it cannot be polled.
fn hung_up(fd: libc::c_int) -> bool {
    let mut poll = libc::pollfd {
        fd,
        events: 0,
        revents: 0,
    };
    loop {
        // SAFETY: `poll` is one valid, initialised pollfd that outlives the call, and the
        // count says one.
        let n = unsafe { libc::poll(&raw mut poll, 1, -1) };
        if n < 0 {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return false;
        }
        if poll.revents & libc::POLLNVAL != 0 {
            return false;
        }
        if poll.revents & (libc::POLLERR | libc::POLLHUP) != 0 {
            return true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pipe_whose_reader_closed_hangs_up() {
        let mut fds = [0; 2];
        // SAFETY: pipe(2) fills the two descriptors of the array it is given.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        let [read_end, write_end] = fds;
        let waiting = std::thread::spawn(move || hung_up(write_end));
        // SAFETY: our own descriptors, each closed once.
        unsafe { libc::close(read_end) };
        // Returns (rather than blocking forever) only because the read end closed.
        assert!(waiting.join().unwrap());
        // SAFETY: as above.
        unsafe { libc::close(write_end) };
    }
}
