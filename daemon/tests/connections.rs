//! Idle peers cannot lock anyone out: connection limits per peer (per uid on the Unix
//! socket, per address on TCP and the metrics port), room kept for root and for
//! authenticated clients, a short bound on handshakes, and refusals that say which limit
//! was hit. The daemon runs in-process on a fake host; every connection is a real socket.
//! Waits are bounded by progress, never timed.
//!
//! Before: each listener held 256 connections and closed one only after 60 s of silence,
//! so 256 idle connections renewed every minute turned away every authenticated client
//! and every scrape (`tls handshake eof`, `Connection reset by peer`), and a full Unix
//! socket gave `Broken pipe`.

#![allow(clippy::unwrap_used, reason = "test fixture")]

mod support;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::os::unix::fs::PermissionsExt as _;
use std::time::{Duration, Instant};

use placed_proto::v1 as pb;
use placed_proto::v1::placed_service_client::PlacedServiceClient;
use support::{HANG, Running};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

/// A loopback address of its own for idle peer `i` (Linux routes all of 127/8 to lo).
fn peer_address(i: usize) -> IpAddr {
    let i = u32::try_from(i).unwrap();
    IpAddr::V4(Ipv4Addr::from(u32::from(Ipv4Addr::new(127, 1, 0, 1)) + i))
}

/// `n` peers, each from its own address, connected to `to` and saying nothing.
async fn idle_peers(n: usize, to: SocketAddr) -> Vec<tokio::net::TcpStream> {
    let mut peers = Vec::with_capacity(n);
    for i in 0..n {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind(SocketAddr::new(peer_address(i), 0)).unwrap();
        peers.push(socket.connect(to).await.unwrap());
    }
    peers
}

async fn serving(d: &Running) {
    let mut c = d.client().await;
    support::until_async("the daemon serves", || {
        let mut c = c.clone();
        async move { c.get_status(pb::GetStatusRequest {}).await.is_ok() }
    })
    .await;
    drop(c.get_status(pb::GetStatusRequest {}).await.unwrap());
}

/// 300 peers connect to the TLS port and say nothing. They can only ever hold TLS
/// handshakes, each for the handshake bound at most, and a newcomer takes the place of the
/// oldest: an authenticated client is still answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_peers_on_the_tls_port_do_not_keep_an_authenticated_client_out() {
    let dir = tempfile::tempdir().unwrap();
    let p = support::pki::pki(dir.path());
    let mut config = support::config(dir.path());
    support::with_tls(&mut config, &p, true);
    let addr = config.grpc.tcp.unwrap();
    let fake = support::host();
    let d = Running::on(config, &fake).await;
    serving(&d).await;

    let idle = idle_peers(300, addr).await;
    let started = Instant::now();
    let channel = tokio::time::timeout(HANG, support::tls_channel(addr, &p, true))
        .await
        .expect("the TLS handshake never finished")
        .unwrap();
    let status = PlacedServiceClient::new(channel)
        .get_status(pb::GetStatusRequest {})
        .await
        .unwrap()
        .into_inner();
    eprintln!(
        "authenticated GetStatus answered in {:?} with 300 idle peers on the TLS port",
        started.elapsed()
    );
    assert_eq!(status.fingerprint, support::machine().fingerprint());
    drop(idle);
    d.stop().await.unwrap();
}

/// The Unix socket's peers by uid: one uid holds at most `grpc.max_connections_per_peer`,
/// told so with RESOURCE_EXHAUSTED; uids together leave root its reserve, and root is
/// answered whatever they hold.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_users_cannot_lock_root_out_of_the_unix_socket() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: connecting as other uids needs root");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o711)).unwrap();
    let mut config = support::config(dir.path());
    config.grpc.socket_group = Some("nogroup".into());
    config.grpc.max_unix_connections = 16;
    config.grpc.max_connections_per_peer = 4;
    // Long: the idle connections below must outlast the test however slowly it runs.
    config.grpc.handshake_timeout = Duration::from_secs(60);
    let fake = support::host();
    let d = Running::on(config, &fake).await;
    // Root's client holds one connection throughout.
    let mut root = d.client().await;
    support::until_async("the daemon serves", || {
        let mut root = root.clone();
        async move { root.get_status(pb::GetStatusRequest {}).await.is_ok() }
    })
    .await;

    // uid 60001 takes its four places; its fifth is refused, naming the setting.
    let mut held = connect_as(60001, &d.socket, 4);
    let refused = refused_as(60001, &d.socket).await;
    assert!(
        refused.message().contains(
            "uid 60001 holds 4 connections to the Unix socket, as many as one peer may (grpc.max_connections_per_peer)"
        ),
        "{refused:?}"
    );
    // Two more uids fill what is not kept for root (16 - 4, root's connection included).
    held.extend(connect_as(60002, &d.socket, 4));
    held.extend(connect_as(60003, &d.socket, 3));
    let refused = refused_as(60004, &d.socket).await;
    assert!(
        refused.message().contains("4 more are kept for root"),
        "{refused:?}"
    );
    // Root is answered, on its connection and on new ones.
    root.get_status(pb::GetStatusRequest {}).await.unwrap();
    d.client()
        .await
        .get_status(pb::GetStatusRequest {})
        .await
        .unwrap();
    drop((held, root));
    d.stop().await.unwrap();
}

