//! The state file's records checked as strictly as API input before any is adopted.
//!
//! The checksum proves only that the file is what placed (or someone with write access to
//! it) wrote; a record the API would refuse (a goal of -5, 10^9 vCPUs, unit 999999, CPUs
//! 0-4095, two records for one cgroup) must not become a placement. Each refusal names the
//! container and the field, with any value from the file clipped.

use std::collections::HashSet;
use std::path::Path;

use placed_core::cpuset::{CpuSet, NodeSet};
use placed_core::machine::Machine;
use placed_core::policy::Policy;

use super::{Assigned, ContainerRecord, Cpuset, State, StateError};

/// Longest value from the file an error repeats.
const ECHO_MAX: usize = 200;

fn clip(s: &str) -> String {
    placed_core::text::clip(s, ECHO_MAX)
}

/// Checks every record of `state` against `machine`.
pub fn validate(state: &State, machine: &Machine, path: &Path) -> Result<(), StateError> {
    let mems = machine_nodes(machine);
    let mut ids = HashSet::new();
    for rec in &state.containers {
        let fail = |field: &'static str, problem: String| StateError::Invalid {
            path: path.to_owned(),
            container: clip(&rec.id),
            field,
            problem,
        };
        if !ids.insert(rec.id.as_str()) {
            return Err(fail("id", "a second record for the same container".into()));
        }
        record(rec, machine, &mems).map_err(|(field, problem)| fail(field, problem))?;
    }
    for id in &state.unmanaged {
        let good = placed_host::cgroup::CgroupPath::parse(id).is_ok_and(|cg| !cg.is_root());
        if !good || ids.contains(id.as_str()) {
            return Err(StateError::Invalid {
                path: path.to_owned(),
                container: clip(id),
                field: "unmanaged",
                problem: if good {
                    "both managed and handed back".into()
                } else {
                    "not a cgroup path below the root".into()
                },
            });
        }
    }
    Ok(())
}

/// Every memory node of the machine: those of its units and those beside them.
fn machine_nodes(machine: &Machine) -> NodeSet {
    let mut all = machine
        .units
        .iter()
        .fold(NodeSet::new(), |acc, u| acc.union(&u.mems));
    for n in &machine.numa_os {
        all.insert(*n);
    }
    for a in &machine.numa_attached {
        all = all.union(a);
    }
    all
}

