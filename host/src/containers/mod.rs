//! Finding containers: a name or id becomes the cgroup that holds the container
//! (docs/design.md, "Enactment").
//!
//! [`Discovery::resolve`] takes what a user typed (see [`Reference`] for the syntax) and
//! [`Discovery::list`] walks the cpuset hierarchy. Cgroup paths are recognised by the
//! conventions of each runtime and driver (`patterns`); names that are not in the path
//! (Docker and podman names) come from the engine's API (`engine`), and the engine's
//! main pid's `/proc/<pid>/cgroup` gives the exact cgroup whatever the driver.
//!
//! Nothing typed becomes a path directly: a [`Reference`] holds only validated names, the
//! cgroups considered are those found by walking the mount, and the cgroup backend refuses
//! any that resolves outside it.

mod engine;
mod patterns;
mod protected;
mod reference;

use std::collections::BTreeMap;
use std::fmt;

pub use engine::{Engine, EngineContainer, EngineError};
pub use patterns::{Classified, classify};
pub use protected::{DENIED_UNITS, protected};
pub use reference::{BadReference, MIN_ID_PREFIX, Reference};

use crate::cgroup::{self, CgroupPath, Cgroups, Version};
use crate::kernel::Files;
use crate::kernel::fs::IoError;
use placed_core::fault::Fault;

/// The kind of container, by who made its cgroup.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Runtime {
    Docker,
    Podman,
    /// containerd: Kubernetes CRI (`cri-containerd-*`), nerdctl, plain namespaces.
    Containerd,
    #[serde(rename = "crio")]
    CriO,
    /// A Kubernetes container under the cgroupfs driver: containerd or CRI-O, the path does
    /// not say which.
    Cri,
    /// A Kubernetes pod (all its containers).
    Pod,
    Lxc,
    /// A systemd service, scope or slice.
    Systemd,
    /// A plain cgroup that no runtime claims.
    Cgroup,
}

impl fmt::Display for Runtime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Runtime::Docker => "docker",
            Runtime::Podman => "podman",
            Runtime::Containerd => "containerd",
            Runtime::CriO => "crio",
            Runtime::Cri => "cri",
            Runtime::Pod => "pod",
            Runtime::Lxc => "lxc",
            Runtime::Systemd => "systemd",
            Runtime::Cgroup => "cgroup",
        })
    }
}

/// A container and the cgroup (in the cpuset hierarchy) that holds all its tasks.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Container {
    pub runtime: Runtime,
    /// The runtime's id: 64 hex digits, a pod uid, an LXC or unit name, or the cgroup path.
    pub id: String,
    /// The name the user knows it by, when the runtime has one apart from the id.
    pub name: Option<String>,
    /// The Kubernetes pod uid, for a container of a pod.
    pub pod: Option<String>,
    pub cgroup: CgroupPath,
}

impl Container {
    /// A short label for tables and logs: the name, or the id shortened to 12 digits.
    pub fn label(&self) -> String {
        match &self.name {
            Some(n) => n.clone(),
            None => short_id(&self.id).to_owned(),
        }
    }
}

/// A 64-digit id shortened to its first 12 characters, as `docker ps` shows it; any other
/// id whole. Cut at a character boundary: ids come from cgroup directory names and engine
/// answers, which need not be ASCII.
pub fn short_id(id: &str) -> &str {
    if id.chars().count() != 64 {
        return id;
    }
    match id.char_indices().nth(12) {
        Some((end, _)) => &id[..end],
        None => id,
    }
}

