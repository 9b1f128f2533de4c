//! A private containerd for tests: Debian trixie's 1.7 with NRI enabled, fetched by
//! scripts/containerd-nri into .tools/containerd (PLACED_CONTAINERD_DIR overrides), run
//! with its own root, state, sockets and config under a temporary directory, cgroupfs
//! (the kubelet's cgroup driver there) and overlayfs. It never touches the host's own
//! containerd (Docker's): other sockets, other directories, other shims.
//!
//! Dropping it removes everything it made: the pods' tasks and shims, containerd itself,
//! the mounts under its directory, the pods' cgroups (and the `kubepods` parents, where
//! they did not exist before), and the shim sockets containerd 1.7 leaves in
//! /run/containerd/s whatever its state directory (only those its own shims listened on).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use hyper_util::rt::TokioIo;
use k8s_cri::v1::runtime_service_client::RuntimeServiceClient;
use tonic::transport::{Channel, Endpoint, Uri};

pub const IMAGE: &str = "docker.io/placed-test/busybox:1";
const NAMESPACE: &str = "k8s.io";
/// The v1 hierarchy, where each controller has its own tree.
const CGROUP_ROOT: &str = "/sys/fs/cgroup";

/// Why the test cannot run here; it then skips and says so.
pub struct Skip(pub String);

