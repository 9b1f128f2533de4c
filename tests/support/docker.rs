//! Real Docker containers for tests, where `docker info` works: no registry is reachable
//! on CI machines, so the image is imported from a root file system holding a static
//! busybox (Debian's busybox-static). Shared by the `e2e` and `enact` test binaries.

// Each binary uses a different subset.
#![allow(dead_code)]

use std::process::Command;
use std::time::{Duration, Instant};

use placed_core::cpuset::CpuSet;

pub const IMAGE: &str = "placed-test/busybox:1";

pub fn docker(args: &[&str]) -> Result<String, String> {
    let out = Command::new("docker")
        .args(args)
        .output()
        .map_err(|e| format!("cannot run docker: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
    } else {
        Err(format!(
            "docker {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// Imports the test image once (a busybox root file system, no registry needed).
fn image() -> Result<(), String> {
    if docker(&["image", "inspect", IMAGE]).is_ok() {
        return Ok(());
    }
    let busybox = ["/bin/busybox", "/usr/bin/busybox"]
        .into_iter()
        .find(|p| {
            Command::new("file")
                .arg(p)
                .output()
                .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("statically linked"))
        })
        .ok_or("no static busybox (apt-get install busybox-static)")?;
    let root = tempfile::tempdir().map_err(|e| e.to_string())?;
    std::fs::create_dir(root.path().join("bin")).map_err(|e| e.to_string())?;
    std::fs::copy(busybox, root.path().join("bin/busybox")).map_err(|e| e.to_string())?;
    for applet in ["sh", "sleep", "cat"] {
        std::os::unix::fs::symlink("busybox", root.path().join("bin").join(applet))
            .map_err(|e| e.to_string())?;
    }
    let tar = root.path().join("rootfs.tar");
    let ok = Command::new("tar")
        .args(["-C"])
        .arg(root.path())
        .args(["-cf"])
        .arg(&tar)
        .arg("bin")
        .status()
        .map_err(|e| e.to_string())?
        .success();
    if !ok {
        return Err("tar failed".into());
    }
    docker(&["import", &tar.to_string_lossy(), IMAGE]).map(|_| ())
}

/// A running container, removed on drop (also when the test fails).
pub struct TestContainer {
    pub name: String,
}

impl TestContainer {
    pub fn run(cpus: &CpuSet) -> Result<Self, String> {
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let name = format!(
            "placed-test-{}-{}",
            std::process::id(),
            N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        );
        let c = Self { name };
        docker(&[
            "run",
            "-d",
            "--network",
            "none",
            "--name",
            &c.name,
            "--cpuset-cpus",
            &cpus.to_string(),
            IMAGE,
            "/bin/sh",
            "-c",
            "/bin/sleep 100000 & /bin/sleep 100000 & wait",
        ])?;
        c.wait_for_processes(3)?;
        Ok(c)
    }

    /// `docker run -d` returns once the entrypoint runs, before its shell has started the
    /// two sleeps; tests count on all three (on a loaded machine one inspection saw only
    /// the shell). Waits for them: a guard, not a timing, that only a container which never
    /// starts them reaches.
    fn wait_for_processes(&self, n: usize) -> Result<(), String> {
        let guard = Instant::now() + Duration::from_secs(120);
        loop {
            // `docker top NAME -o pid`: a header line, then one pid per process.
            let top = docker(&["top", &self.name, "-o", "pid"])?;
            let running = top.lines().skip(1).filter(|l| !l.trim().is_empty()).count();
            if running >= n {
                return Ok(());
            }
            if Instant::now() > guard {
                return Err(format!(
                    "{} has {running} processes after 120 s, expected {n}",
                    self.name
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for TestContainer {
    fn drop(&mut self) {
        let _ = docker(&["rm", "-f", &self.name]);
    }
}

/// Docker answers and the test image is there (imported if needed).
pub fn ready() -> Result<(), String> {
    docker(&["info", "--format", "{{.ServerVersion}}"])?;
    image()
}
