//! The daemon over TCP with TLS and client certificates, for remote orchestrators; and
//! what a bad certificate or a client without one gets.

use placed_core::exit::Exit;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::time::Duration;

use rcgen::{CertificateParams, KeyPair};

use crate::daemon_util::{Setup, TestDaemon, free_port};
use crate::pki::{ca, leaf, pki};

#[test]
fn tls_with_client_certificates() {
    let dir = tempfile::tempdir().unwrap();
    let p = pki(dir.path());
    let port = free_port();
    let d = TestDaemon::start(
        dir.path(),
        &Setup {
            extra: format!(
                "[grpc.tls]\ncert = \"{}\"\nkey = \"{}\"\nclient_ca = \"{}\"\n",
                p.server_cert.display(),
                p.server_key.display(),
                p.ca.display()
            ),
            grpc_tcp: Some(format!("127.0.0.1:{port}")),
            ..Setup::default()
        },
    );
    let url = format!("https://127.0.0.1:{port}");
    let s = |v: &PathBuf| v.display().to_string();
    // With a client certificate the CA signed: served.
    let run = d
        .placectl([
            "status",
            "--addr",
            &url,
            "--ca",
            &s(&p.ca),
            "--cert",
            &s(&p.client_cert),
            "--key",
            &s(&p.client_key),
        ])
        .ok();
    assert!(run.stdout.contains("Class"), "{run:?}");

    // Clients that speak plaintext, send garbage, or connect and say nothing cost the
    // daemon nothing: it goes on serving those that speak TLS.
    let tcp = format!("127.0.0.1:{port}");
    let mut plain = TcpStream::connect(&tcp).expect("connect");
    plain
        .write_all(b"POST /placed.v1.Placed/GetStatus HTTP/1.1\r\nHost: x\r\n\r\n")
        .expect("send plaintext");
    // Whatever the server makes of it (an alert, or closing), it answers rather than hang
    // (the limit only bounds a hang, with room for a loaded machine).
    plain
        .set_read_timeout(Some(Duration::from_secs(120)))
        .expect("timeout");
    let mut buf = [0u8; 512];
    match plain.read(&mut buf) {
        Ok(_) => {}
        Err(e) => assert!(
            e.kind() != std::io::ErrorKind::WouldBlock && e.kind() != std::io::ErrorKind::TimedOut,
            "no answer to plaintext within 10 s"
        ),
    }
    drop(plain);
    let mut junk = TcpStream::connect(&tcp).expect("connect");
    // A TLS record header announcing a huge handshake, then noise.
    let _ = junk.write_all(&[0x16, 0x03, 0x01, 0xff, 0xff, 0x00, 0x13, 0x37, 0xde, 0xad]);
    drop(junk);
    let silent = TcpStream::connect(&tcp).expect("connect");
    let args: Vec<String> = [
        "status",
        "--socket",
        &d.socket.display().to_string(),
        "--addr",
        &url,
        "--ca",
        &s(&p.ca),
        "--cert",
        &s(&p.client_cert),
        "--key",
        &s(&p.client_key),
    ]
    .iter()
    .map(|a| (*a).to_owned())
    .collect();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(crate::util::placectl(args));
    });
    let run = rx
        .recv_timeout(Duration::from_secs(120))
        .expect("the daemon stopped serving TLS clients while a silent connection was open");
    let run = run.ok();
    assert!(run.stdout.contains("Class"), "{run:?}");
    drop(silent);

    // Refused by the server: under TLS 1.3 the refusal reaches the client after its side of
    // the handshake, as an alert (exit 4, the case named with what to do) or as the server
    // closing the connection (exit 5: read as a closed stream or a broken pipe), whichever
    // the client meets first; both are one line.
    let refused_or_closed = |run: &crate::util::Run, named: &str, closed_says: &str| {
        let refused =
            run.code == Some(i32::from(Exit::Refused.code())) && run.stderr.contains(named);
        let closed = run.code == Some(i32::from(Exit::Unavailable.code()))
            && run.stderr.contains(closed_says);
        assert!(refused || closed, "{run:?}");
        assert!(run.stderr.starts_with("placectl: error:"), "{run:?}");
        assert_eq!(run.stderr.lines().count(), 1, "{run:?}");
        assert!(!run.stderr.contains("operation was canceled"), "{run:?}");
    };
    // Without a client certificate.
    let run = d.placectl(["status", "--addr", &url, "--ca", &s(&p.ca)]);
    refused_or_closed(
        &run,
        "requires a client certificate (grpc.tls.client_ca): pass --cert and --key",
        "if it requires client certificates (grpc.tls.client_ca), pass --cert and --key",
    );
    // With one from another CA.
    let run = d.placectl([
        "status",
        "--addr",
        &url,
        "--ca",
        &s(&p.ca),
        "--cert",
        &s(&p.stranger_cert),
        "--key",
        &s(&p.stranger_key),
    ]);
    refused_or_closed(
        &run,
        "refused the client certificate",
        "if it refused the client certificate, --cert must be signed by the CA",
    );
    // A server this client does not trust: refused by the client, always while connecting.
    let run = d.placectl([
        "status",
        "--addr",
        &url,
        "--ca",
        &s(&p.other_ca),
        "--cert",
        &s(&p.client_cert),
        "--key",
        &s(&p.client_key),
    ]);
    let run = run.fails_with(
        Exit::Refused,
        "the daemon's certificate is not signed by the CA given with --ca",
    );
    assert_eq!(run.stderr.lines().count(), 1, "{run:?}");
}

