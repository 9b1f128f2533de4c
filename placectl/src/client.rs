//! Connecting to a running daemon: over its Unix socket by default, or over TCP with TLS
//! (and a client certificate when the daemon requires one).

use std::path::{Path, PathBuf};

use hyper_util::rt::TokioIo;
use placed_proto::v1::placed_client::PlacedClient;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint, Identity, Uri};

/// The daemon's default socket (config `grpc.socket`).
pub const DEFAULT_SOCKET: &str = "/run/placed/placed.sock";

/// Where the daemon is.
#[derive(Debug, Clone)]
pub enum Target {
    Unix(PathBuf),
    Tls {
        url: String,
        ca: PathBuf,
        identity: Option<(PathBuf, PathBuf)>,
    },
}

#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error(
        "cannot reach placed at {path} (is it running? `systemctl status placed`, or pass --socket)"
    )]
    Unix {
        path: PathBuf,
        #[source]
        source: tonic::transport::Error,
    },
    #[error("cannot reach placed at {url}")]
    Tcp {
        url: String,
        #[source]
        source: tonic::transport::Error,
    },
    #[error("cannot read {path}")]
    File {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

fn read(path: &Path) -> Result<Vec<u8>, ConnectError> {
    std::fs::read(path).map_err(|source| ConnectError::File {
        path: path.to_owned(),
        source,
    })
}

/// Opens a channel; the connection is made now, so an absent daemon is reported here.
pub async fn connect(target: &Target) -> Result<PlacedClient<Channel>, ConnectError> {
    let channel = match target {
        Target::Unix(path) => {
            let p = path.clone();
            // The URI is a placeholder: the connector ignores it and dials the socket.
            Endpoint::from_static("http://placed.invalid")
                .connect_with_connector(tower::service_fn(move |_: Uri| {
                    let p = p.clone();
                    async move {
                        Ok::<_, std::io::Error>(TokioIo::new(
                            tokio::net::UnixStream::connect(p).await?,
                        ))
                    }
                }))
                .await
                .map_err(|source| ConnectError::Unix {
                    path: path.clone(),
                    source,
                })?
        }
        Target::Tls { url, ca, identity } => {
            let mut tls = ClientTlsConfig::new().ca_certificate(Certificate::from_pem(read(ca)?));
            if let Some((cert, key)) = identity {
                tls = tls.identity(Identity::from_pem(read(cert)?, read(key)?));
            }
            let tcp = |source| ConnectError::Tcp {
                url: url.clone(),
                source,
            };
            Endpoint::from_shared(url.clone())
                .map_err(tcp)?
                .tls_config(tls)
                .map_err(tcp)?
                .connect()
                .await
                .map_err(tcp)?
        }
    };
    Ok(PlacedClient::new(channel).max_decoding_message_size(64 << 20))
}
