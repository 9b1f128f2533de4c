//! What the daemon's in-process tests share: a configuration in a temporary directory, a
//! fake host (placed-host's fake kernel, no root) as the daemon's environment, the real
//! `run` on listeners bound as the binary binds them, clients over the real Unix socket and
//! over TCP with TLS, and bounded waits.

// Each test binary uses a different subset.
#![allow(dead_code)]

#[path = "../../../tests/support/pki.rs"]
pub mod pki;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use placed::config::{Config, TlsConfig};
use placed::lifecycle::{Environment, StartError};
use placed::run::{Listeners, RunError};
use placed_core::machine::{Machine, TopologySource};
use placed_host::fake::FakeKernel;
use placed_host::stop::Stop;
use placed_proto::v1::placed_service_client::PlacedServiceClient;
use tonic::transport::Channel;

/// Bounds a wait for something the daemon does on its own time: it only stops a hang, it
/// times nothing.
pub const HANG: Duration = Duration::from_secs(120);

/// 16 PUs (0-15) on two nodes, as the fake hosts below have.
pub fn machine() -> Machine {
    Machine::load(
        &TopologySource::Synthetic("pack:2 numa:1 core:4 pu:2".into()),
        None,
    )
    .expect("a synthetic machine")
}

/// A fake host of 16 PUs on two nodes whose `/batch` holds one container, `job`.
pub fn host() -> Arc<FakeKernel> {
    let fake = FakeKernel::v1("0-15", "0-1");
    fake.cgroup("/batch/job", "", "");
    fake
}

/// The daemon's environment on `fake`.
pub fn environment(fake: &Arc<FakeKernel>) -> Environment {
    Environment {
        machine: machine(),
        host: fake.host(),
        pmu: false,
        migration_hold: None,
        // A fake host: what it measures is SIMULATED.
        provenance: placed_models::Provenance::Simulated,
    }
}

/// A configuration whose files are all in `dir`: it manages the children of `/batch`, on
/// the Unix socket `dir/placed.sock`, without metrics.
pub fn config(dir: &Path) -> Config {
    let mut c = Config::default();
    c.containers.cgroups = vec!["/batch".into()];
    c.containers.resync_interval = Duration::from_secs(1);
    c.containers.runtimes = Vec::new();
    c.daemon.state_file = dir.join("state.json");
    c.daemon.model_dir = dir.join("models");
    c.metrics.enabled = false;
    c.grpc.socket = dir.join("placed.sock");
    c.grpc.socket_group = None;
    c
}

/// Adds a TCP listener on a free loopback port with the test PKI's server certificate,
/// requiring client certificates when `client_certificates`.
pub fn with_tls(config: &mut Config, p: &pki::Pki, client_certificates: bool) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    config.grpc.tcp = Some(([127, 0, 0, 1], port).into());
    config.grpc.tls = Some(TlsConfig {
        cert: p.server_cert.clone(),
        key: p.server_key.clone(),
        client_ca: client_certificates.then(|| p.ca.clone()),
    });
}

/// The daemon running in this process, as the binary runs it.
pub struct Running {
    pub stop: Stop,
    pub run: tokio::task::JoinHandle<Result<(), RunError>>,
    pub socket: PathBuf,
    pub state_file: PathBuf,
}

impl Running {
    /// Binds what `config` names and runs the daemon with the environment `environment`
    /// gives when it is ready.
    pub async fn start(
        config: Config,
        environment: impl Future<Output = Result<Environment, StartError>> + Send + 'static,
    ) -> Self {
        let listeners = Listeners::bind(&config).await.expect("bind the listeners");
        let stop = Stop::new();
        let (socket, state_file) = (config.grpc.socket.clone(), config.daemon.state_file.clone());
        let run = tokio::spawn(placed::run::run(
            config,
            listeners,
            environment,
            stop.clone(),
            None,
        ));
        Self {
            stop,
            run,
            socket,
            state_file,
        }
    }

    /// Runs on `fake` at once.
    pub async fn on(config: Config, fake: &Arc<FakeKernel>) -> Self {
        let env = environment(fake);
        Self::start(config, async move { Ok(env) }).await
    }

    /// Asks it to stop and waits until `run` returns.
    pub async fn stop(self) -> Result<(), RunError> {
        self.stop.request();
        tokio::time::timeout(HANG, self.run)
            .await
            .expect("the daemon did not stop")
            .expect("the run task panicked")
    }

    pub async fn channel(&self) -> Channel {
        unix_channel(&self.socket).await
    }

    pub async fn client(&self) -> PlacedServiceClient<Channel> {
        PlacedServiceClient::new(self.channel().await)
    }
}

pub async fn unix_channel(socket: &Path) -> Channel {
    placed_proto::unix::connect(socket)
        .await
        .expect("connect to the socket")
}

/// A channel to `addr` over TLS trusting the test CA, with the test client certificate
/// when `certificate`.
pub async fn tls_channel(
    addr: std::net::SocketAddr,
    p: &pki::Pki,
    certificate: bool,
) -> Result<Channel, tonic::transport::Error> {
    use tonic::transport::{Certificate, ClientTlsConfig, Endpoint, Identity};
    let read = |p: &PathBuf| std::fs::read(p).expect("read PEM");
    let mut tls = ClientTlsConfig::new()
        .ca_certificate(Certificate::from_pem(read(&p.ca)))
        .domain_name("127.0.0.1");
    if certificate {
        tls = tls.identity(Identity::from_pem(
            read(&p.client_cert),
            read(&p.client_key),
        ));
    }
    Endpoint::from_shared(format!("https://{addr}"))
        .expect("an endpoint")
        .tls_config(tls)?
        .connect()
        .await
}

/// Polls until `f` holds; panics after [`HANG`].
pub async fn until(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + HANG;
    while !f() {
        assert!(tokio::time::Instant::now() < deadline, "never: {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Polls until the asynchronous `f` holds; panics after [`HANG`].
pub async fn until_async<F: Future<Output = bool>>(what: &str, mut f: impl FnMut() -> F) {
    let deadline = tokio::time::Instant::now() + HANG;
    while !f().await {
        assert!(tokio::time::Instant::now() < deadline, "never: {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
