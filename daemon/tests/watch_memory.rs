//! `Watch` streams opened and closed by the thousand leave nothing behind: the live heap,
//! every allocation counted, is the same after the tenth cycle as after the fifth. In-process
//! on a fake host, over the real Unix socket.
//!
//! 2,000 streams opened and closed ten times took the daemon's resident memory from 15.5
//! to 43.5 MB. Counting allocations showed the cause is not a leak: the heap comes back to
//! its size after every cycle, and what stayed resident was memory freed into glibc's malloc
//! and kept there (service/reclaim.rs). The real daemon's resident memory across such
//! cycles is tested end to end (tests/e2e/memory.rs).

#![allow(clippy::unwrap_used, reason = "test fixture")]

mod support;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use placed::service::{self, Limits};
use placed::telemetry::Metrics;
use placed_proto::v1 as pb;
use placed_proto::v1::placed_service_client::PlacedServiceClient;
use tokio_util::sync::CancellationToken;

/// The system allocator, counting the bytes allocated and not yet freed.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is forwarded to the system allocator unchanged; the counter only
// observes sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        // SAFETY: the caller keeps GlobalAlloc::alloc's contract, which System needs too.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: as above, for dealloc.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(new_size, Ordering::Relaxed);
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: as above, for realloc.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const STREAMS: usize = 2000;
const PER_CONNECTION: usize = 100;
const CYCLES: usize = 10;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_streams_opened_and_closed_by_the_thousand_leave_the_heap_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let config = support::config(dir.path());
    let unix = service::listen::bind_unix(&config).await.unwrap();
    let metrics = Arc::new(Metrics::default());
    let stop = CancellationToken::new();
    let mut limits = Limits::of(&config.grpc);
    limits.max_watchers = 2048;
    let (serving, servers) = service::serve(
        service::Listening { unix, tcp: None },
        limits,
        &metrics,
        stop.clone(),
    )
    .await
    .unwrap();
    let fake = support::host();
    let daemon = placed::lifecycle::Daemon::start(
        config.clone(),
        support::environment(&fake),
        metrics.clone(),
    )
    .await
    .unwrap();
    serving.ready(daemon.clone()).await;

    let mut live = Vec::new();
    for _ in 0..CYCLES {
        let mut clients = Vec::new();
        let mut open = Vec::new();
        for i in 0..STREAMS {
            if i % PER_CONNECTION == 0 {
                clients.push(PlacedServiceClient::new(
                    support::unix_channel(&config.grpc.socket).await,
                ));
            }
            let c = clients.last_mut().unwrap();
            let stream = c.watch(pb::WatchRequest::default()).await.unwrap();
            open.push(stream.into_inner());
        }
        let all = i64::try_from(STREAMS).unwrap();
        support::until("every stream open", || metrics.watchers.get() == all).await;
        drop(open);
        drop(clients);
        support::until("every stream closed", || metrics.watchers.get() == 0).await;
        // The connections' own memory goes when the server sees them close, after the
        // streams: the heap is measured once it stops shrinking for a while.
        live.push(settled().await);
    }
    let kib = |b: usize| b / 1024;
    eprintln!(
        "live heap after each cycle of {STREAMS} streams (KiB): {:?}",
        live.iter().map(|b| kib(*b)).collect::<Vec<_>>()
    );
    // No growth from the fifth cycle to the tenth beyond a page of bookkeeping per cycle.
    assert!(
        live[CYCLES - 1] <= live[4] + 5 * 4096,
        "the heap grows with each cycle: {} KiB after cycle 5, {} KiB after cycle {CYCLES}",
        kib(live[4]),
        kib(live[CYCLES - 1])
    );
    stop.cancel();
    daemon.shutdown().await;
    servers.wait().await.unwrap();
}

/// The live heap once it has not shrunk over 50 polls of 10 ms in a row (the server closing
/// connections the client side has dropped); bounded by [`support::HANG`].
async fn settled() -> usize {
    let deadline = tokio::time::Instant::now() + support::HANG;
    let mut low = LIVE.load(Ordering::Relaxed);
    let mut steady = 0;
    while steady < 50 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the heap never settled"
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        let now = LIVE.load(Ordering::Relaxed);
        if now < low {
            low = now;
            steady = 0;
        } else {
            steady += 1;
        }
    }
    low
}
