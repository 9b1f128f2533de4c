//! What a user may type to name a container, validated before it comes near a path.
//!
//! `[runtime:]name-or-id`, where runtime is one of `docker`, `podman`, `containerd`,
//! `crio`, `pod` (a Kubernetes pod uid), `lxc`, `systemd` or `cgroup`. Without a prefix,
//! `/a/b` is a cgroup path, `x.service` (`.scope`, `.slice`) a systemd unit, and anything
//! else a name or id looked up everywhere.

use super::Runtime;
use crate::cgroup::CgroupPath;

/// A validated container reference. Every string in it consists only of characters that
/// its runtime allows in names and ids, none of which is `/`, so none can leave the
/// cgroup mount when it becomes part of a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reference {
    /// A name or an id (prefix) of an engine-managed container (Docker, podman).
    Engine {
        runtime: Runtime,
        name_or_id: String,
    },
    /// A hex container id (prefix), of one runtime or (`runtime` None) of any.
    Id {
        runtime: Option<Runtime>,
        prefix: String,
    },
    /// A Kubernetes pod by uid.
    Pod { uid: String },
    /// An LXC container by name.
    Lxc { name: String },
    /// A systemd unit (service, scope or slice).
    Unit { name: String },
    /// A cgroup path relative to the cpuset mount.
    Cgroup { path: CgroupPath },
    /// No prefix and not obviously anything: a name or id to look for everywhere.
    Any { text: String },
}

/// Why a reference was refused. `input` is cut to 80 characters: it comes from a request.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid container reference {input:?}: {why}")]
pub struct BadReference {
    pub input: String,
    pub why: String,
}

/// Shortest id prefix accepted, so that a typo does not match half the host.
pub const MIN_ID_PREFIX: usize = 4;

impl Reference {
    pub fn parse(input: &str) -> Result<Self, BadReference> {
        let bad = |why: &str| BadReference {
            input: placed_core::text::clip(input, 80),
            why: why.to_owned(),
        };
        let s = input.trim();
        if s.is_empty() {
            return Err(bad("empty"));
        }
        let (prefix, rest) = match s.split_once(':') {
            // A colon inside a systemd unit name is legal (`a:b.service`), so only known
            // prefixes split.
            Some((p, r)) if KNOWN.contains(&p) => (Some(p), r),
            _ => (None, s),
        };
        if rest.is_empty() {
            return Err(bad("nothing after the prefix"));
        }
        let check = |ok: Result<(), &str>| ok.map_err(bad);
        Ok(match prefix {
            Some("cgroup") => Reference::Cgroup {
                path: CgroupPath::parse(rest).map_err(|e| bad(e.why))?,
            },
            Some(p @ ("docker" | "podman")) => {
                check(engine_name(rest))?;
                Reference::Engine {
                    runtime: if p == "docker" {
                        Runtime::Docker
                    } else {
                        Runtime::Podman
                    },
                    name_or_id: rest.trim_start_matches('/').to_owned(),
                }
            }
            Some(p @ ("containerd" | "crio")) => {
                check(hex_prefix(rest))?;
                Reference::Id {
                    runtime: Some(if p == "crio" {
                        Runtime::CriO
                    } else {
                        Runtime::Containerd
                    }),
                    prefix: rest.to_ascii_lowercase(),
                }
            }
            Some("pod") => {
                check(pod_uid(rest))?;
                Reference::Pod {
                    uid: rest.to_ascii_lowercase().replace('_', "-"),
                }
            }
            Some("lxc") => {
                check(lxc_name(rest))?;
                Reference::Lxc {
                    name: rest.to_owned(),
                }
            }
            Some("systemd") => {
                check(unit_name(rest))?;
                Reference::Unit {
                    name: rest.to_owned(),
                }
            }
            Some(other) => return Err(bad(&format!("unknown runtime {other:?}"))),
            None if rest.starts_with('/') => Reference::Cgroup {
                path: CgroupPath::parse(rest).map_err(|e| bad(e.why))?,
            },
            None if UNIT_SUFFIXES.iter().any(|x| rest.ends_with(x)) => {
                check(unit_name(rest))?;
                Reference::Unit {
                    name: rest.to_owned(),
                }
            }
            None => {
                check(engine_name(rest))?;
                Reference::Any {
                    text: rest.to_owned(),
                }
            }
        })
    }
}

const KNOWN: &[&str] = &[
    "docker",
    "podman",
    "containerd",
    "crio",
    "pod",
    "lxc",
    "systemd",
    "cgroup",
];
const UNIT_SUFFIXES: &[&str] = &[".service", ".scope", ".slice"];