/// `n` connections to `socket` made by a thread whose credentials are `uid` and the
/// socket's group (nogroup): SO_PEERCRED gives the server the connecting thread's.
fn connect_as(uid: u32, socket: &std::path::Path, n: usize) -> Vec<std::os::unix::net::UnixStream> {
    let socket = socket.to_owned();
    std::thread::spawn(move || {
        // SAFETY: raw setresgid/setresuid change this thread's credentials only (glibc's
        // wrappers would change every thread's); the thread ends right after connecting.
        unsafe {
            assert_eq!(libc::syscall(libc::SYS_setresgid, 65534, 65534, 65534), 0);
            assert_eq!(libc::syscall(libc::SYS_setresuid, uid, uid, uid), 0);
        }
        (0..n)
            .map(|_| std::os::unix::net::UnixStream::connect(&socket).unwrap())
            .collect()
    })
    .join()
    .unwrap()
}

/// What a call on a new connection of `uid` gets, which must be RESOURCE_EXHAUSTED.
async fn refused_as(uid: u32, socket: &std::path::Path) -> tonic::Status {
    let stream = connect_as(uid, socket, 1).pop().unwrap();
    let refused = client_on(stream)
        .await
        .get_status(pb::GetStatusRequest {})
        .await
        .unwrap_err();
    assert_eq!(
        refused.code(),
        tonic::Code::ResourceExhausted,
        "{refused:?}"
    );
    refused
}

/// A gRPC client on a connection already made.
async fn client_on(
    stream: std::os::unix::net::UnixStream,
) -> PlacedServiceClient<tonic::transport::Channel> {
    stream.set_nonblocking(true).unwrap();
    let stream = std::sync::Mutex::new(Some(tokio::net::UnixStream::from_std(stream).unwrap()));
    let channel = tonic::transport::Endpoint::from_static("http://localhost")
        .connect_with_connector(tower::service_fn(move |_: tonic::transport::Uri| {
            let s = stream.lock().unwrap().take();
            async move {
                s.map(hyper_util::rt::TokioIo::new)
                    .ok_or_else(|| std::io::Error::other("used once"))
            }
        }))
        .await
        .unwrap();
    PlacedServiceClient::new(channel)
}

/// `GET /metrics` from 127.0.0.1: the status line and the body.
async fn scrape(port: u16) -> (String, String) {
    let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .unwrap();
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: placed\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).await.unwrap();
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
    (
        head.lines().next().unwrap_or("").to_owned(),
        body.to_owned(),
    )
}

fn metrics_port(config: &mut placed::config::Config) -> u16 {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    config.metrics.enabled = true;
    config.metrics.listen = ([127, 0, 0, 1], port).into();
    port
}

/// 300 peers hold connections to the metrics port and say nothing: a scrape still gets
/// its metrics, taking the place of one that never spoke.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_peers_on_the_metrics_port_do_not_keep_a_scrape_out() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = support::config(dir.path());
    let port = metrics_port(&mut config);
    let fake = support::host();
    let d = Running::on(config, &fake).await;
    serving(&d).await;
    let idle = idle_peers(300, ([127, 0, 0, 1], port).into()).await;
    let (status, body) = tokio::time::timeout(HANG, scrape(port)).await.unwrap();
    assert_eq!(status, "HTTP/1.1 200 OK", "{body}");
    assert!(body.contains("placed_build_info"), "{body}");
    drop(idle);
    d.stop().await.unwrap();
}

/// One request on a kept-alive connection; its status line.
async fn request(s: &mut tokio::net::TcpStream) -> String {
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: placed\r\n\r\n")
        .await
        .unwrap();
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        let mut b = [0u8; 1];
        assert_eq!(s.read(&mut b).await.unwrap(), 1, "closed mid-answer");
        head.push(b[0]);
    }
    let head = String::from_utf8(head).unwrap();
    let length: usize = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("content-length: ")
                .map(str::to_owned)
        })
        .and_then(|n| n.trim().parse().ok())
        .unwrap();
    let mut body = vec![0u8; length];
    s.read_exact(&mut body).await.unwrap();
    head.lines().next().unwrap().to_owned()
}

/// One address past its limit on the metrics port, with every connection of it talking,
/// is answered 503 with the reason in text.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_its_limit_a_scraper_is_told_503_and_why() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = support::config(dir.path());
    let port = metrics_port(&mut config);
    let fake = support::host();
    let d = Running::on(config, &fake).await;
    serving(&d).await;
    let mut talking = Vec::new();
    for _ in 0..32 {
        talking.push(
            tokio::net::TcpStream::connect(("127.0.0.1", port))
                .await
                .unwrap(),
        );
    }
    let deadline = tokio::time::Instant::now() + HANG;
    let body = loop {
        // Each of the 32 has just been answered, so none is quiet enough to make room.
        for s in &mut talking {
            assert_eq!(request(s).await, "HTTP/1.1 200 OK");
        }
        let (status, body) = scrape(port).await;
        if status == "HTTP/1.1 503 Service Unavailable" {
            break body;
        }
        // Let in only because one of the 32 fell quiet for the bound (a machine too busy
        // to answer them in time): that one is closed, and the test starts over with a
        // fresh one.
        assert_eq!(status, "HTTP/1.1 200 OK", "{body}");
        assert!(tokio::time::Instant::now() < deadline, "never refused");
        talking.clear();
        for _ in 0..32 {
            talking.push(
                tokio::net::TcpStream::connect(("127.0.0.1", port))
                    .await
                    .unwrap(),
            );
        }
    };
    assert!(
        body.contains("address 127.0.0.1 holds 32 connections to the metrics endpoint"),
        "{body}"
    );
    drop(talking);
    d.stop().await.unwrap();
}
