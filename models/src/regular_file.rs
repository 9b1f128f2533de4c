//! Reading a file that must be a regular file, without ever blocking on one that is not.
//!
//! A FIFO named `state.json` or `model.json` blocks `open(2)` for reading until a writer
//! comes, and that hung the daemon's start-up for good (it did not even answer SIGTERM).
//! Opening with `O_NONBLOCK` returns at once whatever the file is; the type is then checked
//! on the open descriptor, so nothing can swap the file between the check and the read.

use std::io::Read as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::Path;

/// The error [`read`] gives for a FIFO, socket, device or directory.
#[derive(Debug, thiserror::Error)]
#[error("not a regular file")]
pub struct NotRegular;

/// Whether `e` is [`read`]'s refusal of a file that is not regular.
pub fn is_not_regular(e: &std::io::Error) -> bool {
    e.get_ref().is_some_and(|inner| inner.is::<NotRegular>())
}

/// Reads the whole of `path`, which must be a regular file.
pub fn read(path: &Path) -> std::io::Result<Vec<u8>> {
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            NotRegular,
        ));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    file.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// [`read`], as UTF-8 text.
pub fn read_to_string(path: &Path) -> std::io::Result<String> {
    String::from_utf8(read(path)?)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fifo_is_refused_without_blocking_and_a_file_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("model.json");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        // Without O_NONBLOCK this open never returns: no writer ever comes.
        let err = read(&fifo).unwrap_err();
        assert!(is_not_regular(&err), "{err}");
        assert!(is_not_regular(&read(dir.path()).unwrap_err()));
        let file = dir.path().join("f.json");
        std::fs::write(&file, "{}").unwrap();
        assert_eq!(read_to_string(&file).unwrap(), "{}");
        let missing = read(&dir.path().join("none")).unwrap_err();
        assert_eq!(missing.kind(), std::io::ErrorKind::NotFound);
    }
}
