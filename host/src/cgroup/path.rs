//! Cgroup paths relative to a hierarchy's mount, validated so that no input leaves the mount.

use std::fmt;
use std::path::{Path, PathBuf};

/// Linux's NAME_MAX: no directory entry name is longer.
const NAME_MAX: usize = 255;
/// Deeper paths than this are refused; the kernel's default `cgroup.max.depth` is unlimited
/// but no runtime nests more than a handful of levels.
const MAX_DEPTH: usize = 64;

/// A cgroup, as a path relative to the root of its hierarchy (`/` is the root cgroup).
///
/// Invariant: every component is a plain name: not empty, not `.` or `..`, no `/`, no NUL,
/// at most 255 bytes. So [`CgroupPath::under`] always names something below the mount
/// point, whatever the input was (symbolic links are the caller's to check; cgroupfs has
/// none).
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct CgroupPath {
    /// Components joined by `/`, no leading or trailing slash; empty for the root.
    rel: String,
}

/// Why a string is not a cgroup path. `input` is cut to 80 characters.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid cgroup path {input:?}: {why}")]
pub struct BadPath {
    pub input: String,
    pub why: &'static str,
}

impl CgroupPath {
    /// The root cgroup of a hierarchy.
    pub fn root() -> Self {
        Self::default()
    }

    /// Parses `/a/b`, `a/b` or `/`. Repeated and trailing slashes are tolerated; `.`, `..`,
    /// NUL and over-long names are not.
    pub fn parse(input: &str) -> Result<Self, BadPath> {
        let bad = |why| BadPath {
            input: placed_core::text::clip(input, 80),
            why,
        };
        let mut parts = Vec::new();
        for part in input.split('/') {
            match part {
                "" => continue,
                "." | ".." => return Err(bad("'.' and '..' are not allowed")),
                p if p.contains('\0') => return Err(bad("NUL byte")),
                p if p.len() > NAME_MAX => return Err(bad("a component is longer than 255 bytes")),
                p => parts.push(p),
            }
        }
        if parts.len() > MAX_DEPTH {
            return Err(bad("nested deeper than 64 levels"));
        }
        Ok(Self {
            rel: parts.join("/"),
        })
    }

    /// The child cgroup `name` (one component).
    pub fn child(&self, name: &str) -> Result<Self, BadPath> {
        if name.contains('/') {
            return Err(BadPath {
                input: name.to_owned(),
                why: "a child name is one component",
            });
        }
        let joined = if self.rel.is_empty() {
            name.to_owned()
        } else {
            format!("{}/{name}", self.rel)
        };
        Self::parse(&joined).and_then(|p| {
            if p.depth() == self.depth() + 1 {
                Ok(p)
            } else {
                Err(BadPath {
                    input: name.to_owned(),
                    why: "empty child name",
                })
            }
        })
    }

    pub fn is_root(&self) -> bool {
        self.rel.is_empty()
    }

    /// Number of components (0 for the root).
    pub fn depth(&self) -> usize {
        self.components().count()
    }

    pub fn components(&self) -> impl Iterator<Item = &str> {
        self.rel.split('/').filter(|c| !c.is_empty())
    }

    /// The last component (empty for the root).
    pub fn name(&self) -> &str {
        self.rel.rsplit('/').next().unwrap_or("")
    }

    pub fn parent(&self) -> Option<Self> {
        if self.is_root() {
            return None;
        }
        Some(match self.rel.rsplit_once('/') {
            Some((head, _)) => Self {
                rel: head.to_owned(),
            },
            None => Self::root(),
        })
    }

    /// Strict ancestors, the root first.
    pub fn ancestors(&self) -> Vec<Self> {
        let mut out = Vec::new();
        let mut cur = self.parent();
        while let Some(p) = cur {
            cur = p.parent();
            out.push(p);
        }
        out.reverse();
        out
    }

    /// Whether `self` is `other` or below it.
    pub fn starts_with(&self, other: &Self) -> bool {
        other.is_root()
            || self.rel == other.rel
            || (self.rel.starts_with(&other.rel) && self.rel[other.rel.len()..].starts_with('/'))
    }

    /// The directory of this cgroup under a mount point.
    pub fn under(&self, mount: &Path) -> PathBuf {
        if self.is_root() {
            mount.to_owned()
        } else {
            mount.join(&self.rel)
        }
    }
}

impl fmt::Display for CgroupPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "/{}", self.rel)
    }
}

impl fmt::Debug for CgroupPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CgroupPath({self})")
    }
}

impl std::str::FromStr for CgroupPath {
    type Err = BadPath;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl serde::Serialize for CgroupPath {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints() {
        let p = CgroupPath::parse("/docker//abc/").unwrap();
        assert_eq!(p.to_string(), "/docker/abc");
        assert_eq!(p.name(), "abc");
        assert_eq!(p.depth(), 2);
        assert_eq!(p.parent().unwrap().to_string(), "/docker");
        assert_eq!(CgroupPath::parse("/").unwrap(), CgroupPath::root());
        assert_eq!(CgroupPath::root().to_string(), "/");
        assert_eq!(
            p.ancestors()
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>(),
            vec!["/", "/docker"]
        );
    }

    #[test]
    fn nothing_escapes_the_mount() {
        for input in [
            "..",
            "/../etc",
            "docker/../../etc",
            "a/./b",
            "a\0b",
            "/docker/..",
        ] {
            let err = CgroupPath::parse(input).unwrap_err();
            assert_eq!(err.input, input);
        }
        let long = "x".repeat(256);
        CgroupPath::parse(&long).unwrap_err();
        let root = CgroupPath::root();
        for bad in ["..", "a/b", ""] {
            root.child(bad).unwrap_err();
        }
        let mount = Path::new("/sys/fs/cgroup/cpuset");
        let p = CgroupPath::parse("/a/b").unwrap();
        assert!(p.under(mount).starts_with(mount));
    }

    #[test]
    fn prefix_is_by_component() {
        let a = CgroupPath::parse("/docker").unwrap();
        let b = CgroupPath::parse("/docker/x").unwrap();
        let c = CgroupPath::parse("/dockerx").unwrap();
        assert!(b.starts_with(&a));
        assert!(!c.starts_with(&a));
        assert!(a.starts_with(&CgroupPath::root()));
    }
}