/// A TLS server for the client-side cases, with `cert`/`key` as its identity: what
/// placectl says is decided before any gRPC call, so a server with only health will do.
fn tls_server(cert: &str, key: &str) -> (tokio::runtime::Runtime, u16) {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .expect("bind");
    let port = listener.local_addr().expect("address").port();
    let tls = tonic::transport::ServerTlsConfig::new()
        .identity(tonic::transport::Identity::from_pem(cert, key));
    let (_, health) = tonic_health::server::health_reporter();
    let mut builder = tonic::transport::Server::builder()
        .tls_config(tls)
        .expect("TLS config");
    let router = builder.add_service(health);
    rt.spawn(router.serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener)));
    (rt, port)
}

/// Each failure placectl meets only on the client's side, named in one line with what to
/// change: a certificate for another host name, an expired one, a server without TLS.
#[test]
fn tls_failures_are_named_with_what_to_change() {
    let dir = tempfile::tempdir().unwrap();
    let (ca_cert, ca_key) = ca("placed test CA");
    let ca_path = dir.path().join("ca.pem");
    std::fs::write(&ca_path, ca_cert.pem()).unwrap();
    let ca_arg = ca_path.display().to_string();
    let status = |url: &str| crate::util::placectl(["status", "--addr", url, "--ca", &ca_arg]);

    // Issued for "placed.example" only, dialled as 127.0.0.1.
    let (cert, key) = leaf(&["placed.example"], &ca_cert, &ca_key);
    let (_rt, port) = tls_server(&cert, &key);
    status(&format!("https://127.0.0.1:{port}"))
        .fails_with(Exit::Refused, "not valid for the host name in --addr");

    // Expired a year after 2000.
    let key_pair = KeyPair::generate().expect("key");
    let mut params = CertificateParams::new(vec!["127.0.0.1".to_owned()]).expect("params");
    params.not_before = rcgen::date_time_ymd(2000, 1, 1);
    params.not_after = rcgen::date_time_ymd(2001, 1, 1);
    let expired = params
        .signed_by(&key_pair, &ca_cert, &ca_key)
        .expect("signed");
    let (_rt2, port) = tls_server(&expired.pem(), &key_pair.serialize_pem());
    status(&format!("https://127.0.0.1:{port}"))
        .fails_with(Exit::Refused, "the daemon's certificate has expired");

    // A plaintext server: it answers the TLS hello with HTTP.
    let plain = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = plain.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for conn in plain.incoming().take(4) {
            let Ok(mut conn) = conn else { continue };
            let mut buf = [0u8; 1024];
            let _ = conn.read(&mut buf);
            let _ = conn.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
        }
    });
    let run = status(&format!("https://127.0.0.1:{port}"))
        .fails_with(Exit::Refused, "does not speak TLS");
    assert_eq!(run.stderr.lines().count(), 1, "{run:?}");
}

