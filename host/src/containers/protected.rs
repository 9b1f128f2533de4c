//! Cgroups that are never containers, whatever the configuration says: the root, PID 1's
//! scope, the daemon's own cgroup and what holds it, and the host's system services. Moving
//! any of them would move the host itself (docs/daemon.md, "Never managed").

use crate::cgroup::CgroupPath;

/// Unit names (systemd.unit(5)) that are the host's plumbing, not workloads; `*` matches any
/// run of characters. The daemon's own unit is protected through its cgroup as well, under
/// whatever name it is installed.
pub const DENIED_UNITS: &[&str] = &[
    "init.scope",
    "-.slice",
    "system.slice",
    "user.slice",
    "systemd-*",
    "placed.service",
    "dbus.service",
    "dbus-broker.service",
    "containerd.service",
    "docker.service",
    "podman.service",
    "crio.service",
    "cri-docker.service",
    "kubelet.service",
    "polkit.service",
    "ssh.service",
    "sshd.service",
    "getty@*",
    "serial-getty@*",
    "user@*",
    "user-runtime-dir@*",
    "session-*.scope",
    "cron.service",
    "crond.service",
    "rsyslog.service",
    "chrony.service",
    "chronyd.service",
    "NetworkManager.service",
    "snapd.service",
    "multipathd.service",
];

/// Whether `name` matches `pattern`, where `*` stands for any run of characters.
fn matches(pattern: &str, name: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or_default();
    let Some(mut rest) = name.strip_prefix(first) else {
        return false;
    };
    let tail: Vec<&str> = parts.collect();
    let Some((last, middle)) = tail.split_last() else {
        return rest.is_empty();
    };
    for part in middle {
        match rest.find(part) {
            Some(i) => rest = &rest[i + part.len()..],
            None => return false,
        }
    }
    rest.ends_with(last)
}

/// Why `cg` must never be managed, or `None`. `own` is the daemon's own cgroup in the same
/// hierarchy, when known.
pub fn protected(cg: &CgroupPath, own: Option<&CgroupPath>) -> Option<String> {
    if cg.is_root() {
        return Some("it is the root cgroup: every process of the host".into());
    }
    if let Some(own) = own {
        if cg == own || (!own.is_root() && cg.starts_with(own)) {
            return Some(format!("it is the daemon's own cgroup ({own})"));
        }
        if own.starts_with(cg) {
            return Some(format!(
                "it holds the daemon's own cgroup ({own}): placing it would place the daemon"
            ));
        }
    }
    let name = cg.name();
    DENIED_UNITS
        .iter()
        .find(|p| matches(p, name))
        .map(|p| format!("{name} is a system unit (deny list entry {p:?}), not a workload"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cg(s: &str) -> CgroupPath {
        CgroupPath::parse(s).expect("valid path")
    }

    #[test]
    fn patterns_match_whole_names() {
        assert!(matches("systemd-*", "systemd-journald.service"));
        assert!(matches("session-*.scope", "session-3.scope"));
        assert!(!matches("session-*.scope", "session-3.service"));
        assert!(matches("init.scope", "init.scope"));
        assert!(!matches("init.scope", "init.scope2"));
        assert!(!matches("docker.service", "docker-0123.scope"));
        assert!(matches("a*b*c", "axxbyyc") && !matches("a*b*c", "axxc"));
    }

    #[test]
    fn the_issue_s_units_are_refused_and_workloads_are_not() {
        let own = cg("/system.slice/placed.service");
        for path in [
            "/init.scope",
            "/system.slice/systemd-journald.service",
            "/system.slice/containerd.service",
            "/system.slice/placed.service",
            "/system.slice",
            "/",
        ] {
            assert!(protected(&cg(path), Some(&own)).is_some(), "{path}");
        }
        let id = "4c01db0b339c9f4fd8a6f4e5a7e3ad2b3c1a5e60b4f8c2e1d7a9b3c5e7f9a1b2";
        for path in [
            format!("/system.slice/docker-{id}.scope"),
            format!("/docker/{id}"),
            "/system.slice/stream.service".into(),
            "/machine.slice/libpod-x.scope".into(),
        ] {
            assert_eq!(protected(&cg(&path), Some(&own)), None, "{path}");
        }
    }

    #[test]
    fn the_daemon_s_own_cgroup_whatever_its_name() {
        let own = cg("/workloads.slice/my-placed.service");
        let why = protected(&cg("/workloads.slice/my-placed.service"), Some(&own)).unwrap();
        assert!(why.contains("daemon's own cgroup"), "{why}");
        assert!(protected(&cg("/workloads.slice/my-placed.service/sub"), Some(&own)).is_some());
        let why = protected(&cg("/workloads.slice"), Some(&own)).unwrap();
        assert!(why.contains("holds the daemon's own cgroup"), "{why}");
        assert_eq!(
            protected(&cg("/workloads.slice/app.service"), Some(&own)),
            None
        );
        // On cgroup v1 the daemon usually sits in the cpuset root: that protects the root
        // only, not every cgroup below it.
        let root = CgroupPath::root();
        assert_eq!(protected(&cg("/docker/abc"), Some(&root)), None);
    }
}