pub struct Containerd {
    dir: tempfile::TempDir,
    child: Option<Child>,
    tools: PathBuf,
    pub socket: PathBuf,
    pub nri_socket: PathBuf,
    /// The pods' cgroup parents (relative to each controller's root), removed at the end.
    pod_cgroups: Vec<String>,
    /// Shared directories that did not exist before this instance (`kubepods` and
    /// `kubepods/burstable` in each controller, /run/containerd/s): removed at the end
    /// when empty.
    made_dirs: BTreeSet<PathBuf>,
    /// Its shims' sockets in /run/containerd/s.
    shim_sockets: BTreeSet<PathBuf>,
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The unpacked packages and image, fetched now if need be.
fn tools() -> Result<PathBuf, Skip> {
    let dir = std::env::var_os("PLACED_CONTAINERD_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join(".tools/containerd"));
    if dir.join("READY").exists() {
        return Ok(dir);
    }
    let out = Command::new(workspace().join("scripts/containerd-nri"))
        .env("PLACED_CONTAINERD_DIR", &dir)
        .output()
        .map_err(|e| Skip(format!("cannot run scripts/containerd-nri: {e}")))?;
    if out.status.success() && dir.join("READY").exists() {
        Ok(dir)
    } else {
        Err(Skip(format!(
            "containerd 1.7 is not available ({})",
            String::from_utf8_lossy(&out.stderr).trim()
        )))
    }
}

impl Containerd {
    /// Starts a private containerd and imports the test image; `Err(Skip)` where it
    /// cannot run (not root, the packages cannot be fetched).
    pub fn start() -> Result<Self, Skip> {
        // SAFETY: geteuid has no preconditions and cannot fail.
        if unsafe { libc::geteuid() } != 0 {
            return Err(Skip("not root: containerd and cgroups need it".into()));
        }
        let tools = tools()?;
        let dir = tempfile::Builder::new()
            .prefix(&format!("placed-test-{}-", std::process::id()))
            .tempdir()
            .expect("temporary directory");
        let d = dir.path();
        let socket = d.join("containerd.sock");
        let nri_socket = d.join("nri.sock");
        let config = format!(
            r#"version = 2
root = "{root}"
state = "{state}"
[grpc]
  address = "{socket}"
[ttrpc]
  address = "{socket}.ttrpc"
[debug]
  address = ""
[metrics]
  address = ""
[plugins."io.containerd.internal.v1.opt"]
  path = "{d}/opt"
[plugins."io.containerd.nri.v1.nri"]
  disable = false
  socket_path = "{nri}"
  plugin_path = "{d}/nri-plugins"
  plugin_config_path = "{d}/nri-conf"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{IMAGE}"
  # This machine's root may lack CAP_SYS_RESOURCE: never raise an OOM score.
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = "{runc}"
        # runc's state with the rest, not in /run/containerd/runc.
        Root = "{d}/runc"
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "{d}/cni-bin"
    conf_dir = "{d}/cni-conf"
"#,
            root = d.join("root").display(),
            state = d.join("state").display(),
            socket = socket.display(),
            nri = nri_socket.display(),
            runc = tools.join("bin/runc").display(),
            d = d.display(),
        );
        std::fs::write(d.join("config.toml"), config).expect("config");
        let log = std::fs::File::create(d.join("containerd.log")).expect("log file");
        let path = format!(
            "{}:{}",
            tools.join("bin").display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let child = Command::new(tools.join("bin/containerd"))
            .arg("--config")
            .arg(d.join("config.toml"))
            .env("PATH", path)
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log file"))
            .stderr(log)
            .spawn()
            .expect("containerd starts");
        let mut c = Self {
            dir,
            child: Some(child),
            tools,
            socket,
            nri_socket,
            pod_cgroups: Vec::new(),
            made_dirs: shim_dirs(),
            shim_sockets: BTreeSet::new(),
        };
        c.wait_ready();
        c.ctr(&[
            "images",
            "import",
            &c.tools.join("busybox-image.tar").to_string_lossy(),
        ]);
        Ok(c)
    }

    fn log_tail(&self) -> String {
        let log =
            std::fs::read_to_string(self.dir.path().join("containerd.log")).unwrap_or_default();
        let lines: Vec<_> = log.lines().rev().take(20).collect();
        lines.into_iter().rev().collect::<Vec<_>>().join("\n")
    }

    /// Waits until containerd serves its socket and its NRI socket; it dying first is a
    /// failure, with its log.
    fn wait_ready(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = self
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
            {
                panic!("containerd exited ({status}):\n{}", self.log_tail());
            }
            let up = std::os::unix::net::UnixStream::connect(&self.socket).is_ok()
                && self.nri_socket.exists();
            if up {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "containerd not up in 30 s:\n{}",
                self.log_tail()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// [`Containerd::start`], or `None` after saying why the test is skipped.
    pub fn start_or_say() -> Option<Self> {
        match Self::start() {
            Ok(c) => Some(c),
            Err(skip) => {
                eprintln!("skipped: {}", skip.0);
                None
            }
        }
    }

    /// Runs `ctr` against this instance, in the CRI's namespace; panics with its output
    /// when it fails.
    pub fn ctr(&self, args: &[&str]) -> String {
        let out = Command::new(self.tools.join("bin/ctr"))
            .arg("--address")
            .arg(&self.socket)
            .args(["--namespace", NAMESPACE])
            .args(args)
            .output()
            .expect("ctr runs");
        assert!(
            out.status.success(),
            "ctr {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// A CRI client, as the kubelet talks to containerd.
    pub async fn cri(&self) -> RuntimeServiceClient<Channel> {
        let socket = self.socket.clone();
        let channel = Endpoint::from_static("http://[::]:50051")
            .connect_with_connector(tower::service_fn(move |_: Uri| {
                let socket = socket.clone();
                async move {
                    tokio::net::UnixStream::connect(socket)
                        .await
                        .map(TokioIo::new)
                }
            }))
            .await
            .expect("CRI connection");
        RuntimeServiceClient::new(channel)
    }

    /// The cgroup parent for a new pod of uid `uid` (`/kubepods/burstable/pod<uid>`, as
    /// the kubelet's cgroupfs driver names it), registered for removal.
    pub fn pod_cgroup(&mut self, uid: &str) -> String {
        for ctrl in controllers() {
            for parent in ["kubepods", "kubepods/burstable"] {
                let p = ctrl.join(parent);
                if !p.exists() {
                    self.made_dirs.insert(p);
                }
            }
        }
        let parent = format!("/kubepods/burstable/pod{uid}");
        self.pod_cgroups.push(parent.clone());
        parent
    }

    /// A file of a container's cpuset cgroup.
    pub fn cpuset_file(parent: &str, container: &str, file: &str) -> PathBuf {
        Path::new(CGROUP_ROOT)
            .join("cpuset")
            .join(parent.trim_start_matches('/'))
            .join(container)
            .join(file)
    }

    fn teardown(&mut self) {
        self.note_shims();
        // The pods' tasks first, through containerd: that unmounts their root file systems
        // and lets their shims exit.
        if self.child.is_some() {
            for id in self.ctr_quiet(&["tasks", "ls", "-q"]).lines() {
                self.ctr_quiet(&["tasks", "kill", "-s", "SIGKILL", id]);
                self.ctr_quiet(&["tasks", "delete", "-f", id]);
            }
            for id in self.ctr_quiet(&["containers", "ls", "-q"]).lines() {
                self.ctr_quiet(&["containers", "delete", id]);
            }
        }
        if let Some(mut child) = self.child.take() {
            // SAFETY: kill with a pid this process spawned and has not reaped.
            unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
            let deadline = Instant::now() + Duration::from_secs(10);
            while child.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        // Shims of this instance that outlived it (named by its address on their command
        // line), and whatever still runs in the pods' cgroups.
        let mut pids = self.shims();
        self.shim_sockets.extend(shim_sockets(&pids));
        for parent in &self.pod_cgroups {
            pids.extend(cgroup_pids(
                &Path::new(CGROUP_ROOT)
                    .join("cpuset")
                    .join(parent.trim_start_matches('/')),
            ));
        }
        for pid in &pids {
            // SAFETY: kill takes any pid; these are this instance's shims and the pods'
            // processes, found by its socket and its pods' cgroups.
            unsafe { libc::kill(*pid, libc::SIGKILL) };
        }
        // A shim removes its socket as it exits: wait for them to be gone first.
        let deadline = Instant::now() + Duration::from_secs(5);
        while !self.shims().is_empty() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        for socket in &self.shim_sockets {
            let _ = std::fs::remove_file(socket);
        }
        unmount_below(self.dir.path());
        for parent in &self.pod_cgroups {
            for ctrl in controllers() {
                remove_cgroup_tree(&ctrl.join(parent.trim_start_matches('/')));
            }
        }
        // Deepest first: burstable before kubepods, s before /run/containerd.
        for p in self.made_dirs.iter().rev() {
            let _ = std::fs::remove_dir(p);
        }
    }

    /// This instance's shims: their command line names its address.
    fn shims(&self) -> Vec<i32> {
        processes_with_arg(&self.socket.to_string_lossy())
    }

    /// Records the sockets this instance's shims listen on, for removal at the end (they
    /// outlive a shim that exits). Call it while the pods run.
    pub fn note_shims(&mut self) {
        let sockets = shim_sockets(&self.shims());
        self.shim_sockets.extend(sockets);
    }

    fn ctr_quiet(&self, args: &[&str]) -> String {
        Command::new(self.tools.join("bin/ctr"))
            .arg("--address")
            .arg(&self.socket)
            .args(["--namespace", NAMESPACE])
            .args(args)
            .stderr(Stdio::null())
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default()
    }
}

impl Drop for Containerd {
    fn drop(&mut self) {
        self.teardown();
    }
}

/// Where containerd 1.7 puts shim sockets, whatever its state directory: the ones that do
/// not exist yet, to be removed at the end.
fn shim_dirs() -> BTreeSet<PathBuf> {
    ["/run/containerd", "/run/containerd/s"]
        .into_iter()
        .map(PathBuf::from)
        .filter(|p| !p.exists())
        .collect()
}

/// The v1 controllers' mount points (each once: `cpu` and `cpuacct` may be links to one).
fn controllers() -> Vec<PathBuf> {
    let mut seen = BTreeSet::new();
    std::fs::read_dir(CGROUP_ROOT)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.path().canonicalize().ok())
        .filter(|p| p.is_dir() && p.join("cgroup.procs").exists())
        .filter(|p| seen.insert(p.clone()))
        .collect()
}

fn processes_with_arg(arg: &str) -> Vec<i32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| c.split(|b| *b == 0).any(|a| a == arg.as_bytes()))
        })
        .collect()
}

fn cgroup_pids(dir: &Path) -> Vec<i32> {
    let mut pids: Vec<i32> = std::fs::read_to_string(dir.join("cgroup.procs"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect();
    for sub in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        if sub.path().is_dir() {
            pids.extend(cgroup_pids(&sub.path()));
        }
    }
    pids
}

/// Removes a cgroup and its children, deepest first, waiting a little for killed tasks
/// to leave (rmdir fails while a cgroup has any).
fn remove_cgroup_tree(dir: &Path) {
    if !dir.exists() {
        return;
    }
    for sub in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        if sub.path().is_dir() {
            remove_cgroup_tree(&sub.path());
        }
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    while std::fs::remove_dir(dir).is_err() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The Unix sockets the processes `pids` listen on under /run/containerd/s (where
/// containerd 1.7 puts its shims' sockets, whatever its state directory): found through
/// their file descriptors' inodes in /proc/net/unix, so only this instance's are named.
fn shim_sockets(pids: &[i32]) -> BTreeSet<PathBuf> {
    let mut inodes = BTreeSet::new();
    for pid in pids {
        for fd in std::fs::read_dir(format!("/proc/{pid}/fd"))
            .into_iter()
            .flatten()
            .flatten()
        {
            let target = std::fs::read_link(fd.path()).unwrap_or_default();
            if let Some(inode) = target
                .to_string_lossy()
                .strip_prefix("socket:[")
                .and_then(|s| s.strip_suffix(']'))
            {
                inodes.insert(inode.to_owned());
            }
        }
    }
    std::fs::read_to_string("/proc/net/unix")
        .unwrap_or_default()
        .lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<_> = l.split_whitespace().collect();
            let (inode, path) = (f.get(6)?, f.get(7)?);
            (inodes.contains(*inode) && path.starts_with("/run/containerd/s/"))
                .then(|| PathBuf::from(path))
        })
        .collect()
}

/// Unmounts everything mounted below `dir`, deepest first (lazily: a busy mount is
/// detached now and freed when its last user goes).
fn unmount_below(dir: &Path) {
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let mut points: Vec<PathBuf> = info
        .lines()
        .filter_map(|l| l.split(' ').nth(4))
        .map(|p| PathBuf::from(p.replace("\\040", " ")))
        .filter(|p| p.starts_with(dir))
        .collect();
    points.sort_by_key(|p| std::cmp::Reverse(p.components().count()));
    for p in points {
        let c = std::ffi::CString::new(p.to_string_lossy().as_bytes())
            .expect("no NUL in a mount point");
        // SAFETY: umount2 with a valid NUL-terminated path; MNT_DETACH never blocks.
        unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) };
    }
}
