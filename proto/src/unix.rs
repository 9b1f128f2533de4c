//! A channel to the daemon's Unix socket, for placectl, the tests and Rust orchestrators.
//!
//! tonic dials the socket through a connector; the endpoint URI only supplies the
//! `:authority` every request carries. It is `localhost`, what grpc-go and recent gRPC
//! C-core send on Unix sockets, and a name the daemon's HTTP/2 layer accepts (a socket
//! path is not a valid authority: see docs/api.md).

use std::path::{Path, PathBuf};

use hyper_util::rt::TokioIo;
use tonic::transport::{Channel, Endpoint, Uri};

/// The authority requests on the Unix socket carry.
pub const AUTHORITY: &str = "localhost";

/// Connects now, so that an absent daemon is reported here rather than on the first call.
pub async fn connect(path: &Path) -> Result<Channel, tonic::transport::Error> {
    let path: PathBuf = path.to_owned();
    Endpoint::from_static("http://localhost")
        .connect_with_connector(tower::service_fn(move |_: Uri| {
            let path = path.clone();
            async move {
                Ok::<_, std::io::Error>(TokioIo::new(tokio::net::UnixStream::connect(path).await?))
            }
        }))
        .await
}