#[test]
fn malformed_tls_files_stop_the_daemon_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let garbage = dir.path().join("garbage.pem");
    std::fs::write(&garbage, "-----BEGIN CERTIFICATE-----\nnot base64 at all\n").unwrap();
    let config = dir.path().join("placed.toml");
    std::fs::write(
        &config,
        format!(
            "[daemon]\nstate_file = \"{d}/state.json\"\n[grpc]\nsocket = \"{d}/s.sock\"\ntcp = \"127.0.0.1:{port}\"\n[grpc.tls]\ncert = \"{g}\"\nkey = \"{g}\"\n[metrics]\nenabled = false\n",
            d = dir.path().display(),
            port = free_port(),
            g = garbage.display()
        ),
    )
    .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_placed"))
        .arg("--config")
        .arg(&config)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("placed: error:"), "{err}");
    assert!(
        err.to_lowercase().contains("tls") || err.contains("certificate"),
        "{err}"
    );
    // And TCP without TLS is refused by the config check.
    std::fs::write(
        &config,
        format!(
            "[grpc]\nsocket = \"{d}/s.sock\"\ntcp = \"127.0.0.1:1\"\n",
            d = dir.path().display()
        ),
    )
    .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_placed"))
        .arg("--config")
        .arg(&config)
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("needs grpc.tls"));
}

/// TCP with TLS but no client certificates: nobody on the network is known, so the listener
/// answers the calls that change nothing and refuses the others with PERMISSION_DENIED,
/// naming the setting; the Unix socket still serves them all. (Every method of the API,
/// read from its descriptor, is checked in-process: daemon/tests/access.rs.)
#[test]
fn tcp_without_client_certificates_is_read_only() {
    let dir = tempfile::tempdir().unwrap();
    let p = pki(dir.path());
    let port = free_port();
    let d = TestDaemon::start(
        dir.path(),
        &Setup {
            extra: format!(
                "[grpc.tls]\ncert = \"{}\"\nkey = \"{}\"\n",
                p.server_cert.display(),
                p.server_key.display(),
            ),
            grpc_tcp: Some(format!("127.0.0.1:{port}")),
            ..Setup::default()
        },
    );
    let url = format!("https://127.0.0.1:{port}");
    let ca = p.ca.display().to_string();
    let remote = |args: &[&str]| {
        let mut all: Vec<&str> = args.to_vec();
        all.extend(["--addr", &url, "--ca", &ca]);
        d.placectl(all)
    };
    let run = remote(&["status"]).ok();
    assert!(run.stdout.contains("Class"), "{run:?}");
    remote(&["containers"]).ok();
    for (call, args) in [
        ("Manage", vec!["manage", "/nonexistent", "--vcpus", "1"]),
        ("Place", vec!["place", "/nonexistent", "--placement", "x"]),
        ("Predict", vec!["predict", "/nonexistent"]),
        ("Unmanage", vec!["unmanage", "/nonexistent"]),
        ("ReportMetric", vec!["report", "/nonexistent", "1"]),
    ] {
        let run = remote(&args).fails_with(Exit::Refused, "grpc.tls.client_ca is unset");
        assert!(
            run.stderr
                .contains(&format!("{call} is not a read-only call")),
            "{run:?}"
        );
        assert!(run.stderr.contains("PermissionDenied"), "{run:?}");
    }
    // The same call over the Unix socket reaches the daemon (and finds no such container).
    d.placectl(["manage", "/nonexistent", "--vcpus", "1"])
        .fails_with(Exit::NotFound, "nonexistent");
    assert!(
        d.log().contains("no client authentication"),
        "the start-up warning is missing"
    );
}
