//! Discovery on a fake cgroup tree, a fake `/proc` and a fake engine socket.

use std::sync::Arc;

use super::engine::tests::fake_engine;
use super::*;
use crate::fake::FakeKernel;

const A: &str = "aaaa1111bbbb2222cccc3333dddd4444eeee5555ffff6666aaaa7777bbbb8888";
const B: &str = "aaaa2222bbbb2222cccc3333dddd4444eeee5555ffff6666aaaa7777bbbb9999";
const C: &str = "cccc1111bbbb2222cccc3333dddd4444eeee5555ffff6666aaaa7777bbbb8888";

struct Host {
    kernel: Arc<FakeKernel>,
    _engine_dir: tempfile::TempDir,
    discovery: Discovery,
}

/// A v1 host with two Docker containers (cgroupfs), a podman one, an LXC one, a pod with a
/// container, and a plain cgroup. Docker knows `web` (A, pid 100) and `stopped`.
fn host() -> Host {
    let k = FakeKernel::v1("0-3", "0");
    for p in [
        format!("/docker/{A}"),
        format!("/docker/{A}/sub"),
        format!("/docker/{B}"),
        format!("/machine.slice/libpod-{C}.scope"),
        "/lxc.payload.u1".to_owned(),
        "/lxc.monitor.u1".to_owned(),
        format!("/kubepods/besteffort/pod2d1b6a0c-54c8-4d3e-9b3c-5f2f1b0e9a7d/{C}"),
        "/batch/job".to_owned(),
    ] {
        k.cgroup(&p, "0-3", "0");
    }
    // The main process sits in a sub-cgroup of the container (systemd inside it).
    k.proc_file(
        100,
        "cgroup",
        &format!("12:freezer:/docker/{A}/sub\n4:cpuset:/docker/{A}/sub\n1:name=systemd:/x\n0::/\n"),
    );
    let (engine_dir, sock) = fake_engine(vec![
        (
            "/containers/web/json",
            Box::leak(
                format!(r#"{{"Id":"{A}","Name":"/web","State":{{"Running":true,"Pid":100}}}}"#)
                    .into_boxed_str(),
            ),
        ),
        (
            "/containers/stopped/json",
            Box::leak(
                format!(r#"{{"Id":"{B}","Name":"/stopped","State":{{"Running":false,"Pid":0}}}}"#)
                    .into_boxed_str(),
            ),
        ),
        // By id too: the engine lists running containers only, and one just created
        // (cgroup made, not yet started) must still be listed under its name.
        (
            Box::leak(format!("/containers/{B}/json").into_boxed_str()),
            Box::leak(
                format!(r#"{{"Id":"{B}","Name":"/stopped","State":{{"Running":false,"Pid":0}}}}"#)
                    .into_boxed_str(),
            ),
        ),
        (
            "/containers/json",
            Box::leak(format!(r#"[{{"Id":"{A}","Names":["/web"]}}]"#).into_boxed_str()),
        ),
    ]);
    let discovery = Discovery::new(
        k.cgroups(),
        k.files(),
        vec![
            Engine::new(Runtime::Docker, sock),
            Engine::new(Runtime::Podman, "/nonexistent.sock"),
        ],
    );
    Host {
        kernel: k,
        _engine_dir: engine_dir,
        discovery,
    }
}

#[test]
fn resolves_by_name_through_the_engine_and_proc() {
    let h = host();
    let c = h.discovery.resolve("web").unwrap();
    assert_eq!(c.runtime, Runtime::Docker);
    assert_eq!(c.id, A);
    assert_eq!(c.name.as_deref(), Some("web"));
    // Raised from the main process's sub-cgroup to the container's own.
    assert_eq!(c.cgroup.to_string(), format!("/docker/{A}"));
    assert_eq!(h.discovery.resolve("docker:web").unwrap().cgroup, c.cgroup);
}

#[test]
fn resolves_ids_units_pods_lxc_and_paths() {
    let h = host();
    let d = &h.discovery;
    assert_eq!(
        d.resolve(&B[..12]).unwrap().cgroup.to_string(),
        format!("/docker/{B}")
    );
    assert_eq!(
        d.resolve(&format!("podman:{}", &C[..8])).unwrap().runtime,
        Runtime::Podman
    );
    assert_eq!(
        d.resolve("lxc:u1").unwrap().cgroup.to_string(),
        "/lxc.payload.u1"
    );
    assert_eq!(d.resolve("u1").unwrap().runtime, Runtime::Lxc);
    let pod = d
        .resolve("pod:2d1b6a0c-54c8-4d3e-9b3c-5f2f1b0e9a7d")
        .unwrap();
    assert_eq!(pod.runtime, Runtime::Pod);
    let plain = d.resolve("/batch/job").unwrap();
    assert_eq!(
        (plain.runtime, plain.id.as_str()),
        (Runtime::Cgroup, "/batch/job")
    );
}

#[test]
fn errors_say_what_is_wrong() {
    let h = host();
    let d = &h.discovery;
    let err = d.resolve("aaaa").unwrap_err();
    assert!(
        matches!(&err, Error::Ambiguous { candidates, .. } if candidates.len() == 2),
        "{err}"
    );
    assert_eq!(err.fault(), Fault::InvalidInput);

    let err = d.resolve("stopped").unwrap_err();
    assert!(matches!(err, Error::NotRunning { .. }), "{err}");
    assert_eq!(err.fault(), Fault::NotFound);

    let err = d.resolve("nosuch").unwrap_err();
    assert_eq!(err.fault(), Fault::NotFound, "{err}");

    let err = d.resolve("/batch/nosuch").unwrap_err();
    assert!(err.to_string().contains("no cgroup /batch/nosuch"), "{err}");

    let err = d.resolve("../../etc").unwrap_err();
    assert_eq!(err.fault(), Fault::InvalidInput);

    // A podman name without podman's socket: the operator's problem, said so.
    let err = d.resolve("podman:db").unwrap_err();
    assert_eq!(err.fault(), Fault::HostConfig, "{err}");
    assert!(err.to_string().contains("is it running"), "{err}");

    // systemd units are not in the v1 cpuset tree: the hint says why.
    let err = d.resolve("nginx.service").unwrap_err();
    assert!(err.to_string().contains("cgroup v1"), "{err}");
}

#[test]
fn a_symlink_out_of_the_mount_is_refused() {
    let h = host();
    let outside = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path(), h.kernel.cpuset_root().join("escape")).unwrap();
    let err = h.discovery.resolve("cgroup:/escape").unwrap_err();
    assert_eq!(err.fault(), Fault::InvalidInput, "{err}");
}

#[test]
fn lists_every_container_with_engine_names() {
    let h = host();
    let list = h.discovery.list().unwrap();
    let shown: Vec<String> = list
        .iter()
        .map(|c| format!("{} {} {}", c.runtime, c.label(), c.cgroup))
        .collect();
    assert_eq!(
        shown,
        [
            format!("docker web /docker/{A}"),
            format!("docker stopped /docker/{B}"),
            "pod 2d1b6a0c-54c8-4d3e-9b3c-5f2f1b0e9a7d /kubepods/besteffort/pod2d1b6a0c-54c8-4d3e-9b3c-5f2f1b0e9a7d".to_owned(),
            format!("cri {} /kubepods/besteffort/pod2d1b6a0c-54c8-4d3e-9b3c-5f2f1b0e9a7d/{C}", &C[..12]),
            "lxc u1 /lxc.payload.u1".to_owned(),
            format!("podman {} /machine.slice/libpod-{C}.scope", &C[..12]),
        ]
    );
}

#[test]
fn proc_cgroup_lines() {
    let v1 = "12:freezer:/docker/x\n4:cpuset,cpu:/docker/x\n0::/\n";
    assert_eq!(proc_cgroup_line(v1, Version::V1), Some("/docker/x"));
    assert_eq!(
        proc_cgroup_line("0::/system.slice/a.service\n", Version::V2),
        Some("/system.slice/a.service")
    );
    assert_eq!(proc_cgroup_line("1:name=systemd:/\n", Version::V1), None);
}

#[test]
fn labels_cut_ids_at_character_boundaries() {
    let with_id = |id: &str| Container {
        runtime: Runtime::Cgroup,
        id: id.to_owned(),
        name: None,
        pod: None,
        cgroup: CgroupPath::root(),
    };
    // 64 bytes whose 12th byte falls inside a 'é' (2 bytes): byte slicing panicked here.
    let bytes64 = format!("/abcdefghij{}x", "é".repeat(26));
    assert_eq!(bytes64.len(), 64);
    assert_eq!(
        with_id(&bytes64).label(),
        bytes64,
        "not a 64-digit id: whole"
    );
    // 64 characters, multi-byte: the first 12 characters.
    let chars64 = "ü".repeat(64);
    assert_eq!(with_id(&chars64).label(), "ü".repeat(12));
    assert_eq!(with_id(A).label(), &A[..12]);
    assert_eq!(short_id("x"), "x");
}

#[test]
fn the_host_s_own_units_and_the_daemon_are_never_containers() {
    let k = FakeKernel::v1("0-3", "0");
    for p in [
        "/init.scope",
        "/system.slice/systemd-journald.service",
        "/system.slice/containerd.service",
        "/system.slice/my-placed.service",
        "/system.slice/stream.service",
    ] {
        k.cgroup(p, "0-3", "0");
    }
    // This process, as the daemon, under a unit name the deny list does not know.
    k.proc_file(
        std::process::id(),
        "cgroup",
        "4:cpuset:/system.slice/my-placed.service\n",
    );
    let d = Discovery::new(k.cgroups(), k.files(), Vec::new());
    let listed: Vec<String> = d.list().unwrap().iter().map(|c| c.id.clone()).collect();
    assert_eq!(listed, ["stream.service"]);
    for (reference, why) in [
        ("cgroup:/init.scope", "init.scope"),
        ("systemd-journald.service", "system unit"),
        (
            "cgroup:/system.slice/my-placed.service",
            "daemon's own cgroup",
        ),
        ("cgroup:/system.slice", "holds the daemon's own cgroup"),
        ("cgroup:/", "root cgroup"),
    ] {
        let err = d.resolve(reference).unwrap_err();
        assert!(matches!(err, Error::Protected { .. }), "{reference}: {err}");
        assert_eq!(err.fault(), Fault::InvalidInput);
        assert!(err.to_string().contains(why), "{reference}: {err}");
    }
    assert_eq!(d.resolve("stream.service").unwrap().id, "stream.service");
}
