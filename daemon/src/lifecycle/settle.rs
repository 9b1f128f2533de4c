//! What an interrupted operation left on a container, settled: a move (thawed if it froze
//! the container, then on one whole cpuset) and an on-demand prediction's way back. At
//! start-up for the previous run's records, and by `Unmanage` for a container whose
//! operation it stopped.

use crate::state::{ContainerRecord, Cpuset};
use placed_host::containers::Container;
use placed_host::migrate::Mode;

use super::core::Core;

/// Settles what an interrupted operation left on `rec`'s container: a move (thawed if it
/// froze it, then on one whole cpuset: the target if the kernel holds it, else where it came
/// from) and an on-demand prediction's way back. Clears both from the record; the notes say
/// what was done. At start-up for the previous run's records, and by `Unmanage` for a
/// container whose operation it stopped.
pub(crate) fn settle_interrupted(
    core: &Core,
    container: &Container,
    rec: &mut ContainerRecord,
) -> Vec<String> {
    let host = &core.node.host;
    let mut notes = Vec::new();
    if let Some(m) = rec.migration.take() {
        // A fast move freezes the container; if the daemon died then, the freeze stayed.
        if m.frozen && host.is_frozen(&container.cgroup).unwrap_or(false) {
            match host.thaw(&container.cgroup) {
                Ok(()) => notes.push("thawed (left frozen by an interrupted move)".to_owned()),
                Err(e) => notes.push(format!("COULD NOT THAW: {}", placed_core::text::Chain(&e))),
            }
        }
        let now = host.cpuset(&container.cgroup).ok();
        let at = |c: &Cpuset| {
            now.as_ref()
                .is_some_and(|n| n.effective_cpus == c.cpus && n.effective_mems == c.mems)
        };
        let to = Cpuset {
            cpus: m.to.cpus.clone(),
            mems: m.to.mems.clone(),
        };
        if at(&to) {
            rec.assigned = Some(m.to.clone());
            notes.push("an interrupted move had completed".into());
        } else if at(&m.from) {
            notes.push("an interrupted move had not started; left where it was".into());
        } else {
            // Half-way (new CPUs, both nodes' memory): put it back where it came from.
            match core
                .node
                .host
                .apply(container, &m.from.cpus, &m.from.mems, &Mode::Kernel)
            {
                Ok(_) => notes.push(format!(
                    "an interrupted move was undone (cpus {}, mems {})",
                    m.from.cpus, m.from.mems
                )),
                Err(e) => notes.push(format!(
                    "undoing an interrupted move failed: {}",
                    placed_core::text::Chain(&e)
                )),
            }
        }
    }
    if let Some(back) = rec.resume.take() {
        match core
            .node
            .host
            .apply(container, &back.cpus, &back.mems, &Mode::Kernel)
        {
            Ok(_) => {
                notes.push("put back after an interrupted prediction".into());
                rec.assigned = (!back.units.is_empty() || back.placement.is_some()).then_some(back);
            }
            Err(e) => notes.push(format!(
                "could not put it back after a prediction: {}",
                placed_core::text::Chain(&e)
            )),
        }
    }
    notes
}
