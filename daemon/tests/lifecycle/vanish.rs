//! 6. Containers that vanish: removed mid-evaluation or while watched, a container is
//!    forgotten (one event, out of the registry and the state file) without an error, and
//!    nothing recreates or writes its cgroup.

use std::time::Duration;

use placed::lifecycle::EventKind;
use placed::state::Lifecycle;
use placed_core::policy::Policy;

use crate::scenario::{PARENT, Scenario, cg};

/// The state in which the cgroup disappears, and whether the step under way was about to
/// move the container (and so fails on the vanished cgroup, counted as a failed move).
const WHEN: &[(Lifecycle, bool)] = &[
    (Lifecycle::Baseline, true),
    (Lifecycle::Probe, true),
    (Lifecycle::Migrating, true),
    (Lifecycle::Watched, false),
];

#[tokio::test(start_paused = true)]
async fn a_vanished_container_is_forgotten_without_an_error_storm() {
    for &(when, moving) in WHEN {
        let s = Scenario::new().with_model(4);
        s.container("c", "", "");
        s.container("other", "", "");
        let mut d = s.start().await;
        d.manage("c", 4, Policy::Model { goal: 0.9 }).await;
        d.manage("other", 2, Policy::Observe).await;
        d.feed("c", 1000.0);
        d.next("c", |e| e.kind == EventKind::State && e.state == when)
            .await;
        let enact_errors = d.errors("enact");
        let writes = d.kernel.writes().len();

        d.kernel.remove_cgroup(&cg("c"));
        let vanished = d.next("c", |e| e.kind == EventKind::Vanished).await;
        assert!(
            vanished.message.ends_with("vanished; forgotten"),
            "{vanished:?}"
        );
        d.idle(Duration::from_secs(900)).await;

        let what = format!("removed while {when:?}");
        assert_eq!(d.seen("c", EventKind::Error), [], "{what}");
        assert_eq!(d.seen("c", EventKind::Vanished).len(), 1, "{what}");
        assert_eq!(d.errors("lifecycle"), 0, "{what}");
        // At most the move under way failed; nothing was tried after it, nothing made the
        // cgroup again or wrote into it.
        let failed_moves = d.errors("enact") - enact_errors;
        assert!(
            failed_moves <= u64::from(moving),
            "{what}: {failed_moves} failed moves"
        );
        let dir = d
            .kernel
            .cpuset_root()
            .join(PARENT.trim_start_matches('/'))
            .join("c");
        assert!(!dir.exists(), "{what}: its cgroup was recreated");
        let later = &d.kernel.writes()[writes..];
        assert!(
            later
                .iter()
                .all(|(path, _)| !path.trim_start_matches('/').starts_with("ctr/c/")),
            "{what}: {later:?}"
        );
        // Forgotten in memory and on disk; the other container is untouched.
        assert!(d.daemon.container(&cg("c")).is_err(), "{what}");
        assert_eq!(d.on_disk("c"), None, "{what}");
        assert_eq!(d.record("other").state, Lifecycle::Watched, "{what}");
        assert!(d.on_disk("other").is_some(), "{what}");
        d.daemon.shutdown().await;
    }
}
