//! Replacing a file so that readers see the old content or the new, never a part: a
//! temporary file beside it, fsync, rename, fsync of the directory. A crash at any point
//! leaves the old file or the new one (and at worst a stray `.<name>.tmp-<pid>-<n>`, which
//! [`remove_stale`] clears once the caller knows no other writer is at work).
//!
//! The one implementation of durable writes in placed: the daemon's state file,
//! placed-train's model files, data sets and machine files, and the collector's data file
//! (which appends, and makes its creation durable with [`sync_parent`]). placed-models only
//! makes the bytes. Imports nothing else of placed-host.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Numbers this process's temporary files: two writes of the same file at once (two
/// threads, or a write a cancelled caller left running) must never share one, or the
/// second truncates the first's before it is renamed into place.
static NEXT: AtomicU64 = AtomicU64::new(0);

fn parts_of(path: &Path) -> (&Path, String) {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map_or_else(|| "file".into(), |n| n.to_string_lossy().into_owned());
    (dir, name)
}

fn prefix(name: &str) -> String {
    format!(".{name}.tmp-")
}

/// Creates a temporary file no one else has: `O_EXCL`, so even a name left by another
/// process with a recycled pid is never reused. Created with `mode` (less the umask), so
/// the content is never readable by more than `mode` allows, not even before the rename.
fn create_unique(dir: &Path, name: &str, mode: u32) -> std::io::Result<(PathBuf, std::fs::File)> {
    use std::os::unix::fs::OpenOptionsExt as _;
    loop {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let tmp = dir.join(format!("{}{}-{n}", prefix(name), std::process::id()));
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&tmp)
        {
            Ok(f) => return Ok((tmp, f)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
}

/// Writes `parts` one after another as the new content of `path`, readable as the umask
/// allows.
pub fn write(path: &Path, parts: &[&[u8]]) -> std::io::Result<()> {
    write_with_mode(path, parts, 0o666)
}

/// [`write()`], the new file created with `mode` (less the umask): a file that replaces a
/// more open one, written by an older version, takes the new mode.
pub fn write_with_mode(path: &Path, parts: &[&[u8]], mode: u32) -> std::io::Result<()> {
    write_owned(path, parts, mode, None)
}

/// [`write_with_mode`], the new file also given group `group` (when `Some`) before it is
/// renamed into place, so that it never appears with another group. A group this process
/// may not give (neither root nor a member: EPERM) is left as it is: the file is then
/// only less readable, never more.
pub fn write_owned(
    path: &Path,
    parts: &[&[u8]],
    mode: u32,
    group: Option<libc::gid_t>,
) -> std::io::Result<()> {
    let (dir, name) = parts_of(path);
    let (tmp, mut f) = create_unique(dir, &name, mode)?;
    let result = (|| {
        if let Some(gid) = group {
            match std::os::unix::fs::fchown(&f, None, Some(gid)) {
                Err(e) if e.raw_os_error() == Some(libc::EPERM) => {
                    tracing::debug!(path = %path.display(), gid, "cannot give the file its group; left as it is");
                }
                other => other?,
            }
        }
        for part in parts {
            f.write_all(part)?;
        }
        f.sync_all()?;
        std::fs::rename(&tmp, path)?;
        // The rename is durable only once the directory entry is.
        sync_dir(dir)
    })();
    if result.is_err() {
        // Best effort: the error being returned matters more than a leftover file.
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Makes the entry of `path` in its directory durable: after a file is created or renamed,
/// its data may be on disk while the name that leads to it is not.
pub fn sync_parent(path: &Path) -> std::io::Result<()> {
    sync_dir(parts_of(path).0)
}

fn sync_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::File::open(dir)?.sync_all()
}

/// The id of group `name`, if this host has it.
pub fn group_id(name: &str) -> Option<libc::gid_t> {
    let c = std::ffi::CString::new(name).ok()?;
    let mut group = std::mem::MaybeUninit::<libc::group>::uninit();
    let mut found: *mut libc::group = std::ptr::null_mut();
    let mut buf = vec![0 as libc::c_char; 16 * 1024];
    // SAFETY: every pointer is to memory we own, sized as passed; the result is read only
    // when getgrnam_r says it filled `group`.
    let rc = unsafe {
        libc::getgrnam_r(
            c.as_ptr(),
            group.as_mut_ptr(),
            buf.as_mut_ptr(),
            buf.len(),
            &mut found,
        )
    };
    if rc != 0 || found.is_null() {
        return None;
    }
    // SAFETY: getgrnam_r succeeded and pointed `found` at `group`.
    Some(unsafe { group.assume_init() }.gr_gid)
}

/// Removes the temporary files that writes of `path` left when their process died. Only
/// for a caller that knows no write of `path` is in progress anywhere (it holds the file's
/// lock): a live writer's temporary file would go too. Returns what it removed.
pub fn remove_stale(path: &Path) -> std::io::Result<Vec<PathBuf>> {
    let (dir, name) = parts_of(path);
    let prefix = prefix(&name);
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut removed = Vec::new();
    for entry in entries {
        let entry = entry?;
        let stale = entry
            .file_name()
            .to_str()
            .is_some_and(|n| n.strip_prefix(&prefix).is_some_and(|rest| !rest.is_empty()));
        // Only regular files: a directory or a link with a matching name is not ours.
        if stale && entry.file_type()?.is_file() {
            std::fs::remove_file(entry.path())?;
            removed.push(entry.path());
        }
    }
    Ok(removed)
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

    #[test]
    fn a_private_write_replaces_an_open_file_with_a_private_one() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.json");
        std::fs::write(&path, b"old").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        write_with_mode(&path, &[b"new"], 0o600).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{mode:o}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
    }

    /// Concurrent writers of one file: with one shared temporary name, a writer truncated
    /// another's file before its rename and readers saw empty or short content.
    #[test]
    fn concurrent_writes_never_show_a_partial_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.json");
        let content = |t: u8| vec![b'a' + t; 64 * 1024];
        write(&path, &[&content(0)]).unwrap();
        let done = std::sync::atomic::AtomicBool::new(false);
        let (failed_writes, bad_reads) = std::thread::scope(|s| {
            let writers: Vec<_> = (0..4u8)
                .map(|t| {
                    let (path, c) = (&path, content(t));
                    s.spawn(move || (0..100).filter(|_| write(path, &[&c]).is_err()).count())
                })
                .collect();
            let reader = s.spawn(|| {
                let mut bad = 0usize;
                while !done.load(Ordering::Relaxed) {
                    let got = std::fs::read(&path).unwrap_or_default();
                    if got.len() != 64 * 1024 || got.iter().any(|&b| b != got[0]) {
                        bad += 1;
                    }
                }
                bad
            });
            let failed: usize = writers.into_iter().map(|w| w.join().unwrap()).sum();
            done.store(true, Ordering::Relaxed);
            (failed, reader.join().unwrap())
        });
        assert_eq!(
            (failed_writes, bad_reads),
            (0, 0),
            "failed writes, partial reads"
        );
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(left.len(), 1, "temporary files left: {left:?}");
    }

    #[test]
    fn an_existing_temporary_name_is_never_reused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.json");
        // Whatever name the next write picks, a file of a dead writer already holds it.
        let n = NEXT.load(Ordering::Relaxed);
        let squatter: Vec<_> = (n..n + 8)
            .map(|i| {
                let p = dir
                    .path()
                    .join(format!(".f.json.tmp-{}-{i}", std::process::id()));
                std::fs::write(&p, b"dead writer").unwrap();
                p
            })
            .collect();
        write(&path, &[b"new"]).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"new");
        for p in &squatter {
            assert_eq!(std::fs::read(p).unwrap(), b"dead writer");
        }
    }

    #[test]
    fn stale_temporaries_are_removed_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.json");
        write(&path, &[b"kept"]).unwrap();
        for name in [".state.json.tmp-12", ".state.json.tmp-99-3"] {
            std::fs::write(dir.path().join(name), b"").unwrap();
        }
        for name in [".other.json.tmp-1", "state.json.tmp-1", ".state.json.tmp-"] {
            std::fs::write(dir.path().join(name), b"").unwrap();
        }
        std::fs::create_dir(dir.path().join(".state.json.tmp-dir")).unwrap();
        let mut removed = remove_stale(&path).unwrap();
        removed.sort();
        assert_eq!(
            removed,
            [
                dir.path().join(".state.json.tmp-12"),
                dir.path().join(".state.json.tmp-99-3")
            ]
        );
        let mut left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        assert_eq!(
            left,
            [
                ".other.json.tmp-1",
                ".state.json.tmp-",
                ".state.json.tmp-dir",
                "state.json",
                "state.json.tmp-1"
            ]
        );
        assert!(remove_stale(&dir.path().join("none/x")).unwrap().is_empty());
    }

    #[test]
    fn a_group_is_given_before_the_rename_and_unknown_groups_are_none() {
        use std::os::unix::fs::MetadataExt as _;
        assert_eq!(group_id("root"), Some(0));
        assert_eq!(group_id("no-such-group-placed-test"), None);
        assert_eq!(group_id("nul\0byte"), None);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.json");
        // SAFETY: getegid has no preconditions.
        let own = unsafe { libc::getegid() };
        write_owned(&path, &[b"x"], 0o640, Some(own)).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().gid(), own);
        // A group this process may not give is left, not an error (as non-root only).
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            write_owned(&path, &[b"y"], 0o640, Some(0)).unwrap();
            assert_eq!(std::fs::read(&path).unwrap(), b"y");
        }
    }
}
