//! 5. Sharing: an aggressive container holds no units and runs on what nobody holds; when
//!    another container takes units it runs on, it moves off them, and when that one
//!    leaves, it spreads back.

use std::time::Duration;

use placed::lifecycle::EventKind;
use placed::state::Lifecycle;
use placed_core::cpuset::CpuSet;
use placed_core::policy::Policy;

use crate::scenario::{CPUS, Scenario};

/// What the other container is placed by.
type Taker = fn(&Scenario) -> Policy;

#[tokio::test(start_paused = true)]
async fn an_aggressive_container_moves_off_units_another_takes() {
    let all: CpuSet = CPUS.parse().unwrap();
    let pinned = |s: &Scenario| Policy::Pinned {
        placement: s.placements(4).placements[0].id.clone(),
    };
    let takers: [(&str, Taker); 2] = [
        ("pinned", pinned),
        ("smart-aggressive", |_| Policy::SmartAggressive),
    ];
    for (what, taker) in takers {
        let s = Scenario::new();
        s.container("a", "", "");
        s.container("b", "", "");
        let policy = taker(&s);
        let mut d = s.start().await;
        d.manage("a", 4, Policy::Aggressive).await;
        d.next("a", |e| e.state == Lifecycle::Watched).await;
        assert_eq!(
            d.cpuset("a").0,
            all,
            "{what}: the aggressive one runs everywhere"
        );

        d.manage("b", 4, policy).await;
        d.next("b", |e| e.kind == EventKind::MigrationFinished)
            .await;
        let held = d.record("b").assigned.expect("b placed");
        assert!(!held.units.is_empty(), "{what}: {held:?}");
        assert_eq!(d.cpuset("b").0, held.cpus, "{what}");
        // Woken by b's move: a leaves b's units, and keeps every other one.
        d.next("a", |e| e.kind == EventKind::MigrationFinished)
            .await;
        let (a_cpus, _) = d.cpuset("a");
        let taken = held
            .units
            .iter()
            .fold(CpuSet::new(), |acc, &u| acc.union(&d.machine.units[u].cpus));
        assert!(
            !a_cpus.intersects(&taken),
            "{what}: a {a_cpus} on b's units {taken}"
        );
        assert_eq!(
            a_cpus,
            all.difference(&taken),
            "{what}: a left more than b took"
        );
        let a = d.record("a").assigned.expect("a placed");
        assert!(
            a.units.is_empty(),
            "{what}: an aggressive container reserves nothing"
        );
        assert_eq!(a.cpus, a_cpus, "{what}");

        // b stops: its units are free, and a spreads over them again.
        d.kernel.remove_cgroup(&crate::scenario::cg("b"));
        d.next("b", |e| e.kind == EventKind::Vanished).await;
        d.next("a", |e| e.kind == EventKind::MigrationFinished)
            .await;
        assert_eq!(d.cpuset("a").0, all, "{what}");
        d.idle(Duration::from_secs(300)).await;
        assert_eq!(d.seen("a", EventKind::Error), [], "{what}");
        assert_eq!(d.seen("b", EventKind::Error), [], "{what}");
        d.daemon.shutdown().await;
    }
}
