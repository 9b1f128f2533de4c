//! Where the cgroup hierarchies are mounted, from `/proc/self/mountinfo` text.
//!
//! Format (proc(5)): `id parent major:minor root mount-point mount-options [optional...] -
//! fstype source super-options`. Mount points escape space, tab, newline and backslash as
//! octal (`\040`).

use std::path::PathBuf;

/// One cgroup mount.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CgroupMount {
    pub mount_point: PathBuf,
    /// The cgroup the mount shows as its root; `/` unless a cgroup namespace or a bind mount
    /// shows only a subtree.
    pub root: String,
    /// `true` for cgroup2 (the unified hierarchy).
    pub unified: bool,
    /// v1 only: controllers bound to the hierarchy (`cpuset`, `freezer`, ...) and named
    /// hierarchies (`name=systemd`), from the super options.
    pub controllers: Vec<String>,
}

/// The cgroup mounts of a host.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Mounts {
    pub cgroups: Vec<CgroupMount>,
}

/// A mountinfo line that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed mountinfo line {line_no}: {line:?}")]
pub struct MountinfoError {
    pub line_no: usize,
    pub line: String,
}

/// Super options of a v1 cgroup mount that are not controllers.
const NOT_CONTROLLERS: &[&str] = &[
    "rw",
    "ro",
    "noprefix",
    "clone_children",
    "xattr",
    "cpuset_v2_mode",
];

impl Mounts {
    /// Parses mountinfo text, keeping the cgroup and cgroup2 mounts.
    pub fn parse(text: &str) -> Result<Self, MountinfoError> {
        let mut cgroups = Vec::new();
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let bad = || MountinfoError {
                line_no: i + 1,
                line: placed_core::text::clip(line, 120),
            };
            let (left, right) = line.split_once(" - ").ok_or_else(bad)?;
            let left: Vec<&str> = left.split(' ').collect();
            let right: Vec<&str> = right.split(' ').collect();
            if left.len() < 6 || right.len() < 3 {
                return Err(bad());
            }
            let fstype = right[0];
            let unified = match fstype {
                "cgroup2" => true,
                "cgroup" => false,
                _ => continue,
            };
            let controllers = if unified {
                Vec::new()
            } else {
                right[2]
                    .split(',')
                    .filter(|o| !NOT_CONTROLLERS.contains(o) && !o.starts_with("release_agent="))
                    .map(str::to_owned)
                    .collect()
            };
            // Every path under the hierarchy is built on the mount point: a relative one
            // would send writes below the daemon's working directory.
            let mount_point = PathBuf::from(unescape(left[4]));
            if !mount_point.is_absolute() {
                return Err(bad());
            }
            cgroups.push(CgroupMount {
                mount_point,
                root: unescape(left[3]),
                unified,
                controllers,
            });
        }
        Ok(Self { cgroups })
    }

    /// The first v1 hierarchy that has `controller` bound.
    pub fn v1(&self, controller: &str) -> Option<&CgroupMount> {
        self.cgroups
            .iter()
            .find(|m| !m.unified && m.controllers.iter().any(|c| c == controller))
    }

    /// The first cgroup2 mount.
    pub fn v2(&self) -> Option<&CgroupMount> {
        self.cgroups.iter().find(|m| m.unified)
    }
}

/// Undoes the kernel's octal escapes (`\040` for a space).
fn unescape(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes
            .get(i + 1..i + 4)
            .filter(|d| bytes[i] == b'\\' && d.iter().all(|b| (b'0'..=b'7').contains(b)))
            .map(|d| d.iter().fold(0u32, |acc, b| acc * 8 + u32::from(b - b'0')))
            .and_then(|v| u8::try_from(v).ok());
        match octal {
            Some(v) => {
                out.push(v);
                i += 4;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This project's CI machines: Debian 12, hybrid (v1 controllers plus an empty cgroup2
    /// at /sys/fs/cgroup/unified), copied from /proc/self/mountinfo.
    const HYBRID: &str = "\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset
37 31 0:34 / /sys/fs/cgroup/freezer rw,relatime - cgroup cgroup rw,freezer
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";

    /// The numa-vm guest and any systemd >= 247 default: pure cgroup v2.
    const PURE_V2: &str = "\
22 1 0:21 / / rw - overlay overlay rw
25 22 0:23 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot
";

    /// Older distributions: cpu and cpuacct co-mounted, cpuset with noprefix options,
    /// mount options in the optional fields.
    const PURE_V1: &str = "\
30 25 0:26 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid shared:12 - cgroup cgroup rw,cpu,cpuacct
31 25 0:27 / /sys/fs/cgroup/cpuset rw,nosuid shared:13 - cgroup cgroup rw,clone_children,cpuset
32 25 0:28 / /sys/fs/cgroup/my\\040freezer rw,nosuid shared:14 - cgroup cgroup rw,freezer
";

    #[test]
    fn hybrid_host() {
        let m = Mounts::parse(HYBRID).unwrap();
        assert_eq!(m.cgroups.len(), 5);
        assert_eq!(
            m.v1("cpuset").unwrap().mount_point,
            PathBuf::from("/sys/fs/cgroup/cpuset")
        );
        assert_eq!(
            m.v1("freezer").unwrap().mount_point,
            PathBuf::from("/sys/fs/cgroup/freezer")
        );
        assert_eq!(
            m.v2().unwrap().mount_point,
            PathBuf::from("/sys/fs/cgroup/unified")
        );
        assert!(m.v1("systemd").is_none());
        assert!(m.v1("name=systemd").is_some());
    }

    #[test]
    fn pure_v2_host() {
        let m = Mounts::parse(PURE_V2).unwrap();
        assert!(m.v1("cpuset").is_none());
        assert_eq!(m.v2().unwrap().mount_point, PathBuf::from("/sys/fs/cgroup"));
    }

    #[test]
    fn pure_v1_host_with_escapes_and_options() {
        let m = Mounts::parse(PURE_V1).unwrap();
        assert!(m.v2().is_none());
        assert_eq!(m.v1("cpuset").unwrap().controllers, vec!["cpuset"]);
        assert_eq!(
            m.v1("cpuacct").unwrap().mount_point,
            PathBuf::from("/sys/fs/cgroup/cpu,cpuacct")
        );
        assert_eq!(
            m.v1("freezer").unwrap().mount_point,
            PathBuf::from("/sys/fs/cgroup/my freezer")
        );
    }

    #[test]
    fn malformed_line_is_named() {
        let err = Mounts::parse("1 2 3\n").unwrap_err();
        assert_eq!(err.line_no, 1);
    }
}
