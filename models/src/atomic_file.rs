//! Replacing a file so that readers see the old content or the new, never a part: a
//! temporary file beside it, fsync, rename, fsync of the directory. A crash at any point
//! leaves the old file or the new one (and at worst a stray `.<name>.tmp-<pid>`).
//!
//! It lives in this crate because every other part of placed (the daemon's state file,
//! model files, the collector's outputs) depends on it.

use std::io::Write as _;
use std::path::Path;

/// Writes `parts` one after another as the new content of `path`.
pub fn write(path: &Path, parts: &[&[u8]]) -> std::io::Result<()> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map_or_else(|| "file".into(), |n| n.to_string_lossy().into_owned());
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        for part in parts {
            f.write_all(part)?;
        }
        f.sync_all()?;
        std::fs::rename(&tmp, path)?;
        // The rename is durable only once the directory entry is.
        std::fs::File::open(dir)?.sync_all()
    })();
    if result.is_err() {
        // Best effort: the error being returned matters more than a leftover file.
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_whole_and_leaves_nothing_beside() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.json");
        write(&path, &[b"old"]).unwrap();
        write(&path, &[b"new ", b"content"]).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new content");
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1);
        let err = write(&dir.path().join("missing/f"), &[b"x"]).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::NotFound);
    }
}
