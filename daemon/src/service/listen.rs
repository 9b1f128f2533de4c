//! The daemon's listeners: a Unix socket by default (mode and group from the config), and
//! TCP with TLS, optionally requiring client certificates, for remote orchestrators.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use std::sync::Arc;

use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::pem::PemObject as _;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::config::{Config, TlsConfig};

#[derive(Debug, thiserror::Error)]
pub enum ListenError {
    #[error("another placed is already listening on {path}; stop it first")]
    InUse { path: PathBuf },
    #[error(
        "{path} exists and is not a socket; placed removes only a socket a previous placed left there. Choose another grpc.socket, or remove the file yourself"
    )]
    NotASocket { path: PathBuf },
    #[error("cannot listen on {path}")]
    Bind {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot set permissions {mode:o} on {path}")]
    Mode {
        path: PathBuf,
        mode: u32,
        #[source]
        source: std::io::Error,
    },
    #[error("socket group {group:?} does not exist; create it or unset grpc.socket_group")]
    NoGroup { group: String },
    #[error("cannot give {path} to group {group:?}")]
    Chown {
        path: PathBuf,
        group: String,
        #[source]
        source: nix::Error,
    },
    #[error("cannot read TLS file {path}")]
    TlsFile {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("TLS file {path} ({setting}): {problem}")]
    TlsContent {
        path: PathBuf,
        setting: &'static str,
        problem: String,
    },
    #[error("the TLS settings (grpc.tls) cannot be used together: {problem}")]
    Tls { problem: String },
    #[error("cannot listen on {addr}")]
    Tcp {
        addr: std::net::SocketAddr,
        #[source]
        source: std::io::Error,
    },
}

impl ListenError {
    /// Who has to act: a setting that names something missing is the configuration's;
    /// the rest is the host's.
    pub fn fault(&self) -> placed_core::fault::Fault {
        use placed_core::fault::Fault;
        match self {
            Self::NoGroup { .. }
            | Self::TlsFile { .. }
            | Self::TlsContent { .. }
            | Self::Tls { .. }
            | Self::NotASocket { .. } => Fault::InvalidInput,
            Self::InUse { .. }
            | Self::Bind { .. }
            | Self::Mode { .. }
            | Self::Chown { .. }
            | Self::Tcp { .. } => Fault::HostConfig,
        }
    }
}

/// Binds the Unix socket. A socket file left by a daemon that died is removed; one that
/// still answers belongs to a running daemon, which is an error; anything else at the path
/// (a state file named by mistake) is refused and left alone.
pub async fn bind_unix(config: &Config) -> Result<tokio::net::UnixListener, ListenError> {
    use std::os::unix::fs::FileTypeExt as _;
    let path = &config.grpc.socket;
    match std::fs::symlink_metadata(path) {
        Ok(meta) if !meta.file_type().is_socket() => {
            return Err(ListenError::NotASocket { path: path.clone() });
        }
        Ok(_) => match tokio::net::UnixStream::connect(path).await {
            Ok(_) => return Err(ListenError::InUse { path: path.clone() }),
            Err(_) => {
                let _ = std::fs::remove_file(path);
            }
        },
        Err(_) => {}
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|source| ListenError::Bind {
            path: path.clone(),
            source,
        })?;
    }
    let listener = tokio::net::UnixListener::bind(path).map_err(|source| ListenError::Bind {
        path: path.clone(),
        source,
    })?;
    let mode = config.socket_mode();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).map_err(|source| {
        ListenError::Mode {
            path: path.clone(),
            mode,
            source,
        }
    })?;
    if let Some(group) = &config.grpc.socket_group {
        let gid = nix::unistd::Group::from_name(group)
            .ok()
            .flatten()
            .ok_or_else(|| ListenError::NoGroup {
                group: group.clone(),
            })?
            .gid;
        nix::unistd::chown(path.as_path(), None, Some(gid)).map_err(|source| {
            ListenError::Chown {
                path: path.clone(),
                group: group.clone(),
                source,
            }
        })?;
    }
    Ok(listener)
}

fn read(path: &Path) -> Result<Vec<u8>, ListenError> {
    std::fs::read(path).map_err(|source| ListenError::TlsFile {
        path: path.to_owned(),
        source,
    })
}

