//! The order of cpuset writes that the kernel accepts when a subtree of cgroups changes.
//!
//! The rules (v1, `kernel/cgroup/cpuset.c`, `validate_change`):
//! - a cpuset must lie within its parent's: writing a child first fails with EINVAL;
//! - every child must lie within its cpuset: shrinking a parent first fails with EBUSY;
//! - a cpuset with tasks cannot become empty (ENOSPC).
//!
//! So the change goes in two passes: top-down, every cgroup that has children grows to the
//! union of its old and new sets (and a leaf goes straight to its new set, which lies within
//! its grown parent); then bottom-up, every cgroup with children shrinks to its new set,
//! after its children have. No cgroup is ever empty or outside its parent, provided the new
//! sets nest (each child's within its parent's), which [`order`] checks. A leaf (the common
//! case: one container cgroup) is written once, so each task's affinity is updated once.
//!
//! v2 needs none of this (children may lie outside the parent; the effective set is the
//! intersection), but the same order is also valid there.

use super::{Backend, CgroupPath, Error};
use placed_core::cpuset::{CpuSet, NodeSet};

/// A cgroup's cpus and mems.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Sets {
    pub cpus: CpuSet,
    pub mems: NodeSet,
}

/// One cgroup's sets before and after.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub cgroup: CgroupPath,
    pub from: Sets,
    pub to: Sets,
}

/// One step: write `cpus` then `mems` (each only when `Some`) to `cgroup`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Write {
    pub cgroup: CgroupPath,
    pub cpus: Option<CpuSet>,
    pub mems: Option<NodeSet>,
}

/// The new sets do not nest, so no order of writes can reach them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the new cpuset of {child} is not within that of its parent {parent}")]
pub struct NotNested {
    pub child: CgroupPath,
    pub parent: CgroupPath,
}

/// The writes that take a subtree from its `from` sets to its `to` sets. `changes` lists
/// the subtree in pre-order (every cgroup before its descendants); cgroups whose parent is
/// not listed are taken as the subtree's tops.
pub fn order(changes: &[Change]) -> Result<Vec<Write>, NotNested> {
    let parent_of = |i: usize| {
        let p = changes[i].cgroup.parent()?;
        changes[..i].iter().position(|c| c.cgroup == p)
    };
    for i in 0..changes.len() {
        if let Some(p) = parent_of(i) {
            let (c, pc) = (&changes[i], &changes[p]);
            // An empty set is v2's "inherit", which nests in anything.
            let nests = |child: bool, parent: bool, subset: bool| child || parent || subset;
            let cpus_nest = nests(
                c.to.cpus.is_empty(),
                pc.to.cpus.is_empty(),
                c.to.cpus.is_subset(&pc.to.cpus),
            );
            let mems_nest = nests(
                c.to.mems.is_empty(),
                pc.to.mems.is_empty(),
                c.to.mems.is_subset(&pc.to.mems),
            );
            if !cpus_nest || !mems_nest {
                return Err(NotNested {
                    child: c.cgroup.clone(),
                    parent: pc.cgroup.clone(),
                });
            }
        }
    }
    let interior: Vec<bool> = (0..changes.len())
        .map(|i| (0..changes.len()).any(|j| parent_of(j) == Some(i)))
        .collect();

    let mut writes = Vec::new();
    let mut step = |cg: &CgroupPath, now: &Sets, next: &Sets| {
        let w = Write {
            cgroup: cg.clone(),
            cpus: (now.cpus != next.cpus).then(|| next.cpus.clone()),
            mems: (now.mems != next.mems).then(|| next.mems.clone()),
        };
        if w.cpus.is_some() || w.mems.is_some() {
            writes.push(w);
        }
    };
    let grown: Vec<Sets> = changes
        .iter()
        .zip(&interior)
        .map(|(c, &inner)| {
            if inner {
                Sets {
                    cpus: c.from.cpus.union(&c.to.cpus),
                    mems: c.from.mems.union(&c.to.mems),
                }
            } else {
                c.to.clone()
            }
        })
        .collect();
    for (c, g) in changes.iter().zip(&grown) {
        step(&c.cgroup, &c.from, g);
    }
    for ((c, g), &inner) in changes.iter().zip(&grown).zip(&interior).rev() {
        if inner {
            step(&c.cgroup, g, &c.to);
        }
    }
    Ok(writes)
}

