//! Connect to placed on its Unix socket, check health, list the containers, stream Watch,
//! resuming after the last sequence received when the stream drops.
//!
//! ```sh
//! cargo run -p placed-proto --example quickstart -- /run/placed/placed.sock
//! ```

use placed_proto::v1 as pb;
use placed_proto::v1::placed_service_client::PlacedServiceClient;
use tonic_health::pb::health_client::HealthClient;
use tonic_health::pb::{HealthCheckRequest, health_check_response::ServingStatus};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let socket = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "/run/placed/placed.sock".into());
    // tonic sends the endpoint's authority ("localhost"); the connector dials the socket.
    let channel = placed_proto::unix::connect(std::path::Path::new(&socket)).await?;

    let health = HealthClient::new(channel.clone())
        .check(HealthCheckRequest {
            service: pb::placed_service_server::SERVICE_NAME.into(),
        })
        .await?
        .into_inner();
    println!("health: {:?}", ServingStatus::try_from(health.status));

    let mut placed = PlacedServiceClient::new(channel);
    let mut page_token = String::new();
    let mut resume = 0;
    loop {
        let page = placed
            .list_containers(pb::ListContainersRequest {
                page_size: 100,
                page_token: page_token.clone(),
                ..Default::default()
            })
            .await?
            .into_inner();
        if page_token.is_empty() {
            // Watching from the first page's sequence misses no change made after it.
            resume = page.event_sequence;
        }
        for c in &page.containers {
            println!("{:20} {:?} {}", c.name, c.state(), c.placement_id);
        }
        if page.next_page_token.is_empty() {
            break;
        }
        page_token = page.next_page_token;
    }

    loop {
        let mut events = placed
            .watch(pb::WatchRequest {
                container: String::new(),
                resume_after_sequence: resume,
                ..Default::default()
            })
            .await?
            .into_inner();
        loop {
            match events.message().await {
                Ok(Some(e)) => {
                    resume = e.sequence;
                    println!(
                        "{} {} {:?} {}",
                        e.sequence,
                        e.container,
                        e.kind(),
                        e.message
                    );
                }
                Ok(None) => return Ok(()),
                // Fell behind, or the daemon restarts: resume after the last one seen.
                Err(s) if matches!(s.code(), tonic::Code::Aborted | tonic::Code::Unavailable) => {
                    eprintln!("watch interrupted ({s}); resuming after {resume}");
                    break;
                }
                // OUT_OF_RANGE: events were lost; list again before watching.
                Err(s) => return Err(s.into()),
            }
        }
    }
}