/// The certificates of a PEM file, at least one.
fn certificates(
    path: &Path,
    setting: &'static str,
) -> Result<Vec<CertificateDer<'static>>, ListenError> {
    let problem = |problem: String| ListenError::TlsContent {
        path: path.to_owned(),
        setting,
        problem,
    };
    let certs = CertificateDer::pem_slice_iter(&read(path)?)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| problem(format!("not a PEM certificate file: {e}")))?;
    if certs.is_empty() {
        return Err(problem("holds no certificate".into()));
    }
    Ok(certs)
}

/// The server's TLS configuration: its identity, and the CA clients must be signed by when
/// client certificates are required. HTTP/2 only (ALPN `h2`), ring as the crypto provider.
/// The daemon does its TLS handshakes itself ([`super::accept`]), so that it knows when
/// one is done and who finished it.
pub fn server_tls(tls: &TlsConfig) -> Result<Arc<rustls::ServerConfig>, ListenError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let chain = certificates(&tls.cert, "grpc.tls.cert")?;
    let key =
        PrivateKeyDer::from_pem_slice(&read(&tls.key)?).map_err(|e| ListenError::TlsContent {
            path: tls.key.clone(),
            setting: "grpc.tls.key",
            problem: format!("no PEM private key: {e}"),
        })?;
    let mismatch = |e: rustls::Error| ListenError::Tls {
        problem: e.to_string(),
    };
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(mismatch)?;
    let builder = match &tls.client_ca {
        None => builder.with_no_client_auth(),
        Some(ca) => {
            let mut roots = rustls::RootCertStore::empty();
            for cert in certificates(ca, "grpc.tls.client_ca")? {
                roots.add(cert).map_err(|e| ListenError::TlsContent {
                    path: ca.clone(),
                    setting: "grpc.tls.client_ca",
                    problem: format!("not a usable CA certificate: {e}"),
                })?;
            }
            let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
                Arc::new(roots),
                provider,
            )
            .build()
            .map_err(|e| ListenError::TlsContent {
                path: ca.clone(),
                setting: "grpc.tls.client_ca",
                problem: e.to_string(),
            })?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let mut config = builder.with_single_cert(chain, key).map_err(mismatch)?;
    config.alpn_protocols = vec![b"h2".to_vec()];
    Ok(Arc::new(config))
}

/// Binds the TCP listener, when the configuration asks for one.
pub async fn bind_tcp(config: &Config) -> Result<Option<super::TcpListening>, ListenError> {
    let (Some(addr), Some(tls)) = (&config.grpc.tcp, &config.grpc.tls) else {
        return Ok(None);
    };
    let tls_config = server_tls(tls)?;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| ListenError::Tcp {
            addr: *addr,
            source,
        })?;
    let client_certificates = tls.client_ca.is_some();
    if !client_certificates {
        // Without client certificates nobody on the network is known: read-only.
        tracing::warn!(%addr, "the TCP listener has no client authentication (grpc.tls.client_ca unset): it serves only calls that change nothing");
    }
    Ok(Some(super::TcpListening {
        listener,
        tls: tls_config,
        client_certificates,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(socket: &Path) -> Config {
        let mut c = Config::default();
        c.grpc.socket = socket.to_owned();
        c.grpc.socket_group = None;
        c
    }

    #[tokio::test]
    async fn a_regular_file_at_the_socket_path_is_refused_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.json");
        std::fs::write(&path, "precious").unwrap();
        let err = bind_unix(&config(&path)).await.unwrap_err();
        assert!(matches!(err, ListenError::NotASocket { .. }), "{err}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "precious");
        let link = dir.path().join("link.sock");
        std::os::unix::fs::symlink(&path, &link).unwrap();
        assert!(matches!(
            bind_unix(&config(&link)).await,
            Err(ListenError::NotASocket { .. })
        ));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "precious");
    }

    #[tokio::test]
    async fn a_dead_daemons_socket_is_replaced_and_a_live_one_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("placed.sock");
        drop(std::os::unix::net::UnixListener::bind(&path).unwrap());
        let live = bind_unix(&config(&path)).await.unwrap();
        assert!(matches!(
            bind_unix(&config(&path)).await,
            Err(ListenError::InUse { .. })
        ));
        drop(live);
    }
}