/// Performs `writes` in order; on failure returns how many whole steps were done and the
/// error (the caller rolls back from the sets it read before).
pub fn execute(backend: &dyn Backend, writes: &[Write]) -> Result<(), (usize, Error)> {
    for (i, w) in writes.iter().enumerate() {
        if let Some(cpus) = &w.cpus {
            backend.set_cpus(&w.cgroup, cpus).map_err(|e| (i, e))?;
        }
        if let Some(mems) = &w.mems {
            backend.set_mems(&w.cgroup, mems).map_err(|e| (i, e))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sets(cpus: &str, mems: &str) -> Sets {
        Sets {
            cpus: cpus.parse().unwrap(),
            mems: mems.parse().unwrap(),
        }
    }

    fn change(cg: &str, from: (&str, &str), to: (&str, &str)) -> Change {
        Change {
            cgroup: CgroupPath::parse(cg).unwrap(),
            from: sets(from.0, from.1),
            to: sets(to.0, to.1),
        }
    }

    fn show(writes: &[Write]) -> Vec<String> {
        writes
            .iter()
            .map(|w| {
                format!(
                    "{} cpus={} mems={}",
                    w.cgroup,
                    w.cpus.as_ref().map_or("-".into(), ToString::to_string),
                    w.mems.as_ref().map_or("-".into(), ToString::to_string)
                )
            })
            .collect()
    }

    /// Checks the v1 invariants after every single file write, as the kernel would.
    fn replay_v1(changes: &[Change], writes: &[Write]) {
        let mut now: Vec<Sets> = changes.iter().map(|c| c.from.clone()).collect();
        let idx = |cg: &CgroupPath| changes.iter().position(|c| &c.cgroup == cg).unwrap();
        let check = |now: &[Sets]| {
            for (i, c) in changes.iter().enumerate() {
                assert!(
                    !now[i].cpus.is_empty() && !now[i].mems.is_empty(),
                    "ENOSPC at {}",
                    c.cgroup
                );
                if let Some(p) = c
                    .cgroup
                    .parent()
                    .and_then(|p| changes.iter().position(|c| c.cgroup == p))
                {
                    assert!(
                        now[i].cpus.is_subset(&now[p].cpus),
                        "cpus of {} outside parent",
                        c.cgroup
                    );
                    assert!(
                        now[i].mems.is_subset(&now[p].mems),
                        "mems of {} outside parent",
                        c.cgroup
                    );
                }
            }
        };
        for w in writes {
            let i = idx(&w.cgroup);
            if let Some(c) = &w.cpus {
                now[i].cpus = c.clone();
                check(&now);
            }
            if let Some(m) = &w.mems {
                now[i].mems = m.clone();
                check(&now);
            }
        }
        for (i, c) in changes.iter().enumerate() {
            assert_eq!(now[i], c.to, "{} did not reach its target", c.cgroup);
        }
    }

    #[test]
    fn single_leaf_is_written_once() {
        let changes = [change("/docker/abc", ("0-3", "0"), ("4-7", "1"))];
        let w = order(&changes).unwrap();
        assert_eq!(show(&w), ["/docker/abc cpus=4-7 mems=1"]);
        replay_v1(&changes, &w);
    }

    #[test]
    fn unchanged_values_are_not_rewritten() {
        let changes = [change("/a", ("0-3", "0"), ("0-3", "1"))];
        assert_eq!(show(&order(&changes).unwrap()), ["/a cpus=- mems=1"]);
        assert!(
            order(&[change("/a", ("0-3", "0"), ("0-3", "0"))])
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn disjoint_move_of_a_pod_grows_then_shrinks() {
        // A kubepods pod cgroup with two containers, moved from node 0 to node 1.
        let changes = [
            change("/pod", ("0-3", "0"), ("4-7", "1")),
            change("/pod/c1", ("0-3", "0"), ("4-7", "1")),
            change("/pod/c1/sub", ("0-1", "0"), ("4-7", "1")),
            change("/pod/c2", ("2-3", "0"), ("4-7", "1")),
        ];
        let w = order(&changes).unwrap();
        assert_eq!(
            show(&w),
            [
                "/pod cpus=0-7 mems=0-1",
                "/pod/c1 cpus=0-7 mems=0-1",
                "/pod/c1/sub cpus=4-7 mems=1",
                "/pod/c2 cpus=4-7 mems=1",
                "/pod/c1 cpus=4-7 mems=1",
                "/pod cpus=4-7 mems=1",
            ]
        );
        replay_v1(&changes, &w);
        // And back again (a rollback), to different sets per cgroup.
        let back: Vec<Change> = changes
            .iter()
            .map(|c| Change {
                cgroup: c.cgroup.clone(),
                from: c.to.clone(),
                to: c.from.clone(),
            })
            .collect();
        replay_v1(&back, &order(&back).unwrap());
    }

    #[test]
    fn targets_that_do_not_nest_are_refused() {
        let changes = [
            change("/pod", ("0-3", "0"), ("4-5", "1")),
            change("/pod/c1", ("0-3", "0"), ("4-7", "1")),
        ];
        let err = order(&changes).unwrap_err();
        assert_eq!(err.child.to_string(), "/pod/c1");
    }
}
