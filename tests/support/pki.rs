//! Certificates for tests of the daemon's TLS listener: a CA, a server certificate for
//! 127.0.0.1 and a client certificate it signed, and a stranger's CA with a client
//! certificate of its own; written as PEM files into a directory.

// Each test binary uses a different subset.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};

/// PEM files in a test's directory.
#[derive(Debug, Clone)]
pub struct Pki {
    pub ca: PathBuf,
    pub server_cert: PathBuf,
    pub server_key: PathBuf,
    pub client_cert: PathBuf,
    pub client_key: PathBuf,
    pub other_ca: PathBuf,
    /// A client certificate signed by the other CA, and its key.
    pub stranger_cert: PathBuf,
    pub stranger_key: PathBuf,
}

/// A self-signed CA named `name`.
pub fn ca(name: &str) -> (rcgen::Certificate, KeyPair) {
    let key = KeyPair::generate().expect("key");
    let mut params = CertificateParams::new(Vec::<String>::new()).expect("params");
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, name);
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    (params.self_signed(&key).expect("self-signed CA"), key)
}

/// A certificate for `names` signed by `ca`, and its key, as PEM.
pub fn leaf(names: &[&str], ca: &rcgen::Certificate, ca_key: &KeyPair) -> (String, String) {
    let key = KeyPair::generate().expect("key");
    let params = CertificateParams::new(names.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>())
        .expect("params");
    let cert = params.signed_by(&key, ca, ca_key).expect("signed");
    (cert.pem(), key.serialize_pem())
}

/// Writes a fresh set into `dir`.
pub fn pki(dir: &Path) -> Pki {
    let (ca_cert, ca_key) = ca("placed test CA");
    let (other, other_key) = ca("someone else's CA");
    let (stranger_cert, stranger_key) = leaf(&["stranger"], &other, &other_key);
    let (server_cert, server_key) = leaf(&["127.0.0.1", "localhost"], &ca_cert, &ca_key);
    let (client_cert, client_key) = leaf(&["orchestrator"], &ca_cert, &ca_key);
    let write = |name: &str, body: &str| {
        let p = dir.join(name);
        std::fs::write(&p, body).expect("write PEM");
        p
    };
    Pki {
        ca: write("ca.pem", &ca_cert.pem()),
        server_cert: write("server.pem", &server_cert),
        server_key: write("server.key", &server_key),
        client_cert: write("client.pem", &client_cert),
        client_key: write("client.key", &client_key),
        other_ca: write("other-ca.pem", &other.pem()),
        stranger_cert: write("stranger.pem", &stranger_cert),
        stranger_key: write("stranger.key", &stranger_key),
    }
}
