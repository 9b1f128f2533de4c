use super::*;

#[path = "../../../../tests/support/pki.rs"]
mod pki;

use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::pem::PemObject as _;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};

fn limits() -> ConnectionLimits {
    ConnectionLimits {
        unix: 8,
        per_peer: 4,
        handshake: Duration::from_secs(5),
    }
}

/// The server's side: the test PKI's server certificate, client certificates required.
fn acceptor(p: &pki::Pki) -> tokio_rustls::TlsAcceptor {
    let tls = crate::service::listen::server_tls(&crate::config::TlsConfig {
        cert: p.server_cert.clone(),
        key: p.server_key.clone(),
        client_ca: Some(p.ca.clone()),
    })
    .unwrap();
    tokio_rustls::TlsAcceptor::from(tls)
}

/// A client that trusts the test CA, with the test client certificate.
fn client(p: &pki::Pki) -> tokio_rustls::TlsConnector {
    let mut roots = rustls::RootCertStore::empty();
    for c in CertificateDer::pem_file_iter(&p.ca).unwrap() {
        roots.add(c.unwrap()).unwrap();
    }
    let chain = CertificateDer::pem_file_iter(&p.client_cert)
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    let key = PrivateKeyDer::from_pem_file(&p.client_key).unwrap();
    let mut config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_client_auth_cert(chain, key)
    .unwrap();
    config.alpn_protocols = vec![b"h2".to_vec()];
    tokio_rustls::TlsConnector::from(Arc::new(config))
}

/// `GetStatus` over TLS took about 45 ms and every other call 0.1 ms: the accepted socket
/// had Nagle's algorithm on, and a small answer waited for the client's delayed ACK.
/// The connection the server is handed now has TCP_NODELAY, read back with getsockopt.
#[tokio::test]
async fn the_accepted_tcp_socket_has_tcp_nodelay() {
    let dir = tempfile::tempdir().unwrap();
    let p = pki::pki(dir.path());
    let tls = acceptor(&p);
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let stop = CancellationToken::new();
    let mut admitted = tcp(listener, tls, true, limits(), stop.clone());
    let stream = TcpStream::connect(addr).await.unwrap();
    let name = ServerName::try_from("127.0.0.1").unwrap();
    let _client = client(&p).connect(name, stream).await.unwrap();
    let conn = admitted.recv().await.unwrap();
    let (socket, _) = conn.get_ref().get_ref();
    // SAFETY: getsockopt writes at most `len` bytes into `value`, which we own.
    let (value, rc) = unsafe {
        use std::os::fd::AsRawFd as _;
        let mut value: libc::c_int = 0;
        let mut len = libc::socklen_t::try_from(std::mem::size_of::<libc::c_int>()).unwrap();
        let rc = libc::getsockopt(
            socket.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_NODELAY,
            (&raw mut value).cast(),
            &raw mut len,
        );
        (value, rc)
    };
    assert_eq!(rc, 0, "{}", std::io::Error::last_os_error());
    assert_ne!(value, 0, "TCP_NODELAY is off on the accepted socket");
    stop.cancel();
}

/// A client that connects and never finishes its handshake holds its place only for the
/// handshake bound, and never one of the established connections'.
#[tokio::test(start_paused = true)]
async fn a_handshake_never_finished_is_closed_after_the_bound() {
    use tokio::io::AsyncReadExt as _;
    let dir = tempfile::tempdir().unwrap();
    let p = pki::pki(dir.path());
    let tls = acceptor(&p);
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let stop = CancellationToken::new();
    let _admitted = tcp(listener, tls, true, limits(), stop.clone());
    let mut silent = TcpStream::connect(addr).await.unwrap();
    let started = tokio::time::Instant::now();
    // The server closes it: end of stream, or a reset.
    let _ = silent.read(&mut [0u8; 16]).await;
    assert_eq!(started.elapsed(), limits().handshake);
    stop.cancel();
}
