//! The state file's format, pinned: a committed file per format version (`golden/`), each
//! of which this build must read, and the current writer's output for one fixed state,
//! which must equal the current version's golden file byte for byte.
//!
//! A rename in a type the records hold (a policy, a metric source, a lifecycle state) or a
//! change of the format module fails here, not in an upgraded daemon that refuses its old
//! state. When the change is meant, it is a new format version (see `STATE_VERSION`).
//!
//! The golden files were written by this writer and checked by hand against the format
//! module, field by field. `v1-first.state` is version 1 as its first writer wrote it,
//! before the fields added later with defaults (no `unmanaged`, `on_override`,
//! `overridden`, `interval`, `below_gate`, `novel`, `third`; no pattern metrics).

use std::path::PathBuf;

use placed_core::policy::Policy;
use placed_core::reconcile::{Action, OnOverride};
use placed_host::observe::SourceSpec;
use placed_host::observe::pattern::{Mode, PatternInput, Stream};
use placed_models::Provenance;
use placed_models::interval::Interval;

use super::{
    Assigned, ContainerRecord, Cpuset, Lifecycle, Migration, ObservationRecord, OverrideRecord,
    PredictedRecord, PredictionRecord, ReservationRecord, STATE_VERSION, State, StateStore,
    VcpuSource,
};

/// The golden files, by format version (some versions have more than one).
const GOLDEN: &[(u32, &str, &[u8])] = &[
    (2, "v2.state", include_bytes!("golden/v2.state")),
    (1, "v1.state", include_bytes!("golden/v1.state")),
    (1, "v1-first.state", include_bytes!("golden/v1-first.state")),
];

/// The file the current writer must write for [`fixed`].
const CURRENT: &str = "v2.state";

const FINGERPRINT: &str = "mc1-0011223344556677";

fn sets(cpus: &str, mems: &str) -> Cpuset {
    Cpuset {
        cpus: cpus.parse().expect("a cpu list"),
        mems: mems.parse().expect("a node list"),
    }
}

fn assigned(placement: Option<&str>, units: &[usize], cpus: &str, mems: &str) -> Assigned {
    Assigned {
        placement: placement.map(str::to_owned),
        units: units.to_vec(),
        cpus: cpus.parse().expect("a cpu list"),
        mems: mems.parse().expect("a node list"),
    }
}

fn container(id: &str, state: Lifecycle, policy: Policy) -> ContainerRecord {
    ContainerRecord {
        runtime_id: String::new(),
        vcpus_source: VcpuSource::Cpuset,
        state,
        updated_unix_ms: 1_700_000_000_500,
        ..ContainerRecord::new(id, id.rsplit('/').next().unwrap_or(id), 2, policy)
    }
}

fn prediction(provenance: Provenance) -> PredictionRecord {
    PredictionRecord {
        model_id: "mc1-0011223344556677-v4-1a2b".into(),
        model_path: "/var/lib/placed/models/mc1-0011223344556677-v4.json".into(),
        provenance,
        vcpus: 4,
        baseline: "numa1-core4".into(),
        probe: "numa2-core4".into(),
        observations: vec![
            ObservationRecord {
                placement: "numa1-core4".into(),
                value: 1250.5,
                low: 1200.25,
                high: 1300.75,
                source: "prometheus".into(),
                windows: 16,
                dropped: 1,
            },
            ObservationRecord {
                placement: "numa2-core4".into(),
                value: 1500.0,
                low: 1450.0,
                high: 1550.0,
                source: "prometheus".into(),
                windows: 15,
                dropped: 0,
            },
        ],
        placements: vec![
            PredictedRecord {
                placement: "numa1-core4".into(),
                relative: 1.0,
                spread: 0.0,
                measured: true,
                interval: None,
            },
            PredictedRecord {
                placement: "numa2-core8".into(),
                relative: 1.375,
                spread: 0.0625,
                measured: false,
                interval: Some(Interval {
                    low: 1.25,
                    high: 1.5,
                    level: 0.9,
                }),
            },
        ],
        warnings: vec!["the probe's interval overlaps the baseline's".into()],
        unix_ms: 1_700_000_000_250,
        below_gate: None,
        novel: false,
        third: None,
        across_classes: false,
    }
}

