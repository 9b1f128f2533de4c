//! 6. Containers that vanish: removed while measured, watched or waiting, a container is
//!    forgotten (one event, out of the registry and the state file) without an error, and
//!    nothing recreates, moves or writes its cgroup.
//!
//! Each case removes the cgroup while the container's task waits on the paused clock (a
//! measurement's warm-up, a watch interval, a backoff): a removal between the writes of
//! a move would race the move's blocking thread, which the fake host cannot hold.

use std::time::Duration;

use placed::lifecycle::{Event, EventKind};
use placed::state::Lifecycle;
use placed_core::policy::Policy;

use crate::scenario::{PARENT, Scenario, cg};

fn measuring_in(state: Lifecycle) -> impl Fn(&Event) -> bool {
    move |e| e.kind == EventKind::MigrationFinished && e.state == state
}

struct Case {
    name: &'static str,
    /// vCPUs to manage it with (no model for 2: it waits).
    vcpus: usize,
    /// The event after which the cgroup goes.
    after: fn(&Event) -> bool,
    /// Whether to wait for the step to end first (else it goes mid-evaluation).
    step_done: bool,
}

const CASES: &[Case] = &[
    Case {
        name: "measured in baseline",
        vcpus: 4,
        after: |e| measuring_in(Lifecycle::Baseline)(e),
        step_done: false,
    },
    Case {
        name: "measured in probe",
        vcpus: 4,
        after: |e| measuring_in(Lifecycle::Probe)(e),
        step_done: false,
    },
    Case {
        name: "watched",
        vcpus: 4,
        after: |e| e.state == Lifecycle::Watched,
        step_done: true,
    },
    Case {
        name: "waiting",
        vcpus: 2,
        after: |e| e.kind == EventKind::Error && e.state == Lifecycle::Waiting,
        step_done: true,
    },
];

#[tokio::test(start_paused = true)]
async fn a_vanished_container_is_forgotten_without_an_error_storm() {
    for case in CASES {
        let what = case.name;
        let s = Scenario::new().with_model(4);
        s.container("c", "", "");
        s.container("other", "", "");
        let mut d = s.start().await;
        d.manage("c", case.vcpus, Policy::Model { goal: 0.9 }).await;
        d.manage("other", 2, Policy::Observe).await;
        d.feed("c", 1000.0);
        d.next("c", case.after).await;
        if case.step_done {
            d.until_free("c").await;
        }
        // Past every blocking call: the task now waits on the clock (a warm-up, a watch
        // interval, a backoff), since the clock only moves when nothing else can.
        d.idle(Duration::from_millis(100)).await;
        let errors = d.seen("c", EventKind::Error).len();
        let (enact, lifecycle) = (d.errors("enact"), d.errors("lifecycle"));
        let writes = d.kernel.writes().len();

        d.kernel.remove_cgroup(&cg("c"));
        let vanished = d.next("c", |e| e.kind == EventKind::Vanished).await;
        assert!(
            vanished.message.ends_with("vanished; forgotten"),
            "{what}: {vanished:?}"
        );
        d.idle(Duration::from_secs(900)).await;

        assert_eq!(
            d.seen("c", EventKind::Error).len(),
            errors,
            "{what}: {:?}",
            d.seen
        );
        assert_eq!(d.seen("c", EventKind::Vanished).len(), 1, "{what}");
        assert_eq!(d.errors("lifecycle"), lifecycle, "{what}");
        // Nothing tried to move it, made its cgroup again or wrote into it.
        assert_eq!(d.errors("enact"), enact, "{what}");
        let dir = d
            .kernel
            .cpuset_root()
            .join(PARENT.trim_start_matches('/'))
            .join("c");
        assert!(!dir.exists(), "{what}: its cgroup was recreated");
        let later = &d.kernel.writes()[writes..];
        assert!(
            later.iter().all(|(path, _)| !path.starts_with("ctr/c/")),
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