/// A container that cannot be found, or a reference that is wrong.
///
/// Bad references and ambiguous ones are [`Fault::InvalidInput`]; missing or stopped
/// containers [`Fault::NotFound`]; an engine that is not there [`Fault::HostConfig`].
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    BadReference(#[from] BadReference),

    #[error("no container {reference:?} on this host{hint}")]
    NotFound { reference: String, hint: String },

    #[error("{reference:?} matches several containers: {}; give more of the id or a runtime prefix", candidates.join(", "))]
    Ambiguous {
        reference: String,
        candidates: Vec<String>,
    },

    #[error("container {reference:?} ({id}) exists but is not running")]
    NotRunning { reference: String, id: String },

    #[error("cannot ask {runtime} about {reference:?}; hint: {hint}")]
    Engine {
        runtime: Runtime,
        reference: String,
        hint: &'static str,
        #[source]
        source: Box<EngineError>,
    },

    #[error("cannot find the cgroup of process {pid}")]
    Proc {
        pid: u32,
        #[source]
        source: IoError,
    },

    #[error("process {pid} is in no cgroup of the {version} cpuset hierarchy")]
    NoCpusetLine { pid: u32, version: Version },

    #[error("{reference:?} ({cgroup}) is never managed: {reason}")]
    Protected {
        reference: String,
        cgroup: CgroupPath,
        reason: String,
    },

    #[error(transparent)]
    Cgroup(#[from] cgroup::Error),
}

impl Error {
    pub fn fault(&self) -> Fault {
        match self {
            Error::BadReference(_) | Error::Ambiguous { .. } | Error::Protected { .. } => {
                Fault::InvalidInput
            }
            Error::NotFound { .. } | Error::NotRunning { .. } => Fault::NotFound,
            Error::Engine { source, .. } if source.is_absent() => Fault::HostConfig,
            Error::Engine { .. } => Fault::Transient,
            Error::Proc { source, .. } => match source.errno() {
                Some(libc::ENOENT | libc::ESRCH) => Fault::NotFound,
                _ => Fault::Transient,
            },
            Error::NoCpusetLine { .. } => Fault::HostConfig,
            Error::Cgroup(e) => e.fault(),
        }
    }
}

/// Most cgroups [`Discovery::list`] walks, and how deep.
const MAX_WALK: usize = 100_000;
const MAX_WALK_DEPTH: usize = 16;

/// Finds containers on one host.
#[derive(Debug, Clone)]
pub struct Discovery {
    cgroups: Cgroups,
    files: Files,
    engines: Vec<Engine>,
}

impl Discovery {
    /// `files` gives `/proc`; `engines` are the runtimes with a name API (normally
    /// [`Engine::docker`] and [`Engine::podman`]).
    pub fn new(cgroups: Cgroups, files: Files, engines: Vec<Engine>) -> Self {
        Self {
            cgroups,
            files,
            engines,
        }
    }

    pub fn cgroups(&self) -> &Cgroups {
        &self.cgroups
    }

    /// The container that `input` names; see [`Reference`] for the syntax. A cgroup that
    /// must never be managed ([`protected`]) is refused, whatever names it.
    pub fn resolve(&self, input: &str) -> Result<Container, Error> {
        let found = self.resolve_any(input)?;
        match protected(&found.cgroup, self.own_cgroup().as_ref()) {
            Some(reason) => Err(Error::Protected {
                reference: input.to_owned(),
                cgroup: found.cgroup,
                reason,
            }),
            None => Ok(found),
        }
    }

    /// The daemon's (this process's) own cgroup in the cpuset hierarchy, read each time: a
    /// service manager may move it.
    fn own_cgroup(&self) -> Option<CgroupPath> {
        self.cgroup_of_pid(std::process::id()).ok()
    }

    fn resolve_any(&self, input: &str) -> Result<Container, Error> {
        let reference = Reference::parse(input)?;
        let not_found = |hint: &str| Error::NotFound {
            reference: input.to_owned(),
            hint: hint.to_owned(),
        };
        match reference {
            Reference::Cgroup { path } => {
                if !self.cgroups.exists(&path)? {
                    return Err(not_found(&format!(
                        " (no cgroup {path} under {})",
                        self.cgroups.root().display()
                    )));
                }
                Ok(self.container_at(path))
            }
            Reference::Engine {
                runtime,
                name_or_id,
            } => self.by_engine(input, runtime, &name_or_id),
            Reference::Id { runtime, prefix } => self.one_of(
                input,
                self.scan(|c| runtime.is_none_or(|r| c.runtime == r) && c.id.starts_with(&prefix))?,
            ),
            Reference::Pod { uid } => self.one_of(
                input,
                self.scan(|c| c.runtime == Runtime::Pod && c.id == uid)?,
            ),
            Reference::Lxc { name } => self.one_of(
                input,
                self.scan(|c| c.runtime == Runtime::Lxc && c.id == name)?,
            ),
            Reference::Unit { name } => {
                // Slices are not listed as containers, but may be placed by name.
                let found = self
                    .walk()?
                    .into_iter()
                    .filter(|p| p.name() == name)
                    .map(|p| self.container_at(p))
                    .collect();
                let hint = if self.cgroups.version() == Version::V1 {
                    " (on cgroup v1, systemd does not create cpuset cgroups for its units)"
                } else {
                    ""
                };
                self.one_of(input, found).map_err(|e| match e {
                    Error::NotFound { .. } => not_found(hint),
                    other => other,
                })
            }
            Reference::Any { text } => self.anything(input, &text),
        }
    }

    /// Every container of the host, by cgroup path. Names come from the engines that
    /// answer; an engine that is not installed is skipped.
    pub fn list(&self) -> Result<Vec<Container>, Error> {
        let mut names: BTreeMap<String, String> = BTreeMap::new();
        for engine in &self.engines {
            match engine.list() {
                Ok(cs) => names.extend(cs.into_iter().map(|c| (c.id, c.name))),
                Err(e) if e.is_absent() => {}
                Err(e) => tracing::warn!(error = %e, "cannot list {} containers", engine.runtime),
            }
        }
        let own = self.own_cgroup();
        let mut out: Vec<Container> = self
            .walk()?
            .into_iter()
            .filter(|p| protected(p, own.as_ref()).is_none())
            .filter_map(|p| {
                let c = classify(&p)?;
                let name = names
                    .get(&c.id)
                    .cloned()
                    .or_else(|| self.engine_name(c.runtime, &c.id));
                Some(Container {
                    name: name.or_else(|| default_name(&c)),
                    runtime: c.runtime,
                    id: c.id,
                    pod: c.pod,
                    cgroup: p,
                })
            })
            .collect();
        out.sort_by(|a, b| a.cgroup.cmp(&b.cgroup));
        Ok(out)
    }

    fn container_at(&self, path: CgroupPath) -> Container {
        match classify(&path) {
            Some(c) => Container {
                name: default_name(&c),
                runtime: c.runtime,
                id: c.id,
                pod: c.pod,
                cgroup: path,
            },
            None => Container {
                runtime: Runtime::Cgroup,
                id: path.to_string(),
                name: None,
                pod: None,
                cgroup: path,
            },
        }
    }

    /// The name of a container its engine does not list yet: runc creates the cgroup
    /// before the engine marks the container running, and listing shows running ones only,
    /// while inspecting by id answers from creation on.
    fn engine_name(&self, runtime: Runtime, id: &str) -> Option<String> {
        let engine = self.engine(runtime)?;
        if id.len() < MIN_ID_PREFIX || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        match engine.inspect(id) {
            Ok(found) => found.map(|c| c.name).filter(|n| !n.is_empty()),
            Err(e) => {
                tracing::debug!(error = %e, container = id, "no name from the engine");
                None
            }
        }
    }

    fn engine(&self, runtime: Runtime) -> Option<&Engine> {
        self.engines.iter().find(|e| e.runtime == runtime)
    }

    fn by_engine(
        &self,
        input: &str,
        runtime: Runtime,
        name_or_id: &str,
    ) -> Result<Container, Error> {
        let looks_like_id =
            name_or_id.len() >= MIN_ID_PREFIX && name_or_id.bytes().all(|b| b.is_ascii_hexdigit());
        let by_id = || {
            self.one_of(
                input,
                self.scan(|c| {
                    c.runtime == runtime && c.id.starts_with(&name_or_id.to_ascii_lowercase())
                })?,
            )
        };
        let Some(engine) = self.engine(runtime) else {
            return by_id();
        };
        match engine.inspect(name_or_id) {
            Ok(Some(ec)) => self.container_of_engine(input, runtime, ec),
            Ok(None) => Err(Error::NotFound {
                reference: input.to_owned(),
                hint: format!(" ({runtime} does not know it)"),
            }),
            Err(e) if e.is_absent() && looks_like_id => by_id(),
            Err(source) => Err(Error::Engine {
                runtime,
                reference: input.to_owned(),
                hint: if source.is_absent() {
                    "the engine's socket is not there: is it running? (an id instead of a \
                     name is found without it)"
                } else {
                    "the engine did not answer in time or answered garbage; try again"
                },
                source: Box::new(source),
            }),
        }
    }

    /// The container of an engine's answer: the cgroup of its main process, raised to the
    /// cgroup that the runtime's naming convention marks as the container's own (a process
    /// may sit in a sub-cgroup, as systemd inside a container does).
    fn container_of_engine(
        &self,
        input: &str,
        runtime: Runtime,
        ec: EngineContainer,
    ) -> Result<Container, Error> {
        let pid = ec.pid.ok_or_else(|| Error::NotRunning {
            reference: input.to_owned(),
            id: ec.id.clone(),
        })?;
        let own = self.cgroup_of_pid(pid)?;
        let mut top = own.clone();
        for candidate in own.ancestors().into_iter().chain([own.clone()]) {
            if classify(&candidate).is_some_and(|c| c.id == ec.id) {
                top = candidate;
                break;
            }
        }
        if !self.cgroups.exists(&top)? {
            return Err(Error::NotFound {
                reference: input.to_owned(),
                hint: format!(" (its cgroup {top} is gone)"),
            });
        }
        Ok(Container {
            runtime: classify(&top).map_or(runtime, |c| c.runtime),
            pod: classify(&top).and_then(|c| c.pod),
            id: ec.id,
            name: Some(ec.name),
            cgroup: top,
        })
    }

    /// The cpuset-hierarchy cgroup of a process, from `/proc/<pid>/cgroup`.
    pub fn cgroup_of_pid(&self, pid: u32) -> Result<CgroupPath, Error> {
        let text = self
            .files
            .read(&self.files.task_path(pid, "cgroup"))
            .map_err(|source| Error::Proc { pid, source })?;
        let version = self.cgroups.version();
        let rel = proc_cgroup_line(&text, version).ok_or(Error::NoCpusetLine { pid, version })?;
        Ok(CgroupPath::parse(rel).map_err(cgroup::Error::from)?)
    }

    fn anything(&self, input: &str, text: &str) -> Result<Container, Error> {
        let mut found: Vec<Container> = Vec::new();
        let mut engine_error = None;
        for engine in &self.engines {
            match engine.inspect(text) {
                Ok(Some(ec)) => match self.container_of_engine(input, engine.runtime, ec) {
                    Ok(c) => found.push(c),
                    Err(e @ Error::NotRunning { .. }) => engine_error = Some(e),
                    Err(e) => return Err(e),
                },
                Ok(None) => {}
                Err(e) if e.is_absent() => {}
                Err(source) => {
                    tracing::warn!(error = %source, "engine did not answer");
                    engine_error = Some(Error::Engine {
                        runtime: engine.runtime,
                        reference: input.to_owned(),
                        hint: "the engine did not answer in time or answered garbage",
                        source: Box::new(source),
                    });
                }
            }
        }
        let hex = text.len() >= MIN_ID_PREFIX && text.bytes().all(|b| b.is_ascii_hexdigit());
        let lower = text.to_ascii_lowercase();
        for c in self.scan(|c| c.id == text || (hex && c.id.starts_with(&lower)))? {
            if !found.iter().any(|f| f.cgroup == c.cgroup) {
                found.push(c);
            }
        }
        match (found.len(), engine_error) {
            (0, Some(e)) => Err(e),
            _ => self.one_of(input, found),
        }
    }

    fn one_of(&self, input: &str, mut found: Vec<Container>) -> Result<Container, Error> {
        match found.len() {
            0 => Err(Error::NotFound {
                reference: input.to_owned(),
                hint: String::new(),
            }),
            1 => Ok(found.remove(0)),
            _ => Err(Error::Ambiguous {
                reference: input.to_owned(),
                candidates: found
                    .iter()
                    .map(|c| format!("{}:{} ({})", c.runtime, c.label(), c.cgroup))
                    .collect(),
            }),
        }
    }

    /// Classified containers that satisfy `keep`.
    fn scan(&self, keep: impl Fn(&Classified) -> bool) -> Result<Vec<Container>, Error> {
        Ok(self
            .walk()?
            .into_iter()
            .filter(|p| classify(p).is_some_and(|c| keep(&c)))
            .map(|p| self.container_at(p))
            .collect())
    }

    /// Every cgroup of the hierarchy (bounded), skipping those that vanish meanwhile.
    fn walk(&self) -> Result<Vec<CgroupPath>, Error> {
        let mut out = Vec::new();
        let mut stack = vec![CgroupPath::root()];
        while let Some(p) = stack.pop() {
            if out.len() >= MAX_WALK {
                tracing::warn!(limit = MAX_WALK, "cgroup walk truncated");
                break;
            }
            if p.depth() < MAX_WALK_DEPTH {
                match self.cgroups.children(&p) {
                    Ok(children) => stack.extend(children.into_iter().rev()),
                    Err(cgroup::Error::Vanished { .. }) if !p.is_root() => continue,
                    Err(e) => return Err(e.into()),
                }
            }
            out.push(p);
        }
        Ok(out)
    }
}

/// The name shown for runtimes whose id is a name.
fn default_name(c: &Classified) -> Option<String> {
    matches!(c.runtime, Runtime::Lxc | Runtime::Systemd).then(|| c.id.clone())
}

/// The cgroup path of the cpuset hierarchy in `/proc/<pid>/cgroup` text: on v1 the line
/// whose controllers include `cpuset` (`4:cpuset:/docker/<id>`), on v2 the `0::` line.
pub fn proc_cgroup_line(text: &str, version: Version) -> Option<&str> {
    text.lines().find_map(|line| {
        let mut parts = line.splitn(3, ':');
        let (id, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        let hit = match version {
            Version::V1 => controllers.split(',').any(|c| c == "cpuset"),
            Version::V2 => id == "0" && controllers.is_empty(),
        };
        hit.then_some(path)
    })
}

#[cfg(test)]
mod tests;