/// A Docker container under the model policy, placed and watched.
fn web() -> ContainerRecord {
    let mut web = container(
        "/docker/3f2a",
        Lifecycle::Watched,
        Policy::Model { goal: 0.9 },
    );
    web.runtime = "docker".into();
    web.runtime_id = "3f2a".repeat(16);
    web.vcpus = 4;
    web.vcpus_source = VcpuSource::Request;
    web.original = Some(sets("0-15", "0-1"));
    web.assigned = Some(assigned(Some("numa1-core4"), &[1], "8-11", "1"));
    web.labels = [
        ("app".to_owned(), "web".to_owned()),
        ("team".to_owned(), "storefront".to_owned()),
    ]
    .into();
    web
}

/// [`fixed`] as version 1 holds it: without version 2's labels and reservations.
fn fixed_v1() -> State {
    let mut s = fixed();
    s.reservations.clear();
    for c in &mut s.containers {
        c.labels.clear();
    }
    s
}

/// A state holding every field and every variant the format has.
fn fixed() -> State {
    let mut web = web();
    web.metric = Some(SourceSpec::Prometheus {
        url: "http://10.0.0.5:9100/metrics".into(),
        selector: "requests_total{job=\"web\"}".into(),
    });
    web.prediction = Some(PredictionRecord {
        third: Some("numa2-core8 straddled the goal; measured 1.31".into()),
        across_classes: false,
        ..prediction(Provenance::Real)
    });
    web.on_override = Some(OnOverride::Reassert);
    web.overridden = Some(OverrideRecord {
        expected: sets("8-11", "1"),
        found: sets("0-15", "0-1"),
        action: Action::Reasserted,
        unix_ms: 1_700_000_000_400,
    });

    let mut db = container(
        "/docker/7c1d",
        Lifecycle::Migrating,
        Policy::Pinned {
            placement: "numa2-core8".into(),
        },
    );
    db.vcpus_source = VcpuSource::Quota;
    db.assigned = Some(assigned(Some("numa1-core4"), &[0], "0-3", "0"));
    db.migration = Some(Migration {
        from: sets("0-3", "0"),
        to: assigned(Some("numa2-core8"), &[0, 1], "0-3,8-11", "0-1"),
        started_unix_ms: 1_700_000_000_300,
        frozen: true,
    });
    db.metric = Some(SourceSpec::Command {
        argv: vec!["cat".into(), "/run/db/ops".into()],
        counter: true,
    });
    db.prediction = Some(PredictionRecord {
        below_gate: Some("cross-validated error 0.31 above 0.15".into()),
        novel: true,
        ..prediction(Provenance::VirtualMachine)
    });
    db.on_override = Some(OnOverride::Adopt);
    db.overridden = Some(OverrideRecord {
        expected: sets("0-3", "0"),
        found: sets("4-7", "0"),
        action: Action::Adopted,
        unix_ms: 1_700_000_000_350,
    });

    let mut waiting = container("/batch/wait", Lifecycle::Waiting, Policy::Conservative);
    waiting.detail = "no model for machine class mc1-0011223344556677 and 2 vCPUs".into();
    waiting.metric = Some(SourceSpec::Pushed { counter: false });
    waiting.on_override = Some(OnOverride::Leave);
    waiting.overridden = Some(OverrideRecord {
        expected: sets("0-1", "0"),
        found: sets("0-2", "0"),
        action: Action::Left,
        unix_ms: 1_700_000_000_360,
    });

    let mut measuring = container("/batch/measure", Lifecycle::Baseline, Policy::Aggressive);
    measuring.assigned = Some(assigned(None, &[], "0-7", "0"));
    measuring.resume = Some(assigned(None, &[], "0-15", "0-1"));
    measuring.metric = Some(SourceSpec::Perf { ipc: true });
    measuring.prediction = Some(prediction(Provenance::Simulated));
    measuring.overridden = Some(OverrideRecord {
        expected: sets("0-7", "0"),
        found: sets("8-15", "1"),
        action: Action::GaveUp,
        unix_ms: 1_700_000_000_370,
    });

    let mut probe = container("/batch/probe", Lifecycle::Probe, Policy::SmartAggressive);
    probe.metric = Some(SourceSpec::Pattern {
        regex: "tps: ([0-9.]+)".into(),
        mode: Mode::Rate,
        input: PatternInput::Program {
            argv: vec!["sysbench".into(), "--report-interval=1".into()],
            stream: Stream::Stderr,
        },
    });
    let mut predicted = container("/batch/predicted", Lifecycle::Predicted, Policy::Observe);
    predicted.metric = Some(SourceSpec::Pattern {
        regex: "GET /".into(),
        mode: Mode::Increment,
        input: PatternInput::File {
            path: PathBuf::from("/var/log/app/access.log"),
        },
    });
    let mut placed = container(
        "/batch/placed",
        Lifecycle::Placed,
        Policy::Model { goal: 1.1 },
    );
    placed.metric = Some(SourceSpec::Pattern {
        regex: "ops=([0-9]+)".into(),
        mode: Mode::Total,
        input: PatternInput::Program {
            argv: vec!["app".into()],
            stream: Stream::Stdout,
        },
    });
    let mut both = container("/batch/both", Lifecycle::Discovered, Policy::Observe);
    both.metric = Some(SourceSpec::Pattern {
        regex: "x".into(),
        mode: Mode::Rate,
        input: PatternInput::Program {
            argv: vec!["app".into()],
            stream: Stream::Both,
        },
    });
    let failed = container("/batch/failed", Lifecycle::Failed, Policy::Observe);

    State {
        written_unix_ms: 1_700_000_001_000,
        fingerprint: FINGERPRINT.into(),
        containers: vec![
            web, db, waiting, measuring, probe, predicted, placed, both, failed,
        ],
        unmanaged: vec!["/docker/handed-back".into()],
        reservations: vec![ReservationRecord {
            id: "rsv-18bcfe56800-0".into(),
            assigned: assigned(Some("numa1-core4"), &[0], "0-3", "0"),
            vcpus: 4,
            policy: Policy::SmartAggressive,
            labels: [("app".to_owned(), "cache".to_owned())].into(),
            for_container: Some("9e1c".repeat(16)),
            created_unix_ms: 1_700_000_000_900,
            expires_unix_ms: 1_700_000_060_900,
        }],
        stopped_models: Vec::new(),
    }
}