/// Docker's rule for names, `[a-zA-Z0-9][a-zA-Z0-9_.-]*`, which also covers ids; a leading
/// `/` (as the engine prints names) is allowed.
fn engine_name(s: &str) -> Result<(), &'static str> {
    let s = s.strip_prefix('/').unwrap_or(s);
    let mut chars = s.chars();
    match chars.next() {
        Some(c) if c.is_ascii_alphanumeric() => {}
        _ => return Err("a name starts with a letter or digit"),
    }
    if s.len() > 253 {
        return Err("longer than 253 characters");
    }
    if chars.all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c)) {
        Ok(())
    } else {
        Err("a name has only letters, digits, '_', '.' and '-'")
    }
}

fn hex_prefix(s: &str) -> Result<(), &'static str> {
    if s.len() < MIN_ID_PREFIX || s.len() > 64 {
        return Err("an id (prefix) has 4 to 64 hex digits");
    }
    if s.chars().all(|c| c.is_ascii_hexdigit()) {
        Ok(())
    } else {
        Err("an id has only hex digits")
    }
}

fn pod_uid(s: &str) -> Result<(), &'static str> {
    if (8..=64).contains(&s.len())
        && s.chars()
            .all(|c| c.is_ascii_hexdigit() || c == '-' || c == '_')
    {
        Ok(())
    } else {
        Err("a pod uid looks like 2d1b6a0c-54c8-4d3e-9b3c-5f2f1b0e9a7d")
    }
}

/// LXC: letters, digits, `_`, `.`, `-`, not starting with `.`.
fn lxc_name(s: &str) -> Result<(), &'static str> {
    if s.starts_with('.') || s.len() > 255 {
        return Err("an LXC name does not start with '.' and has at most 255 characters");
    }
    if s.chars()
        .all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c))
    {
        Ok(())
    } else {
        Err("an LXC name has only letters, digits, '_', '.' and '-'")
    }
}

/// systemd.unit(5): `[A-Za-z0-9:_.\-@]` plus `\` escapes, at most 255, with a suffix.
fn unit_name(s: &str) -> Result<(), &'static str> {
    if !UNIT_SUFFIXES.iter().any(|x| s.ends_with(x)) {
        return Err("a unit name ends with .service, .scope or .slice");
    }
    if s.len() > 255 || s.starts_with('.') {
        return Err("a unit name has at most 255 characters and does not start with '.'");
    }
    if s.chars()
        .all(|c| c.is_ascii_alphanumeric() || ":_.-@\\".contains(c))
    {
        Ok(())
    } else {
        Err("a unit name has only letters, digits and ':_.-@\\'")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_form() {
        let cases: &[(&str, Reference)] = &[
            ("web", Reference::Any { text: "web".into() }),
            (
                "docker:web",
                Reference::Engine {
                    runtime: Runtime::Docker,
                    name_or_id: "web".into(),
                },
            ),
            (
                "docker:/web",
                Reference::Engine {
                    runtime: Runtime::Docker,
                    name_or_id: "web".into(),
                },
            ),
            (
                "podman:db-1",
                Reference::Engine {
                    runtime: Runtime::Podman,
                    name_or_id: "db-1".into(),
                },
            ),
            (
                "containerd:ABCD12",
                Reference::Id {
                    runtime: Some(Runtime::Containerd),
                    prefix: "abcd12".into(),
                },
            ),
            (
                "crio:abcd",
                Reference::Id {
                    runtime: Some(Runtime::CriO),
                    prefix: "abcd".into(),
                },
            ),
            (
                "pod:2d1b6a0c_54c8_4d3e_9b3c_5f2f1b0e9a7d",
                Reference::Pod {
                    uid: "2d1b6a0c-54c8-4d3e-9b3c-5f2f1b0e9a7d".into(),
                },
            ),
            ("lxc:u1", Reference::Lxc { name: "u1".into() }),
            (
                "nginx.service",
                Reference::Unit {
                    name: "nginx.service".into(),
                },
            ),
            (
                "systemd:a:b.scope",
                Reference::Unit {
                    name: "a:b.scope".into(),
                },
            ),
            (
                "/docker/abc",
                Reference::Cgroup {
                    path: CgroupPath::parse("/docker/abc").unwrap(),
                },
            ),
            (
                "cgroup:machine.slice",
                Reference::Cgroup {
                    path: CgroupPath::parse("/machine.slice").unwrap(),
                },
            ),
        ];
        for (input, want) in cases {
            assert_eq!(&Reference::parse(input).unwrap(), want, "{input}");
        }
    }

    #[test]
    fn refuses_anything_that_could_become_a_path_elsewhere() {
        for input in [
            "",
            "docker:",
            "../etc",
            "docker:../../etc",
            "docker:a/b",
            "lxc:..",
            "lxc:.hidden",
            "lxc:a/../../b",
            "systemd:../x.service",
            "systemd:a/b.service",
            "cgroup:/docker/../..",
            "/../../etc",
            "containerd:xyz1",
            "containerd:ab",
            "pod:../../x",
            "web\0",
            "we b",
            "foo:bar",
            "x.service/..",
        ] {
            let err = Reference::parse(input);
            assert!(err.is_err(), "{input:?} was accepted as {err:?}");
        }
    }
}
