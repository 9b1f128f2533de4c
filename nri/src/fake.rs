//! An NRI runtime in-process, for tests: it speaks the real protocol (the multiplexer,
//! ttrpc, the same messages) to a real [`Plugin`], over a Unix socket or an in-memory
//! pipe (the pipe lets tests run on tokio's paused clock: nothing waits on the kernel, so
//! time only jumps when every task is idle). Each call carries the runtime's 2 s timeout,
//! as containerd's do. It does not create containers: a test says what the runtime
//! would send, and reads what the plugin answered.

use std::collections::HashSet;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use ttrpc::r#async::TtrpcContext;
use ttrpc::r#async::transport::{Listener, Socket};

use placed_core::reconcile::Sets;

use crate::api::nri as pb;
use crate::api::nri_ttrpc::{self, PluginClient};
use crate::config::{Config, ConfigError, RUNTIME_TIMEOUT};
use crate::convert;
use crate::events::{EventMask, StateChange};
use crate::mux::{self, Mux};
use crate::objects::{Container, Pod, Resources};
use crate::placer::{Placer, Update};
use crate::plugin::{self, Plugin, Trunk};

#[derive(Debug, thiserror::Error)]
pub enum FakeError {
    #[error("the plugin's call failed")]
    Call(#[source] ttrpc::Error),
    #[error("no plugin connected and registered")]
    NoPlugin,
    #[error("the plugin sent {0}")]
    Malformed(String),
    #[error("cannot listen on the fake runtime's socket")]
    Listen(#[source] io::Error),
}

type Trunks = mpsc::UnboundedSender<Box<dyn Trunk>>;

/// The runtime side of the NRI socket.
pub struct FakeRuntime {
    trunks: Trunks,
    incoming: tokio::sync::Mutex<mpsc::UnboundedReceiver<Box<dyn Trunk>>>,
    socket: Option<PathBuf>,
    listener: Option<JoinHandle<()>>,
    refusing: Arc<AtomicBool>,
    /// Each call's timeout, the runtime's.
    pub timeout: Duration,
}

impl std::fmt::Debug for FakeRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeRuntime")
            .field("socket", &self.socket)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl FakeRuntime {
    /// A runtime reached through in-memory pipes ([`FakeRuntime::start_plugin`]).
    pub fn in_memory() -> Self {
        let (trunks, incoming) = mpsc::unbounded_channel();
        Self {
            trunks,
            incoming: tokio::sync::Mutex::new(incoming),
            socket: None,
            listener: None,
            refusing: Arc::new(AtomicBool::new(false)),
            timeout: RUNTIME_TIMEOUT,
        }
    }

    /// A runtime listening on a Unix socket at `path`, as containerd does.
    pub fn bind(path: &Path) -> Result<Self, FakeError> {
        let mut fake = Self::in_memory();
        let listener = tokio::net::UnixListener::bind(path).map_err(FakeError::Listen)?;
        let trunks = fake.trunks.clone();
        fake.listener = Some(tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                if trunks.send(Box::new(stream)).is_err() {
                    break;
                }
            }
        }));
        fake.socket = Some(path.to_owned());
        Ok(fake)
    }

    /// While set, an in-memory connection attempt is refused, as connecting to a socket
    /// nobody listens on is.
    pub fn set_refusing(&self, refusing: bool) {
        self.refusing.store(refusing, Ordering::SeqCst);
    }

    /// Starts a plugin connected to this runtime: through the socket for a bound runtime
    /// (`config.socket` is set to it), through a pipe otherwise.
    pub fn start_plugin<P: Placer>(
        &self,
        mut config: Config,
        placer: Arc<P>,
    ) -> Result<Plugin, ConfigError> {
        if let Some(socket) = &self.socket {
            config.socket = socket.clone();
            return Plugin::start(config, placer);
        }
        let trunks = self.trunks.clone();
        let refusing = self.refusing.clone();
        let connect: plugin::Connect = Arc::new(move || {
            let trunks = trunks.clone();
            let refusing = refusing.load(Ordering::SeqCst);
            Box::pin(async move {
                if refusing {
                    return Err(io::Error::from(io::ErrorKind::ConnectionRefused));
                }
                let (ours, theirs) = tokio::io::duplex(1 << 20);
                trunks
                    .send(Box::new(theirs))
                    .map_err(|_| io::Error::from(io::ErrorKind::ConnectionRefused))?;
                Ok(Box::new(ours) as Box<dyn Trunk>)
            })
        });
        Plugin::start_with(config, placer, connect)
    }

    /// Waits for the next plugin to connect and register.
    pub async fn accept(&self) -> Result<Connection, FakeError> {
        let trunk = self
            .incoming
            .lock()
            .await
            .recv()
            .await
            .ok_or(FakeError::NoPlugin)?;
        let (mux, mut conns) = Mux::start(trunk, &[mux::PLUGIN_SERVICE, mux::RUNTIME_SERVICE]);
        let (Some(runtime_conn), Some(plugin_conn)) = (conns.pop(), conns.pop()) else {
            return Err(FakeError::NoPlugin);
        };
        let (registered, mut registration) = mpsc::unbounded_channel();
        let (updates_tx, updates) = mpsc::unbounded_channel();
        let failing = Arc::new(Mutex::new(HashSet::new()));
        let service = Arc::new(RuntimeService {
            registered,
            updates: updates_tx,
            failing: failing.clone(),
        });
        let incoming = futures::stream::iter([Ok::<_, io::Error>(runtime_conn)]);
        let mut server = ttrpc::r#async::Server::new()
            .add_listener(Listener::new(incoming))
            .register_service(nri_ttrpc::create_runtime(service));
        server.start().await.map_err(FakeError::Call)?;
        let client = PluginClient::new(ttrpc::r#async::Client::new(Socket::new(plugin_conn)));
        let (plugin_name, plugin_index) = tokio::select! {
            r = registration.recv() => r.ok_or(FakeError::NoPlugin)?,
            _ = mux.ended() => return Err(FakeError::NoPlugin),
        };
        Ok(Connection {
            plugin_name,
            plugin_index,
            client,
            updates,
            failing,
            timeout: self.timeout,
            _server: server,
            mux,
        })
    }

    /// Accepts the next plugin and takes it through Configure and Synchronize with what
    /// the runtime has, as containerd does; returns the connection, the event mask the
    /// plugin subscribed to, and the updates it asked for in Synchronize.
    pub async fn accept_synchronized(
        &self,
        pods: &[Pod],
        containers: &[Container],
    ) -> Result<(Connection, EventMask, Vec<Update>), FakeError> {
        let conn = self.accept().await?;
        let events = conn.configure().await?;
        let updates = conn.synchronize(pods, containers).await?;
        Ok((conn, events, updates))
    }
}

