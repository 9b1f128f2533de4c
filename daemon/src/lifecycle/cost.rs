//! The move-or-stay rule's inputs for one container: how many units it holds, what it is
//! predicted to do where it is, whether it runs on another container's units, and the
//! resident memory a move would migrate ([`policy::worth_moving`] weighs them).

use placed_core::cpuset::NodeSet;
use placed_core::policy::{self, MoveDecision, Target};
use placed_host::cgroup::CgroupPath;

use crate::state::ContainerRecord;

use super::core::Core;
use super::entry::usable_prediction;
use super::handle::Handle;

impl Handle {
    /// Whether moving `record` to `target` pays, and why.
    pub async fn worth_moving(&self, record: &ContainerRecord, target: &Target) -> MoveDecision {
        let core = &self.core;
        let all_units = core.node.machine.units.len();
        let current_units = record.assigned.as_ref().map_or(all_units, |a| {
            if a.units.is_empty() {
                all_units
            } else {
                a.units.len()
            }
        });
        let current_predicted = usable_prediction(record).and_then(|p| {
            record
                .assigned
                .as_ref()
                .and_then(|a| a.placement.as_deref())
                .and_then(|id| p.relative(id))
        });
        let held = core.containers.registry().taken_units(&self.id);
        let task_core = core.clone();
        let (rec, to_mems) = (record.clone(), target.mems.clone());
        // /proc/<pid>/numa_maps of a large process takes a while to read.
        let (trespassing, bytes_to_move) =
            tokio::task::spawn_blocking(move || exposure(&task_core, &rec, &held, &to_mems))
                .await
                .unwrap_or((false, u64::MAX));
        policy::worth_moving(
            &policy::MoveCost {
                current_units,
                current_predicted,
                trespassing,
                bytes_to_move,
                migration_bytes_per_s: core.node.migration_speed(),
                horizon_s: core.settings.config().policy.horizon.as_secs_f64(),
            },
            target,
        )
    }
}

/// Where the container runs now, against the units others hold and the target's nodes:
/// whether it runs on another container's units, and the resident bytes on nodes the target
/// leaves out (what a move would migrate).
fn exposure(
    core: &Core,
    record: &ContainerRecord,
    held_by_others: &[usize],
    to_mems: &NodeSet,
) -> (bool, u64) {
    let Ok(cg) = CgroupPath::parse(&record.id) else {
        return (false, 0);
    };
    let machine = &core.node.machine;
    let (cpus, mems) = match (core.node.host.cpuset(&cg), &record.assigned) {
        (Ok(now), _) => (now.effective_cpus, now.effective_mems),
        (Err(_), Some(a)) => (a.cpus.clone(), a.mems.clone()),
        (Err(_), None) => (
            machine.pus.usable.clone(),
            machine
                .units
                .iter()
                .fold(NodeSet::new(), |acc, u| acc.union(&u.mems)),
        ),
    };
    let trespassing = held_by_others.iter().any(|&u| {
        machine
            .units
            .get(u)
            .is_some_and(|unit| unit.cpus.intersects(&cpus) || unit.mems.intersects(&mems))
    });
    if mems.is_subset(to_mems) {
        // The target keeps every node the memory may be on: nothing migrates.
        return (trespassing, 0);
    }
    // A container gone meanwhile has nothing to move.
    let bytes = core.node.host.bytes_outside(&cg, to_mems).unwrap_or_else(|e| {
        tracing::debug!(container = %record.name, error = %placed_core::text::Chain(&e), "resident memory unreadable");
        0
    });
    (trespassing, bytes)
}
