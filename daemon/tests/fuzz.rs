//! Fuzz targets for the daemon's parsers of outside input: the TOML configuration, the
//! state file (its header, checksum, payload and the validation of its records against the
//! machine), and the Unix socket's HTTP/2 authority repair (`authority`). Bounded and
//! seeded for CI; see docs/testing.md for the long mode.

#[path = "../../tests/support/fuzz.rs"]
mod fuzz;

#[path = "fuzz/authority.rs"]
mod authority;

use std::path::{Path, PathBuf};

use placed::config::Config;
use placed::state::{Assigned, ContainerRecord, Lifecycle, State, StateStore, validate};
use placed_core::machine::{Machine, TopologySource};
use placed_core::policy::Policy;
use proptest::prelude::*;
use serde_json::Value;
use sha2::{Digest, Sha256};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The TOML examples of docs/daemon.md (the defaults, commented settings uncommented) and a
/// small file of the kind operators write.
fn config_seeds() -> Vec<String> {
    let doc = std::fs::read_to_string(repo().join("docs/daemon.md")).expect("the doc");
    let mut seeds: Vec<String> = doc
        .split("```toml\n")
        .skip(1)
        .filter_map(|block| block.split("```").next())
        .map(str::to_owned)
        .collect();
    assert!(!seeds.is_empty(), "docs/daemon.md has TOML examples");
    let uncommented: Vec<String> = seeds
        .iter()
        .map(|s| {
            s.lines()
                .map(|l| l.strip_prefix("# ").unwrap_or(l))
                .collect::<Vec<_>>()
                .join("\n")
        })
        .collect();
    seeds.extend(uncommented);
    seeds.push(
        "[containers]\ncgroups = [\"/batch\"]\n[policy]\ndefault = \"model\"\ngoal = 0.8\n".into(),
    );
    seeds
}

/// An accepted configuration writes back to TOML that parses to the same configuration.
fn config_property(text: &str) -> Result<(), TestCaseError> {
    let path = Path::new("placed.toml");
    match Config::parse(path, text) {
        Ok(config) => {
            if let Err(e) = config.protocol() {
                fuzz::check_error(&e)?;
            }
            let written = toml::to_string(&config)
                .map_err(|e| TestCaseError::fail(format!("cannot write it back: {e}")))?;
            let back = Config::parse(path, &written).map_err(|e| {
                TestCaseError::fail(format!("written back, it is refused: {e}\n{written}"))
            })?;
            prop_assert_eq!(back, config);
        }
        Err(e) => fuzz::check_error(&e)?,
    }
    Ok(())
}

#[test]
fn config_mutated_as_text() {
    fuzz::run(
        "config-text",
        1_000,
        fuzz::mutated_text(config_seeds()),
        |t| config_property(&t),
    );
}

#[test]
fn config_mutated_by_value() {
    let seeds = config_seeds()
        .iter()
        .filter_map(|s| toml::from_str::<Value>(s).ok())
        .collect();
    fuzz::run("config-value", 1_000, fuzz::mutated_json(seeds), |doc| {
        // TOML has no null: a document with one is not a configuration anyone can write.
        match toml::to_string(&doc) {
            Ok(text) => config_property(&text),
            Err(_) => Ok(()),
        }
    });
}

const SYNTHETIC: &str = "pack:2 numa:1 l3:1 core:2 pu:2";

fn machine() -> Machine {
    Machine::load(&TopologySource::Synthetic(SYNTHETIC.into()), None).expect("synthetic")
}

fn record(id: &str, units: Vec<usize>, cpus: &str, mems: &str) -> ContainerRecord {
    ContainerRecord {
        runtime: "docker".into(),
        runtime_id: "abc".into(),
        state: Lifecycle::Watched,
        assigned: Some(Assigned {
            placement: None,
            units,
            cpus: cpus.parse().expect("a cpu list"),
            mems: mems.parse().expect("a node list"),
        }),
        metric: Some(placed_host::observe::SourceSpec::Pushed { counter: false }),
        updated_unix_ms: 1_700_000_000_000,
        // Set, so that the fuzzer edits it too.
        on_override: Some(placed_core::reconcile::OnOverride::Reassert),
        ..ContainerRecord::new(id, "web", 4, Policy::Model { goal: 0.9 })
    }
}

fn state(machine: &Machine) -> State {
    State {
        written_unix_ms: 1_700_000_000_000,
        fingerprint: machine.fingerprint().to_owned(),
        containers: vec![
            record("/docker/abc", vec![0], "0-3", "0"),
            record("/docker/def", vec![1], "4-7", "1"),
        ],
        unmanaged: vec!["/docker/handed-back".into()],
        reservations: Vec::new(),
        stopped_models: Vec::new(),
    }
}

