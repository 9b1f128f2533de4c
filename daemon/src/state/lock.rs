//! One daemon per state file: an exclusive `flock` on `<state file>.lock`, held for the
//! daemon's whole life. Without it a second daemon with another socket and the same state
//! file ran beside the first, both handed out the same exclusive units, and the file kept
//! only the last writer's view.
//!
//! The lock file holds the holder's pid, so that a refused daemon names it. The lock goes
//! with the process (the kernel drops it when the descriptor closes), so a daemon that was
//! killed never leaves a lock behind.

use std::io::{Read as _, Seek as _, Write as _};
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};

use nix::fcntl::{Flock, FlockArg};

use super::StateError;

/// The held lock; dropping it releases it.
#[derive(Debug)]
pub struct StateLock {
    path: PathBuf,
    _file: Flock<std::fs::File>,
}

impl StateLock {
    /// The lock file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// The lock file that guards `state`.
pub fn lock_path(state: &Path) -> PathBuf {
    let mut name = state.file_name().unwrap_or_default().to_owned();
    name.push(".lock");
    state.with_file_name(name)
}

/// Takes the lock for `state`, or says which process holds it.
pub fn acquire(state: &Path) -> Result<StateLock, StateError> {
    let path = lock_path(state);
    let io = |source: std::io::Error| StateError::Lock {
        path: path.clone(),
        source,
    };
    if let Some(dir) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        super::store::create_private_dir(dir).map_err(io)?;
    }
    // O_NONBLOCK: a FIFO planted at the lock path must not hang start-up; it is refused below.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(super::store::FILE_MODE)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW)
        .open(&path)
        .map_err(io)?;
    if !file.metadata().map_err(io)?.is_file() {
        return Err(io(std::io::Error::other("not a regular file")));
    }
    let mut file = match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
        Ok(f) => f,
        Err((mut file, nix::errno::Errno::EWOULDBLOCK)) => {
            let mut text = String::new();
            let holder = file
                .read_to_string(&mut text)
                .ok()
                .and_then(|_| text.trim().parse().ok());
            return Err(StateError::Locked {
                path: state.to_owned(),
                holder,
            });
        }
        Err((_, errno)) => return Err(io(errno.into())),
    };
    // The pid only names the holder to a refused daemon: on a full disk the lock still
    // holds, and the daemon must start with its intact state file.
    let named = file
        .set_len(0)
        .and_then(|()| file.rewind())
        .and_then(|_| writeln!(file, "{}", std::process::id()));
    if let Err(e) = named {
        tracing::warn!(path = %path.display(), error = %e, "cannot write this daemon's pid into the lock file");
    }
    Ok(StateLock { path, _file: file })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_is_refused_with_the_first_ones_pid() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state.json");
        let first = acquire(&state).unwrap();
        assert_eq!(first.path(), dir.path().join("state.json.lock"));
        // flock locks belong to the open file description: a second open in this process
        // conflicts exactly as a second daemon's would.
        match acquire(&state) {
            Err(StateError::Locked { path, holder }) => {
                assert_eq!(path, state);
                assert_eq!(holder, Some(std::process::id()));
            }
            other => panic!("{other:?}"),
        }
        let err = acquire(&state).unwrap_err();
        assert!(
            err.to_string().contains(&std::process::id().to_string()),
            "{err}"
        );
        assert_eq!(err.fault(), placed_core::fault::Fault::Transient);
        drop(first);
        acquire(&state).unwrap();
    }

    #[test]
    fn a_fifo_at_the_lock_path_is_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state.json");
        nix::unistd::mkfifo(&lock_path(&state), nix::sys::stat::Mode::S_IRWXU).unwrap();
        assert!(matches!(acquire(&state), Err(StateError::Lock { .. })));
    }
}
