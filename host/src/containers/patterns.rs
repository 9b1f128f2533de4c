//! Which container, if any, a cgroup path belongs to, from the naming conventions of each
//! runtime and cgroup driver.
//!
//! | runtime | cgroupfs driver | systemd driver |
//! |---|---|---|
//! | Docker | `/docker/<id>` | `/system.slice/docker-<id>.scope` |
//! | containerd (CRI, nerdctl) | `/kubepods/<qos>/pod<uid>/<id>`, `/<namespace>/<id>` | `.../cri-containerd-<id>.scope`, `nerdctl-<id>.scope` |
//! | CRI-O | `/kubepods/<qos>/pod<uid>/<id>` | `.../crio-<id>.scope` |
//! | Kubernetes pod | `/kubepods[/<qos>]/pod<uid>` | `/kubepods.slice/kubepods-<qos>.slice/kubepods-<qos>-pod<uid_>.slice` |
//! | podman | `/libpod_parent/libpod-<id>` | `/machine.slice/libpod-<id>.scope` |
//! | LXC | `/lxc/<name>` (LXC < 4), `/lxc.payload.<name>`, `/lxc.payload/<name>` | same |
//! | systemd unit | | `/system.slice/<name>.service`, `<name>.scope` |
//!
//! `<id>` is 64 hex digits. Monitors (`crio-conmon-*`, `libpod-conmon-*`,
//! `lxc.monitor.*`) are not containers.

use super::Runtime;
use crate::cgroup::CgroupPath;

/// What a cgroup path says about its container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Classified {
    pub runtime: Runtime,
    /// The runtime's id: 64 hex digits, a pod uid, an LXC name or a unit name.
    pub id: String,
    /// The Kubernetes pod uid, for containers of a pod.
    pub pod: Option<String>,
}

fn is_id(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The id inside `<prefix><id>.scope`.
fn scoped<'a>(name: &'a str, prefix: &str) -> Option<&'a str> {
    name.strip_prefix(prefix)?
        .strip_suffix(".scope")
        .filter(|id| is_id(id))
}

/// The pod uid of a pod cgroup name: `pod<uid>` (cgroupfs) or `kubepods[-<qos>]-pod<uid_>.slice`.
fn pod_uid(name: &str) -> Option<String> {
    let raw = if let Some(slice) = name.strip_suffix(".slice") {
        slice.rsplit_once("-pod").map(|(_, uid)| uid)?
    } else {
        name.strip_prefix("pod")?
    };
    let ok = raw.len() >= 8
        && raw
            .chars()
            .all(|c| c.is_ascii_hexdigit() || c == '-' || c == '_');
    ok.then(|| raw.replace('_', "-"))
}

/// The pod an ancestor names, if the path is under kubepods.
fn pod_of(cg: &CgroupPath) -> Option<String> {
    let mut comps = cg.components();
    if !comps.any(|c| c == "kubepods" || c == "kubepods.slice") {
        return None;
    }
    cg.components().filter_map(pod_uid).last()
}

