//! 1. A daemon that died mid-migration: the next start settles the container on one whole
//!    cpuset, thaws it if the move froze it, and says so in memory and on disk.
//! 2. A container someone else froze (`docker pause`) stays frozen through that recovery:
//!    Docker still calls it paused, and its `unpause` must still work.

use placed::lifecycle::EventKind;
use placed::state::{Assigned, ContainerRecord, Cpuset, Lifecycle, Migration};
use placed_core::policy::Policy;
use placed_host::cgroup::{CgroupPath, Version};

use crate::scenario::{Scenario, cg};

/// Node 0's first two cores (both threads), and node 1's.
const FROM: (&str, &str) = ("0-1,16-17", "0");
const TO: (&str, &str) = ("8-9,24-25", "1");

fn assigned(at: (&str, &str), placement: &str) -> Assigned {
    Assigned {
        placement: Some(placement.into()),
        units: Vec::new(),
        cpus: at.0.parse().expect("a valid list"),
        mems: at.1.parse().expect("a valid list"),
    }
}

/// The record of a container a previous run was moving from [`FROM`] to [`TO`].
fn moving(name: &str, frozen: bool, resume: Option<Assigned>) -> ContainerRecord {
    ContainerRecord {
        state: Lifecycle::Migrating,
        assigned: Some(assigned(FROM, "from")),
        migration: Some(Migration {
            from: Cpuset {
                cpus: FROM.0.parse().expect("a valid list"),
                mems: FROM.1.parse().expect("a valid list"),
            },
            to: assigned(TO, "to"),
            started_unix_ms: 0,
            frozen,
        }),
        resume,
        ..ContainerRecord::new(&cg(name), name, 4, Policy::Observe)
    }
}

struct Case {
    name: &'static str,
    /// Where the kernel had the container when the daemon died.
    kernel_at: (&'static str, &'static str),
    /// A fast move had frozen it.
    frozen: bool,
    /// Someone else had frozen it before the move (`docker pause`): the journal says the
    /// move did not, and recovery must leave it frozen.
    paused: bool,
    /// An on-demand prediction was measuring it away from where it belongs.
    resume: Option<(&'static str, &'static str)>,
    /// Where it must end, and what the record must say it holds.
    settled_at: (&'static str, &'static str),
    assigned: &'static str,
    note: &'static str,
}

const CASES: &[Case] = &[
    Case {
        name: "completed",
        kernel_at: TO,
        frozen: false,
        paused: false,
        resume: None,
        settled_at: TO,
        assigned: "to",
        note: "an interrupted move had completed",
    },
    Case {
        name: "unstarted",
        kernel_at: FROM,
        frozen: false,
        paused: false,
        resume: None,
        settled_at: FROM,
        assigned: "from",
        note: "an interrupted move had not started; left where it was",
    },
    Case {
        name: "halfway",
        // New CPUs, memory allowed on both nodes: the move stopped between its writes.
        kernel_at: ("8-9,24-25", "0-1"),
        frozen: false,
        paused: false,
        resume: None,
        settled_at: FROM,
        assigned: "from",
        note: "an interrupted move was undone (cpus 0-1,16-17, mems 0)",
    },
    Case {
        name: "frozen",
        kernel_at: TO,
        frozen: true,
        paused: false,
        resume: None,
        settled_at: TO,
        assigned: "to",
        note: "thawed (left frozen by an interrupted move); an interrupted move had completed",
    },
    Case {
        name: "predicting",
        // Measured in TO for a prediction; it belongs in FROM.
        kernel_at: TO,
        frozen: false,
        paused: false,
        resume: Some(FROM),
        settled_at: FROM,
        assigned: "back",
        note: "put back after an interrupted prediction",
    },
    Case {
        name: "paused",
        kernel_at: TO,
        frozen: false,
        paused: true,
        resume: None,
        settled_at: TO,
        assigned: "to",
        note: "an interrupted move had completed",
    },
];

#[tokio::test(start_paused = true)]
async fn a_crash_mid_migration_is_settled_at_the_next_start() {
    for (version, case) in [Version::V1, Version::V2]
        .into_iter()
        .flat_map(|v| CASES.iter().map(move |c| (v, c)))
    {
        let what = format!("{} on {version}", case.name);
        let s = Scenario::on(version);
        let pid = s.container(case.name, case.kernel_at.0, case.kernel_at.1);
        let path = CgroupPath::parse(&cg(case.name)).unwrap();
        if case.frozen || case.paused {
            s.kernel.cgroups().set_frozen(&path, true).unwrap();
        }
        let mut record = moving(
            case.name,
            case.frozen,
            case.resume.map(|r| assigned(r, "back")),
        );
        if case.resume.is_some() {
            // The prediction moved it with its own journal, not the record's migration.
            record.migration = None;
            record.state = Lifecycle::Probe;
        }
        let mut d = s.with_record(record).start().await;

        let rec = d.record(case.name);
        let want = assigned(case.settled_at, case.assigned);
        assert_eq!(rec.migration, None, "{what}");
        assert_eq!(rec.resume, None, "{what}");
        assert_eq!(rec.assigned.as_ref(), Some(&want), "{what}");
        assert_eq!(rec.detail, case.note, "{what}");
        let state = if case.resume.is_some() {
            // An interrupted evaluation starts again (and, under observe, stays watched).
            Lifecycle::Discovered
        } else {
            Lifecycle::Watched
        };
        assert_eq!(rec.state, state, "{what}");
        // The kernel holds one whole cpuset, the one the record names.
        let (cpus, mems) = d.cpuset(case.name);
        assert_eq!(
            (cpus.to_string(), mems.to_string()),
            (case.settled_at.0.to_owned(), case.settled_at.1.to_owned()),
            "{what}"
        );
        let frozen = d.kernel.cgroups().is_frozen(&path).unwrap();
        assert_eq!(frozen, case.paused, "{what}: frozen afterwards");
        // Where the move had begun moving memory and was undone, it went back.
        if case.settled_at == FROM && case.kernel_at.1 == "0-1" {
            assert!(
                d.kernel.memory(pid).iter().all(|&(node, _)| node == 0),
                "{what}: {:?}",
                d.kernel.memory(pid)
            );
        }
        // The state file says what the daemon holds: a second crash now adopts the same.
        let disk = d.on_disk(case.name).expect("written after adoption");
        assert_eq!(disk.migration, None, "{what}");
        assert_eq!(disk.resume, None, "{what}");
        assert_eq!(disk.assigned, rec.assigned, "{what}");
        // Its task starts from there and, under observe, moves nothing.
        d.idle(std::time::Duration::from_secs(120)).await;
        assert!(
            d.seen(case.name, EventKind::MigrationStarted).is_empty(),
            "{what}"
        );
        assert!(d.seen(case.name, EventKind::Error).is_empty(), "{what}");
        assert_eq!(
            d.cpuset(case.name).0.to_string(),
            case.settled_at.0,
            "{what}"
        );
        d.daemon.shutdown().await;
    }
}