/// `v1-first.state` as this build reads it: what its first writer knew, the later fields
/// at their defaults.
fn first() -> State {
    let mut web = web();
    web.labels.clear();
    web.metric = Some(SourceSpec::Pushed { counter: false });
    let mut p = prediction(Provenance::Real);
    p.placements[1].interval = None;
    web.prediction = Some(p);
    let mut db = container("/docker/7c1d", Lifecycle::Migrating, Policy::Aggressive);
    db.migration = Some(Migration {
        from: sets("0-3", "0"),
        to: assigned(None, &[], "0-7", "0"),
        started_unix_ms: 1_700_000_000_300,
        frozen: false,
    });
    db.metric = Some(SourceSpec::Command {
        argv: vec!["cat".into(), "/run/db/ops".into()],
        counter: false,
    });
    State {
        written_unix_ms: 1_700_000_001_000,
        fingerprint: FINGERPRINT.into(),
        containers: vec![web, db],
        unmanaged: Vec::new(),
        reservations: Vec::new(),
        stopped_models: Vec::new(),
    }
}

fn golden(name: &str) -> &'static [u8] {
    GOLDEN
        .iter()
        .find(|(_, n, _)| *n == name)
        .map(|(_, _, bytes)| *bytes)
        .unwrap_or_else(|| panic!("no golden file {name}"))
}

fn load(bytes: &[u8]) -> State {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.json");
    std::fs::write(&path, bytes).unwrap();
    StateStore::new(&path)
        .load(FINGERPRINT)
        .unwrap_or_else(|e| panic!("{}", placed_core::text::error_line(&e)))
        .expect("a state")
}

