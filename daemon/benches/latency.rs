//! `GetStatus` latency over TCP with TLS against the Unix socket, in-process on a fake host
//! (no root): `cargo bench -p placed --bench latency [-- --calls N]`.
//!
//! GetStatus over TLS took about 45 ms and every other call 0.1 ms: Nagle's algorithm on
//! the accepted socket held the answer's last small write until the client's delayed ACK.
//! The accepted socket now has TCP_NODELAY (service/accept.rs, with a deterministic test
//! of the option); this prints each transport's median and the ratio of the medians.
//! A benchmark, not a test: the figures depend on the machine, and on this project's
//! shared 2-core VM they say only how the two transports compare.

#[path = "../tests/support/mod.rs"]
mod support;

use std::time::{Duration, Instant};

use placed_proto::v1 as pb;
use placed_proto::v1::placed_service_client::PlacedServiceClient;

fn calls() -> usize {
    let a: Vec<String> = std::env::args().collect();
    a.iter()
        .position(|x| x == "--calls")
        .and_then(|i| a.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000)
}

/// The median of `n` sequential GetStatus calls on `channel`, after a warm-up.
async fn median(channel: tonic::transport::Channel, n: usize) -> Duration {
    let mut client = PlacedServiceClient::new(channel);
    for _ in 0..50 {
        client
            .get_status(pb::GetStatusRequest {})
            .await
            .expect("GetStatus");
    }
    let mut took = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        client
            .get_status(pb::GetStatusRequest {})
            .await
            .expect("GetStatus");
        took.push(t.elapsed());
    }
    took.sort_unstable();
    took[n / 2]
}

fn main() {
    let n = calls();
    let rt = tokio::runtime::Runtime::new().expect("a runtime");
    rt.block_on(async {
        let dir = tempfile::tempdir().expect("a directory");
        let p = support::pki::pki(dir.path());
        let mut config = support::config(dir.path());
        support::with_tls(&mut config, &p, true);
        let addr = config.grpc.tcp.expect("a TCP address");
        let fake = support::host();
        let d = support::Running::on(config, &fake).await;
        let mut c = d.client().await;
        support::until_async("the daemon serves", || {
            let mut c = c.clone();
            async move { c.get_status(pb::GetStatusRequest {}).await.is_ok() }
        })
        .await;
        drop(c.get_status(pb::GetStatusRequest {}).await);
        let unix = median(d.channel().await, n).await;
        let tls = median(
            support::tls_channel(addr, &p, true)
                .await
                .expect("a TLS channel"),
            n,
        )
        .await;
        println!("GetStatus, {n} sequential calls each, median:");
        println!("  Unix socket   {unix:?}");
        println!("  TCP with TLS  {tls:?}");
        println!(
            "  ratio TLS / Unix  {:.2}",
            tls.as_secs_f64() / unix.as_secs_f64().max(1e-9)
        );
        d.stop().await.expect("a clean stop");
    });
}
