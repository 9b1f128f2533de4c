//! 7. Waiting and backoff: a container that cannot be evaluated waits and is tried again
//!    after the resync interval, doubling up to ten times it; once the cause clears, the
//!    next try succeeds.

use std::time::Duration;

use placed::lifecycle::EventKind;
use placed::state::Lifecycle;
use placed_core::policy::Policy;
use tokio::time::Instant;

use crate::scenario::Scenario;

/// Why the evaluation fails until it is fixed.
#[derive(Debug, Clone, Copy)]
enum Cause {
    /// No model for this machine and v: found out at once.
    NoModel,
    /// A pushed metric nobody pushes: the measurement's first window has no data.
    NoSamples,
}

#[tokio::test(start_paused = true)]
async fn a_failing_evaluation_retries_with_backoff_then_recovers() {
    let resync = Duration::from_secs(30);
    for cause in [Cause::NoModel, Cause::NoSamples] {
        let mut s = Scenario::new();
        s.config.containers.resync_interval = resync;
        if matches!(cause, Cause::NoSamples) {
            s = s.with_model(4);
        }
        s.container("c", "", "");
        let mut d = s.start().await;
        d.manage("c", 4, Policy::Model { goal: 0.9 }).await;
        if matches!(cause, Cause::NoModel) {
            d.feed("c", 1000.0);
        }
        let mut at = Vec::new();
        for _ in 0..6 {
            let e = d.next("c", |e| e.kind == EventKind::Error).await;
            assert_eq!(e.state, Lifecycle::Waiting, "{cause:?}: {e:?}");
            at.push(Instant::now());
            assert_eq!(d.record("c").state, Lifecycle::Waiting, "{cause:?}");
        }
        // Each attempt takes as long as the first; the pauses between them double from the
        // resync interval and stop at 8 times it (the next doubling would pass 10).
        let gaps: Vec<Duration> = at.windows(2).map(|w| w[1] - w[0]).collect();
        let attempt = gaps[0] - resync;
        let pauses: Vec<u64> = gaps.iter().map(|g| (*g - attempt).as_secs()).collect();
        assert_eq!(pauses, [30, 60, 120, 240, 240], "{cause:?}: {gaps:?}");
        let last = d.seen("c", EventKind::Error).pop().unwrap();
        match cause {
            Cause::NoModel => assert!(last.message.starts_with("no model for machine class")),
            Cause::NoSamples => assert!(last.message.starts_with("measuring c: "), "{last:?}"),
        }

        // The cause clears; the next retry (within the longest pause) evaluates it.
        let fixed = Instant::now();
        match cause {
            Cause::NoModel => {
                let fingerprint = d.machine.fingerprint().to_owned();
                let m = crate::scenario::model(&d.machine, 4);
                let path = d.model_dir().join(format!("{fingerprint}-v4.json"));
                std::fs::write(path, m.file_text().unwrap()).unwrap();
            }
            Cause::NoSamples => {
                d.feed("c", 1000.0);
            }
        }
        d.next("c", |e| e.kind == EventKind::Predicted).await;
        // Within the longest pause and one evaluation (two 4 s measurements and the moves).
        let took = Instant::now() - fixed;
        assert!(took <= Duration::from_secs(240 + 60), "{cause:?}: {took:?}");
        d.next("c", |e| e.state == Lifecycle::Watched).await;
        assert_eq!(d.seen("c", EventKind::Error).len(), 6, "{cause:?}");
        d.daemon.shutdown().await;
    }
}

#[tokio::test(start_paused = true)]
async fn a_waiting_container_is_tried_again_at_once_when_its_settings_change() {
    let mut s = Scenario::new().with_model(4);
    s.config.containers.resync_interval = Duration::from_secs(30);
    s.container("c", "", "");
    let mut d = s.start().await;
    // No model for 2 vCPUs: it waits, its next try 30 s away.
    d.manage("c", 2, Policy::Model { goal: 0.9 }).await;
    d.feed("c", 1000.0);
    let e = d.next("c", |e| e.kind == EventKind::Error).await;
    assert_eq!(e.state, Lifecycle::Waiting);
    d.until_free("c").await;
    d.idle(Duration::from_secs(1)).await;

    let asked = Instant::now();
    let view = d.manage("c", 4, Policy::Model { goal: 0.9 }).await;
    assert_eq!(view.record.state, Lifecycle::Discovered);
    d.next("c", |e| e.kind == EventKind::Predicted).await;
    // Evaluated right away: two measurements of 4 s, not the 29 s of backoff left first.
    let took = Instant::now() - asked;
    assert!(took < Duration::from_secs(15), "{took:?}");
    assert_eq!(d.seen("c", EventKind::Error).len(), 1);
    d.daemon.shutdown().await;
}