type Problem = (&'static str, String);

fn record(rec: &ContainerRecord, machine: &Machine, mems: &NodeSet) -> Result<(), Problem> {
    match placed_host::cgroup::CgroupPath::parse(&rec.id) {
        Ok(p) if p.is_root() => return Err(("id", "the root cgroup is never managed".into())),
        Ok(_) => {}
        Err(e) => return Err(("id", placed_core::text::error_line(&e))),
    }
    let pus = machine.pus.complete.len();
    if rec.vcpus == 0 || rec.vcpus > pus {
        return Err((
            "vcpus",
            format!("{} is outside 1..={pus} (the machine's PUs)", rec.vcpus),
        ));
    }
    rec.policy
        .validate()
        .map_err(|e| ("policy", placed_core::text::error_line(&e)))?;
    if let Policy::Pinned { placement } = &rec.policy {
        let known = placed_core::placement::important_placements(machine, rec.vcpus)
            .is_ok_and(|set| set.get(placement).is_some());
        if !known {
            return Err((
                "policy",
                format!(
                    "pinned to {}, which is not an important placement for {} vCPUs here",
                    clip(placement),
                    rec.vcpus
                ),
            ));
        }
    }
    if let Some(c) = &rec.original {
        cpuset("original", c, machine, mems)?;
    }
    for (field, a) in [("assigned", &rec.assigned), ("resume", &rec.resume)] {
        if let Some(a) = a {
            assigned(field, a, machine, mems)?;
        }
    }
    if let Some(m) = &rec.migration {
        cpuset("migration.from", &m.from, machine, mems)?;
        assigned("migration.to", &m.to, machine, mems)?;
    }
    if let Some(o) = &rec.overridden {
        cpuset("overridden.expected", &o.expected, machine, mems)?;
        cpuset("overridden.found", &o.found, machine, mems)?;
    }
    Ok(())
}

fn assigned(
    field: &'static str,
    a: &Assigned,
    machine: &Machine,
    mems: &NodeSet,
) -> Result<(), Problem> {
    let n = machine.units.len();
    let mut seen = HashSet::new();
    for &u in &a.units {
        if u >= n {
            return Err((
                field,
                format!("unit {u} does not exist (this machine has {n})"),
            ));
        }
        if !seen.insert(u) {
            return Err((field, format!("unit {u} is listed twice")));
        }
    }
    within(field, &a.cpus, &a.mems, machine, mems)
}

fn cpuset(
    field: &'static str,
    c: &Cpuset,
    machine: &Machine,
    mems: &NodeSet,
) -> Result<(), Problem> {
    within(field, &c.cpus, &c.mems, machine, mems)
}

fn within(
    field: &'static str,
    cpus: &CpuSet,
    nodes: &NodeSet,
    machine: &Machine,
    mems: &NodeSet,
) -> Result<(), Problem> {
    if !cpus.is_subset(&machine.pus.complete) {
        return Err((
            field,
            format!(
                "CPUs {} are not this machine's",
                clip(&cpus.difference(&machine.pus.complete).to_string())
            ),
        ));
    }
    if !nodes.is_subset(mems) {
        return Err((
            field,
            format!(
                "memory nodes {} are not this machine's",
                clip(&nodes.difference(mems).to_string())
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::Lifecycle;
    use placed_core::machine::TopologySource;

    fn machine() -> Machine {
        Machine::load(
            &TopologySource::Synthetic("pack:2 numa:1 core:4 pu:2".into()),
            None,
        )
        .unwrap()
    }

    fn good(m: &Machine) -> State {
        let pinned = placed_core::placement::important_placements(m, 4)
            .unwrap()
            .placements[0]
            .id
            .clone();
        let unit = &m.units[0];
        State {
            written_unix_ms: 0,
            unmanaged: Vec::new(),
            reservations: Vec::new(),
            stopped_models: Vec::new(),
            fingerprint: m.fingerprint().to_owned(),
            containers: vec![ContainerRecord {
                runtime: "docker".into(),
                runtime_id: "abc".into(),
                state: Lifecycle::Placed,
                assigned: Some(Assigned {
                    placement: None,
                    units: vec![0],
                    cpus: unit.cpus.clone(),
                    mems: unit.mems.clone(),
                }),
                ..ContainerRecord::new(
                    "/docker/abc",
                    "web",
                    4,
                    Policy::Pinned { placement: pinned },
                )
            }],
        }
    }

    fn refusal(m: &Machine, change: impl FnOnce(&mut ContainerRecord)) -> (String, String) {
        let mut s = good(m);
        change(&mut s.containers[0]);
        match validate(&s, m, Path::new("/s.json")) {
            Err(e @ StateError::Invalid { field, .. }) => (field.to_owned(), e.to_string()),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn records_the_api_would_refuse_are_refused_naming_container_and_field() {
        let m = machine();
        validate(&good(&m), &m, Path::new("/s.json")).unwrap();
        let (f, msg) = refusal(&m, |r| r.policy = Policy::Model { goal: -5.0 });
        assert_eq!(f, "policy");
        assert!(msg.contains("/docker/abc") && msg.contains("-5"), "{msg}");
        assert_eq!(refusal(&m, |r| r.vcpus = 1_000_000_000).0, "vcpus");
        assert_eq!(refusal(&m, |r| r.vcpus = 0).0, "vcpus");
        let (f, msg) = refusal(&m, |r| r.assigned.as_mut().unwrap().units = vec![999_999]);
        assert_eq!((f.as_str(), msg.contains("999999")), ("assigned", true));
        assert_eq!(
            refusal(&m, |r| r.assigned.as_mut().unwrap().units = vec![0, 0]).0,
            "assigned"
        );
        let (f, msg) = refusal(&m, |r| {
            r.assigned.as_mut().unwrap().cpus = "0-4095".parse().unwrap()
        });
        assert_eq!(f, "assigned");
        assert!(msg.contains("16-4095"), "{msg}");
        assert_eq!(
            refusal(&m, |r| r.assigned.as_mut().unwrap().mems =
                "7".parse().unwrap())
            .0,
            "assigned"
        );
        let long = format!("numa{}", "9".repeat(100_000));
        let (f, msg) = refusal(&m, |r| {
            r.policy = Policy::Pinned {
                placement: long.clone(),
            }
        });
        assert_eq!(f, "policy");
        assert!(msg.len() < 1000, "{} bytes", msg.len());
        assert_eq!(refusal(&m, |r| r.id = "/".into()).0, "id");
        assert_eq!(refusal(&m, |r| r.id = "/../x".into()).0, "id");
        let original = Cpuset {
            cpus: "99".parse().unwrap(),
            mems: "0".parse().unwrap(),
        };
        assert_eq!(refusal(&m, |r| r.original = Some(original)).0, "original");
    }

    #[test]
    fn two_records_for_one_container_are_refused() {
        let m = machine();
        let mut s = good(&m);
        s.containers.push(s.containers[0].clone());
        let err = validate(&s, &m, Path::new("/s.json")).unwrap_err();
        assert!(
            matches!(err, StateError::Invalid { field: "id", .. }),
            "{err}"
        );
    }
}