impl Drop for FakeRuntime {
    fn drop(&mut self) {
        if let Some(l) = &self.listener {
            l.abort();
        }
        if let Some(path) = &self.socket {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// One plugin's connection, seen from the runtime.
pub struct Connection {
    pub plugin_name: String,
    pub plugin_index: String,
    client: PluginClient,
    updates: mpsc::UnboundedReceiver<Vec<Update>>,
    failing: Arc<Mutex<HashSet<String>>>,
    timeout: Duration,
    // Kept for the connection's life: dropping them closes it.
    _server: ttrpc::r#async::Server,
    mux: Mux,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("plugin_name", &self.plugin_name)
            .field("plugin_index", &self.plugin_index)
            .finish_non_exhaustive()
    }
}

impl Connection {
    fn ctx(&self) -> ttrpc::context::Context {
        ttrpc::context::with_timeout(i64::try_from(self.timeout.as_nanos()).unwrap_or(i64::MAX))
    }

    /// Configure: the events the plugin subscribes to (the raw mask as sent, then as a set).
    pub async fn configure(&self) -> Result<EventMask, FakeError> {
        let req = pb::ConfigureRequest {
            runtime_name: "fake".into(),
            runtime_version: "0.6.1".into(),
            ..Default::default()
        };
        let reply = self
            .client
            .configure(self.ctx(), &req)
            .await
            .map_err(FakeError::Call)?;
        let mask: EventMask = crate::events::Event::ALL
            .into_iter()
            .filter(|e| reply.events & e.bit() != 0)
            .collect();
        if mask.wire().ok() != Some(reply.events) {
            return Err(FakeError::Malformed(format!(
                "event mask {:#x}",
                reply.events
            )));
        }
        Ok(mask)
    }

    pub async fn synchronize(
        &self,
        pods: &[Pod],
        containers: &[Container],
    ) -> Result<Vec<Update>, FakeError> {
        let req = pb::SynchronizeRequest {
            pods: pods.iter().map(convert::back::pod).collect(),
            containers: containers.iter().map(convert::back::container).collect(),
            ..Default::default()
        };
        let reply = self
            .client
            .synchronize(self.ctx(), &req)
            .await
            .map_err(FakeError::Call)?;
        reply.update.iter().map(update).collect()
    }

    /// CreateContainer: the cpuset the plugin's adjustment sets, if any.
    pub async fn create_container(
        &self,
        pod: &Pod,
        container: &Container,
    ) -> Result<Option<Sets>, FakeError> {
        let req = pb::CreateContainerRequest {
            pod: Some(convert::back::pod(pod)).into(),
            container: Some(convert::back::container(container)).into(),
            ..Default::default()
        };
        let reply = self
            .client
            .create_container(self.ctx(), &req)
            .await
            .map_err(FakeError::Call)?;
        if !reply.update.is_empty() {
            return Err(FakeError::Malformed("updates at creation".into()));
        }
        let Some(resources) = reply
            .adjust
            .as_ref()
            .and_then(|a| a.linux.as_ref())
            .and_then(|l| l.resources.as_ref())
        else {
            return Ok(None);
        };
        let r = convert::resources(resources, &container.id);
        if (r.cpu_shares, r.cpu_quota, r.cpu_period) != (None, None, None) {
            return Err(FakeError::Malformed(
                "an adjustment of more than the cpuset".into(),
            ));
        }
        match (r.cpus, r.mems) {
            (None, None) => Ok(None),
            (Some(cpus), Some(mems)) => Ok(Some(Sets { cpus, mems })),
            _ => Err(FakeError::Malformed(
                "an adjustment of half a cpuset".into(),
            )),
        }
    }

    /// UpdateContainer with the resources someone asked for: the plugin's updates.
    pub async fn update_container(
        &self,
        pod: &Pod,
        container: &Container,
        requested: &Resources,
    ) -> Result<Vec<Update>, FakeError> {
        let req = pb::UpdateContainerRequest {
            pod: Some(convert::back::pod(pod)).into(),
            container: Some(convert::back::container(container)).into(),
            linux_resources: Some(convert::back::resources(requested)).into(),
            ..Default::default()
        };
        let reply = self
            .client
            .update_container(self.ctx(), &req)
            .await
            .map_err(FakeError::Call)?;
        reply.update.iter().map(update).collect()
    }

    pub async fn stop_container(
        &self,
        pod: &Pod,
        container: &Container,
    ) -> Result<Vec<Update>, FakeError> {
        let req = pb::StopContainerRequest {
            pod: Some(convert::back::pod(pod)).into(),
            container: Some(convert::back::container(container)).into(),
            ..Default::default()
        };
        let reply = self
            .client
            .stop_container(self.ctx(), &req)
            .await
            .map_err(FakeError::Call)?;
        reply.update.iter().map(update).collect()
    }

    pub async fn state_change(&self, change: &StateChange) -> Result<(), FakeError> {
        let req = pb::StateChangeEvent {
            event: convert::back::event(change.event),
            pod: Some(convert::back::pod(&change.pod)).into(),
            container: change
                .container
                .as_ref()
                .map(convert::back::container)
                .into(),
            ..Default::default()
        };
        self.client
            .state_change(self.ctx(), &req)
            .await
            .map_err(FakeError::Call)?;
        Ok(())
    }

    /// Shutdown: the runtime tells the plugin it is going down.
    pub async fn shutdown(&self) -> Result<(), FakeError> {
        self.client
            .shutdown(self.ctx(), &pb::Empty::default())
            .await
            .map_err(FakeError::Call)?;
        Ok(())
    }

    /// The next UpdateContainers the plugin sent (`None` once the connection is gone).
    pub async fn next_updates(&mut self) -> Option<Vec<Update>> {
        self.updates.recv().await
    }

    /// From now on, updates of `container` are answered as failed.
    pub fn fail_updates_of(&self, container: &str) {
        self.failing
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(container.to_owned());
    }

    /// Waits until the plugin closes the connection.
    pub async fn closed(&self) {
        self.mux.ended().await;
    }
}

fn update(u: &pb::ContainerUpdate) -> Result<Update, FakeError> {
    let r = u
        .linux
        .as_ref()
        .and_then(|l| l.resources.as_ref())
        .map(|r| convert::resources(r, &u.container_id))
        .unwrap_or_default();
    let sets = r.sets().ok_or_else(|| {
        FakeError::Malformed(format!(
            "an update of {} without a whole cpuset",
            u.container_id
        ))
    })?;
    Ok(Update {
        container_id: u.container_id.clone(),
        sets,
    })
}

struct RuntimeService {
    registered: mpsc::UnboundedSender<(String, String)>,
    updates: mpsc::UnboundedSender<Vec<Update>>,
    failing: Arc<Mutex<HashSet<String>>>,
}

#[async_trait]
impl nri_ttrpc::Runtime for RuntimeService {
    async fn register_plugin(
        &self,
        _: &TtrpcContext,
        req: pb::RegisterPluginRequest,
    ) -> ttrpc::Result<pb::Empty> {
        let _ = self.registered.send((req.plugin_name, req.plugin_idx));
        Ok(pb::Empty::default())
    }

    async fn update_containers(
        &self,
        _: &TtrpcContext,
        req: pb::UpdateContainersRequest,
    ) -> ttrpc::Result<pb::UpdateContainersResponse> {
        let updates: Vec<Update> = req
            .update
            .iter()
            .map(update)
            .collect::<Result<_, _>>()
            .map_err(|e| ttrpc::Error::Others(e.to_string()))?;
        let failing = self
            .failing
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let failed = req
            .update
            .iter()
            .filter(|u| failing.contains(&u.container_id))
            .cloned()
            .collect();
        let _ = self.updates.send(updates);
        Ok(pb::UpdateContainersResponse {
            failed,
            ..Default::default()
        })
    }
}
