//! Connecting to a running daemon: over its Unix socket by default, or over TCP with TLS
//! (and a client certificate when the daemon requires one).

use std::path::{Path, PathBuf};

use placed_proto::v1::placed_service_client::PlacedServiceClient;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint, Identity};

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
pub async fn connect(target: &Target) -> Result<PlacedServiceClient<Channel>, ConnectError> {
    let channel = match target {
        Target::Unix(path) => {
            placed_proto::unix::connect(path)
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
    Ok(PlacedServiceClient::new(channel).max_decoding_message_size(64 << 20))
}