#[test]
fn every_format_version_has_a_golden_file_and_each_loads() {
    for version in 1..=STATE_VERSION {
        assert!(
            GOLDEN.iter().any(|(v, _, _)| *v == version),
            "no golden file for state format version {version}: commit the writer's output of that version under golden/"
        );
    }
    for (_, name, bytes) in GOLDEN {
        load(bytes);
        let header = std::str::from_utf8(bytes)
            .ok()
            .and_then(|t| t.lines().next())
            .unwrap_or_default();
        assert!(
            header.starts_with("{\"format\":\"placed-state\",\"version\":"),
            "{name}: {header}"
        );
    }
    assert_eq!(load(golden("v2.state")), fixed());
    assert_eq!(load(golden("v1.state")), fixed_v1());
    assert_eq!(load(golden("v1-first.state")), first());
}

#[test]
fn the_writer_writes_the_current_golden_file_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let store = StateStore::new(dir.path().join("state.json"));
    store.save(&fixed()).unwrap();
    let written = std::fs::read(store.path()).unwrap();
    // A new format version's golden file is written by this writer once, then checked by
    // hand: PLACED_BLESS_GOLDEN=1 writes it instead of comparing.
    if std::env::var_os("PLACED_BLESS_GOLDEN").is_some() {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("src/state/golden")
            .join(CURRENT);
        std::fs::write(path, &written).unwrap();
        return;
    }
    let want = golden(CURRENT);
    assert!(
        written == want,
        "the state file format changed: what this build writes differs from golden/{CURRENT}. If the change is meant, it is a new format version (store.rs, STATE_VERSION); the old golden files must still load.\n--- written ---\n{}",
        String::from_utf8_lossy(&written)
    );
}

/// The fields live accuracy added (a container's last outcome, the models the live gate
/// stopped) are absent from the golden files, which still load and are still written byte
/// for byte when they are empty; when set, they are written and read back whole.
#[test]
fn outcomes_and_stopped_models_are_kept_and_absent_when_empty() {
    let mut state = fixed();
    state.containers[0].outcome = Some(placed_models::live::Outcome {
        model_id: "mc1-0011223344556677-v4-1a2b".into(),
        provenance: Provenance::Simulated,
        placement: "numa2-core4".into(),
        predicted: 1.25,
        interval: Some(placed_models::interval::Interval {
            low: 1.1,
            high: 1.4,
            level: 0.9,
        }),
        measured: false,
        realized: 1.5,
        goal: Some(0.9),
        unix_ms: 1_700_000_000_700,
    });
    state.stopped_models = vec![crate::state::StoppedModel {
        model_id: "mc1-0011223344556677-v4-1a2b".into(),
        provenance: Provenance::Simulated,
        since_unix_ms: 1_700_000_000_800,
        reason: "7 of the last 10 calibrated intervals missed".into(),
    }];
    let dir = tempfile::tempdir().unwrap();
    let store = StateStore::new(dir.path().join("state.json"));
    store.save(&state).unwrap();
    let text = String::from_utf8(std::fs::read(store.path()).unwrap()).unwrap();
    assert!(text.contains("\"stopped_models\""), "{text}");
    assert!(text.contains("\"realized\": 1.5"), "{text}");
    assert_eq!(load(text.as_bytes()), state);
    assert!(!String::from_utf8_lossy(golden(CURRENT)).contains("outcome"));
}

/// A prediction of the model across classes says so in the state file, so that the decisions
/// after a restart still hold it to its lower bound; other predictions, and the golden
/// files, do not carry the field.
#[test]
fn a_prediction_of_the_model_across_classes_is_kept_as_one() {
    let mut state = fixed();
    if let Some(p) = state.containers[0].prediction.as_mut() {
        p.across_classes = true;
    }
    let dir = tempfile::tempdir().unwrap();
    let store = StateStore::new(dir.path().join("state.json"));
    store.save(&state).unwrap();
    let text = String::from_utf8(std::fs::read(store.path()).unwrap()).unwrap();
    assert!(text.contains("\"across_classes\": true"), "{text}");
    assert_eq!(load(text.as_bytes()), state);
    assert!(!String::from_utf8_lossy(golden(CURRENT)).contains("across_classes"));
}
