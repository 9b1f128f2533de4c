//! The kernel layer on the fake host and on this host.

use super::*;
use crate::fake::FakeKernel;

/// Everything built from one kernel uses the mount table read when it was built: with
/// every later read of mountinfo failing, the hierarchy, the controllers and a whole host
/// still come up.
#[test]
fn mountinfo_is_read_once_when_the_kernel_is_built() {
    for k in [
        FakeKernel::v1("0-3", "0"),
        FakeKernel::v2("0-3", "0", "cpuset"),
    ] {
        let kernel = k.kernel();
        k.inject_read_after("self/mountinfo", libc::EIO, 0);
        let cgroups = crate::cgroup::Cgroups::of(&kernel).unwrap();
        assert_eq!(cgroups.version(), k.version);
        assert_eq!(cgroups.root(), k.cpuset_root());
        let _ = crate::cgroup::quota::Controllers::of(&kernel);
        let host = crate::enact::Host::new(kernel.clone(), Vec::new()).unwrap();
        assert_eq!(host.cgroups().root(), k.cpuset_root());
        assert_eq!(kernel.mountinfo(), k.proc_root().join("self/mountinfo"));
        // A second kernel reads it again, and meets the faults.
        let err = Kernel::new(k.files()).unwrap_err();
        assert!(matches!(err, KernelError::Read { .. }), "{err}");
    }
}

/// The errors say which file: the read error's path, the parse error's path and line.
#[test]
fn mount_table_errors_name_the_file() {
    let k = FakeKernel::v1("0-3", "0");
    let mountinfo = k.proc_root().join("self/mountinfo");
    k.inject_read_after("self/mountinfo", libc::EACCES, 0);
    let err = Kernel::new(k.files()).unwrap_err();
    let chain = placed_core::text::error_line(&err);
    assert!(
        chain.contains(&mountinfo.display().to_string()) && chain.contains("EACCES"),
        "{chain}"
    );
    std::fs::write(&mountinfo, "31 23 0:28 / /x rw\n").unwrap();
    let err = Kernel::new(k.files()).unwrap_err();
    let chain = placed_core::text::error_line(&err);
    assert!(
        chain.contains(&mountinfo.display().to_string()) && chain.contains("line 1"),
        "{chain}"
    );
    let host_err = crate::enact::Error::from(err);
    assert_eq!(
        host_err.fault(),
        placed_core::fault::Fault::HostConfig,
        "{host_err}"
    );
}

/// A task that is gone reads as `None`; any other failure is an error naming the file.
#[test]
fn task_files_tell_a_gone_task_from_a_failed_read() {
    let k = FakeKernel::v2("0-3", "0", "cpuset");
    k.cgroup("/c", "0-1", "0");
    let pid = k.process("/c", 3);
    let files = k.files();
    assert!(files.task(pid, "status").unwrap().is_some());
    assert_eq!(
        files.threads_of(pid).unwrap(),
        Some(vec![pid, pid + 1, pid + 2])
    );
    k.inject_read_after(&format!("{pid}/status"), libc::EIO, 0);
    let err = files.task(pid, "status").unwrap_err();
    assert!(
        err.to_string()
            .contains(&files.task_path(pid, "status").display().to_string()),
        "{err}"
    );
    k.exit(pid);
    assert_eq!(files.task(pid, "status").unwrap(), None);
    assert_eq!(files.threads_of(pid).unwrap(), None);
    assert_eq!(
        files.sys("devices/system/cpu/online").unwrap().trim(),
        "0-3"
    );
    assert_eq!(files.proc("sys/kernel/numa_balancing").unwrap().trim(), "0");
}

/// This host: `/proc/self/mountinfo` parses, and a process of ours is readable.
#[test]
fn this_hosts_kernel_reads_its_own_files() {
    let kernel = Kernel::host().unwrap();
    assert_eq!(kernel.mountinfo(), Path::new("/proc/self/mountinfo"));
    let me = std::process::id();
    let status = kernel.files().task(me, "status").unwrap().unwrap();
    assert!(status.contains("Cpus_allowed_list"), "{status}");
    assert!(
        kernel
            .files()
            .threads_of(me)
            .unwrap()
            .unwrap()
            .contains(&me)
    );
}