/// A state file is refused with a bounded message, or loads and validates, and then saves
/// to a file that loads as the same state.
fn state_property(dir: &Path, machine: &Machine, bytes: &[u8]) -> Result<(), TestCaseError> {
    let path = dir.join("state.json");
    std::fs::write(&path, bytes).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let store = StateStore::new(&path);
    let loaded = match store.load(machine.fingerprint()) {
        Ok(Some(s)) => s,
        Ok(None) => return Err(TestCaseError::fail("an existing file read as none")),
        Err(e) => return fuzz::check_error(&e),
    };
    if let Err(e) = validate(&loaded, machine, &path) {
        return fuzz::check_error(&e);
    }
    let again = StateStore::new(dir.join("again.json"));
    again
        .save(&loaded)
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    let back = again
        .load(machine.fingerprint())
        .map_err(|e| TestCaseError::fail(format!("a saved state does not load: {e}")))?;
    prop_assert_eq!(back, Some(loaded));
    Ok(())
}

/// A state file around `payload` with its checksum right, so that edits reach the checks
/// behind it, as the store writes it (pretty JSON, a final newline).
fn signed(payload: &Value) -> Vec<u8> {
    let mut body = serde_json::to_vec_pretty(payload).expect("JSON");
    body.push(b'\n');
    let sum: String = Sha256::digest(&body)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let mut file = format!(r#"{{"format":"placed-state","version":1,"checksum":"sha256:{sum}"}}"#)
        .into_bytes();
    file.push(b'\n');
    file.extend(body);
    file
}

fn state_file(dir: &Path, machine: &Machine) -> Vec<u8> {
    let path = dir.join("seed.json");
    StateStore::new(&path)
        .save(&state(machine))
        .expect("writable");
    std::fs::read(path).expect("readable")
}

/// The payload the store writes for [`state`], as a JSON value to mutate.
fn state_payload(dir: &Path, machine: &Machine) -> Value {
    let file = state_file(dir, machine);
    let (_, payload) = file.split_at(file.iter().position(|&b| b == b'\n').expect("a header") + 1);
    serde_json::from_slice(payload).expect("JSON")
}

#[test]
fn state_files_with_mutated_payloads_signed_again() {
    let dir = tempfile::tempdir().expect("tempdir");
    let machine = machine();
    let payload = state_payload(dir.path(), &machine);
    fuzz::run(
        "state-file-payload",
        1_000,
        fuzz::mutated_json(vec![payload]),
        |p| state_property(dir.path(), &machine, &signed(&p)),
    );
}

#[test]
fn state_files_mutated_as_bytes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let machine = machine();
    let seed = state_file(dir.path(), &machine);
    fuzz::run(
        "state-file-bytes",
        1_000,
        fuzz::mutated(vec![seed]),
        |bytes| state_property(dir.path(), &machine, &bytes),
    );
}

/// Found by `state_files_with_mutated_payloads_signed_again` and
/// `state_files_mutated_as_bytes`: a corrupt state file's message quoted serde's complaint
/// and the header's checksum whole, at any length.
#[test]
fn state_file_error_quotes_a_long_string_cut() {
    let dir = tempfile::tempdir().expect("tempdir");
    let machine = machine();
    let long = "x".repeat(100_000);
    let mut payload = state_payload(dir.path(), &machine);
    payload["containers"][0]["metric"] = Value::String(long.clone());
    let header = format!(r#"{{"format":"placed-state","version":1,"checksum":"{long}"}}"#);
    for bytes in [signed(&payload), format!("{header}\n{{}}\n").into_bytes()] {
        let path = dir.path().join("state.json");
        std::fs::write(&path, bytes).expect("writable");
        let err = StateStore::new(&path)
            .load(machine.fingerprint())
            .expect_err("corrupt");
        let line = fuzz::message(&err);
        assert!(line.contains("is corrupt"), "{}", &line[..200]);
        assert!(line.len() < 1_000, "{} bytes", line.len());
    }
}

/// Found by `config_mutated_as_text` in the long mode: a log level that is not a filter was
/// quoted whole, with the filter parser's complaint quoting it again.
#[test]
fn config_log_level_error_quotes_a_long_level_cut() {
    let text = format!("[daemon]\nlog_level = \"{}\"\n", "[".repeat(100_000));
    let err = Config::parse(Path::new("placed.toml"), &text).expect_err("not a filter");
    let line = fuzz::message(&err);
    assert!(
        line.contains("daemon.log_level"),
        "{}",
        &line[..200.min(line.len())]
    );
    assert!(line.len() < 800, "{} bytes", line.len());
}
