//! Finding numa-vm (a tool that boots a QEMU guest with several NUMA nodes and cgroup v2 on
//! the host's own root filesystem), shared by the test binaries that boot one.

// Each binary uses a different subset.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// The numa-vm script: `PLACED_NUMA_VM`, else `numa-vm` on `PATH`, else a `numa-vm/numa-vm`
/// checkout in a directory beside the workspace (where development machines keep it).
pub fn numa_vm() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("PLACED_NUMA_VM") {
        return Some(PathBuf::from(path)).filter(|p| p.exists());
    }
    let on_path = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|path| std::env::split_paths(&path).collect::<Vec<_>>())
        .map(|dir| dir.join("numa-vm"));
    let beside = workspace()
        .parent()
        .and_then(|parent| std::fs::read_dir(parent).ok())
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path().join("numa-vm/numa-vm"));
    on_path.chain(beside).find(|p| p.is_file())
}

pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_owned)
        .unwrap_or_default()
}

pub fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|d| d.join(program).exists()))
}

/// Why a guest cannot be booted here, if it cannot.
pub fn unavailable() -> Option<String> {
    if std::env::var_os("PLACED_IN_GUEST").is_some() {
        return Some("already inside the guest".into());
    }
    if numa_vm().is_none() {
        return Some("numa-vm is not installed (set PLACED_NUMA_VM)".into());
    }
    if !on_path("qemu-system-x86_64") {
        return Some("qemu-system-x86_64 is not installed (numa-vm setup installs it)".into());
    }
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return Some("numa-vm runs as root only".into());
    }
    None
}