/// Classifies one cgroup; `None` for cgroups that are not a container (slices, the
/// runtimes' own parents, monitors, sub-cgroups inside a container).
pub fn classify(cg: &CgroupPath) -> Option<Classified> {
    let name = cg.name();
    let parent = cg.parent().map(|p| p.name().to_owned()).unwrap_or_default();
    let under_kubepods = cg
        .components()
        .any(|c| c == "kubepods" || c == "kubepods.slice");
    let found = |runtime, id: &str| {
        Some(Classified {
            runtime,
            id: id.to_owned(),
            pod: pod_of(cg),
        })
    };
    if let Some(id) = scoped(name, "docker-") {
        return found(Runtime::Docker, id);
    }
    if let Some(id) = scoped(name, "cri-containerd-").or_else(|| scoped(name, "nerdctl-")) {
        return found(Runtime::Containerd, id);
    }
    if let Some(id) = scoped(name, "crio-") {
        return found(Runtime::CriO, id);
    }
    if let Some(id) = scoped(name, "libpod-") {
        return found(Runtime::Podman, id);
    }
    if let Some(id) = name.strip_prefix("libpod-").filter(|id| is_id(id)) {
        if parent == "libpod_parent" {
            return found(Runtime::Podman, id);
        }
    }
    if is_id(name) {
        if parent == "docker" {
            return found(Runtime::Docker, name);
        }
        if under_kubepods && pod_uid(&parent).is_some() {
            // containerd or CRI-O with the cgroupfs driver; the path does not say which.
            return found(Runtime::Cri, name);
        }
        if ["default", "k8s.io", "moby"].contains(&parent.as_str()) {
            return found(Runtime::Containerd, name);
        }
    }
    if under_kubepods {
        if let Some(uid) = pod_uid(name) {
            return Some(Classified {
                runtime: Runtime::Pod,
                id: uid,
                pod: None,
            });
        }
        return None;
    }
    if let Some(lxc) = name.strip_prefix("lxc.payload.") {
        return Some(Classified {
            runtime: Runtime::Lxc,
            id: lxc.to_owned(),
            pod: None,
        });
    }
    if (parent == "lxc.payload" || (parent == "lxc" && cg.depth() == 2))
        && !name.starts_with("lxc.")
    {
        return Some(Classified {
            runtime: Runtime::Lxc,
            id: name.to_owned(),
            pod: None,
        });
    }
    let monitor = name.contains("-conmon-") || name.starts_with("lxc.monitor");
    if !monitor && (name.ends_with(".service") || name.ends_with(".scope")) {
        return Some(Classified {
            runtime: Runtime::Systemd,
            id: name.to_owned(),
            pod: None,
        });
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "4c01db0b339c9f4fd8a6f4e5a7e3ad2b3c1a5e60b4f8c2e1d7a9b3c5e7f9a1b2";

    struct Case {
        what: &'static str,
        path: String,
        want: Option<(Runtime, &'static str, Option<&'static str>)>,
    }

    #[test]
    fn every_runtime_and_driver() {
        let uid = "2d1b6a0c-54c8-4d3e-9b3c-5f2f1b0e9a7d";
        let uid_ = "2d1b6a0c_54c8_4d3e_9b3c_5f2f1b0e9a7d";
        let id: &'static str = ID;
        let cases = vec![
            Case {
                what: "docker, cgroupfs driver",
                path: format!("/docker/{ID}"),
                want: Some((Runtime::Docker, id, None)),
            },
            Case {
                what: "docker, systemd driver",
                path: format!("/system.slice/docker-{ID}.scope"),
                want: Some((Runtime::Docker, id, None)),
            },
            Case {
                what: "docker, its parent",
                path: "/docker".into(),
                want: None,
            },
            Case {
                what: "inside a docker container",
                path: format!("/docker/{ID}/init"),
                want: None,
            },
            Case {
                what: "kubernetes containerd, systemd driver",
                path: format!(
                    "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{uid_}.slice/cri-containerd-{ID}.scope"
                ),
                want: Some((
                    Runtime::Containerd,
                    id,
                    Some("2d1b6a0c-54c8-4d3e-9b3c-5f2f1b0e9a7d"),
                )),
            },
            Case {
                what: "kubernetes pod, systemd driver",
                path: format!(
                    "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{uid_}.slice"
                ),
                want: Some((Runtime::Pod, "2d1b6a0c-54c8-4d3e-9b3c-5f2f1b0e9a7d", None)),
            },
            Case {
                what: "kubernetes guaranteed pod, systemd driver",
                path: format!("/kubepods.slice/kubepods-pod{uid_}.slice"),
                want: Some((Runtime::Pod, "2d1b6a0c-54c8-4d3e-9b3c-5f2f1b0e9a7d", None)),
            },
            Case {
                what: "kubernetes qos slice",
                path: "/kubepods.slice/kubepods-besteffort.slice".into(),
                want: None,
            },
            Case {
                what: "kubernetes pod, cgroupfs driver",
                path: format!("/kubepods/besteffort/pod{uid}"),
                want: Some((Runtime::Pod, "2d1b6a0c-54c8-4d3e-9b3c-5f2f1b0e9a7d", None)),
            },
            Case {
                what: "kubernetes container, cgroupfs driver",
                path: format!("/kubepods/besteffort/pod{uid}/{ID}"),
                want: Some((
                    Runtime::Cri,
                    id,
                    Some("2d1b6a0c-54c8-4d3e-9b3c-5f2f1b0e9a7d"),
                )),
            },
            Case {
                what: "cri-o, systemd driver",
                path: format!("/kubepods.slice/kubepods-pod{uid_}.slice/crio-{ID}.scope"),
                want: Some((
                    Runtime::CriO,
                    id,
                    Some("2d1b6a0c-54c8-4d3e-9b3c-5f2f1b0e9a7d"),
                )),
            },
            Case {
                what: "cri-o monitor",
                path: format!("/system.slice/crio-conmon-{ID}.scope"),
                want: None,
            },
            Case {
                what: "nerdctl, systemd",
                path: format!("/system.slice/nerdctl-{ID}.scope"),
                want: Some((Runtime::Containerd, id, None)),
            },
            Case {
                what: "nerdctl, cgroupfs",
                path: format!("/default/{ID}"),
                want: Some((Runtime::Containerd, id, None)),
            },
            Case {
                what: "podman, systemd",
                path: format!("/machine.slice/libpod-{ID}.scope"),
                want: Some((Runtime::Podman, id, None)),
            },
            Case {
                what: "podman rootless",
                path: format!(
                    "/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-{ID}.scope"
                ),
                want: Some((Runtime::Podman, id, None)),
            },
            Case {
                what: "podman, cgroupfs",
                path: format!("/libpod_parent/libpod-{ID}"),
                want: Some((Runtime::Podman, id, None)),
            },
            Case {
                what: "podman monitor",
                path: format!("/machine.slice/libpod-conmon-{ID}.scope"),
                want: None,
            },
            Case {
                what: "lxc 4+",
                path: "/lxc.payload.web1".into(),
                want: Some((Runtime::Lxc, "web1", None)),
            },
            Case {
                what: "lxc 4 nested form",
                path: "/lxc.payload/web1".into(),
                want: Some((Runtime::Lxc, "web1", None)),
            },
            Case {
                what: "lxc 3",
                path: "/lxc/web1".into(),
                want: Some((Runtime::Lxc, "web1", None)),
            },
            Case {
                what: "lxc monitor",
                path: "/lxc.monitor.web1".into(),
                want: None,
            },
            Case {
                what: "systemd service",
                path: "/system.slice/nginx.service".into(),
                want: Some((Runtime::Systemd, "nginx.service", None)),
            },
            Case {
                what: "systemd slice",
                path: "/system.slice".into(),
                want: None,
            },
            Case {
                what: "a plain cgroup",
                path: "/batch/job1".into(),
                want: None,
            },
        ];
        for c in cases {
            let got = classify(&CgroupPath::parse(&c.path).unwrap());
            let want = c.want.map(|(runtime, id, pod)| Classified {
                runtime,
                id: id.to_owned(),
                pod: pod.map(str::to_owned),
            });
            assert_eq!(got, want, "{}: {}", c.what, c.path);
        }
    }
}
