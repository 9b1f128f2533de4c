//! The sharing hierarchy: hwloc's levels reduced to the ones that can change a container's
//! performance, as a strict tree from the whole machine down to the finest shared resource.
//!
//! Each level is a partition of the usable PUs. Levels with the same partition are one
//! resource as far as placement can tell (the thesis's "L2/SMT": an Intel core, its L1 and its
//! L2 cannot be separated), so they merge. A level where every instance is a single PU, or a
//! single instance covers the machine, never varies between placements and is dropped.

use crate::cpuset::CpuSet;

use super::topology::{LevelKind, RawLevel};

/// One instance of a level: a shared resource and the PUs that share it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Instance {
    pub cpus: CpuSet,
    /// Index of the containing instance one level up (0 at the top level).
    pub parent: usize,
    /// Indices of the contained instances one level down (empty at the finest level).
    pub children: Vec<usize>,
}

/// A level of the tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Level {
    /// Unique short name, used for concern names and placement ids: `numa`, `core`, `l2`...
    pub name: String,
    pub kind: LevelKind,
    /// Every hwloc level merged into this one, for the summary: `NUMA`, `L3`, `Package`...
    pub merged: Vec<String>,
    pub cache_bytes: Option<u64>,
    pub instances: Vec<Instance>,
}

impl Level {
    /// PUs per instance: (smallest, largest). Differs on hybrid or restricted machines.
    pub fn capacity(&self) -> (usize, usize) {
        let sizes = self.instances.iter().map(|i| i.cpus.len());
        (sizes.clone().min().unwrap_or(0), sizes.max().unwrap_or(0))
    }
}

/// The tree, coarsest level first.
#[derive(Debug, Clone)]
pub struct Hierarchy {
    pub levels: Vec<Level>,
    /// The level whose instances are given to containers exclusively.
    pub unit_level: usize,
    /// The level of NUMA nodes (equal to `unit_level` unless a machine file chose another).
    pub numa_level: usize,
    /// What was left out and why, for the machine summary.
    pub notes: Vec<String>,
}

/// A partition offered to the hierarchy, before merging.
#[derive(Debug, Clone)]
pub struct PartitionInput {
    pub name: String,
    pub kind: LevelKind,
    pub cache_bytes: Option<u64>,
    pub sets: Vec<CpuSet>,
}

impl PartitionInput {
    pub fn from_raw(raw: &RawLevel) -> Self {
        Self {
            name: raw.name.clone(),
            kind: raw.kind,
            cache_bytes: raw.cache_bytes,
            sets: raw.objects.clone(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HierarchyError {
    #[error(
        "level {name} does not nest with the NUMA nodes: instance {set} straddles several of them"
    )]
    DoesNotNest { name: String, set: CpuSet },
    #[error("level {name} covers PUs {extra} that no NUMA node has, or misses PUs {missing}")]
    NotAPartition {
        name: String,
        extra: CpuSet,
        missing: CpuSet,
    },
    #[error("allocation unit {name:?} is not a level of this machine (levels: {levels})")]
    UnknownUnit { name: String, levels: String },
    #[error("there is no level {name:?} to remove (levels: {levels})")]
    UnknownLevel { name: String, levels: String },
    #[error("level {name:?} is the NUMA level or the allocation unit and cannot be removed")]
    Essential { name: String },
}

struct Partition {
    names: Vec<String>,
    kinds: Vec<LevelKind>,
    custom: bool,
    cache_bytes: Option<u64>,
    sets: Vec<CpuSet>,
}

/// Builds the tree. `numa` are the CPU nodes' PU sets; `custom` partitions come from a
/// machine file and must nest (they are refused, not dropped, when they do not);
/// `unit` names the allocation-unit level (default: the NUMA level).
pub fn build(
    raw: &[RawLevel],
    numa: &[CpuSet],
    custom: Vec<PartitionInput>,
    unit: Option<&str>,
) -> Result<Hierarchy, HierarchyError> {
    let mut notes = Vec::new();
    let partitions = partitions(raw, numa, custom)?;
    let (chain, numa_level) = nest(partitions, &mut notes)?;
    let levels = levels_of(chain);
    let unit_level = match unit {
        None => numa_level,
        Some(u) => levels
            .iter()
            .position(|l| l.name == u || l.merged.iter().any(|m| m.eq_ignore_ascii_case(u)))
            .ok_or_else(|| HierarchyError::UnknownUnit {
                name: u.to_owned(),
                levels: levels
                    .iter()
                    .map(|l| l.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            })?,
    };
    Ok(Hierarchy {
        levels,
        unit_level,
        numa_level,
        notes,
    })
}

/// The distinct partitions of the usable PUs, the NUMA nodes first: hwloc levels and custom
/// ones that split the PUs the same way become one partition with several names.
fn partitions(
    raw: &[RawLevel],
    numa: &[CpuSet],
    custom: Vec<PartitionInput>,
) -> Result<Vec<Partition>, HierarchyError> {
    let usable = numa.iter().fold(CpuSet::new(), |acc, s| acc.union(s));
    let mut partitions: Vec<Partition> = vec![Partition {
        names: vec!["NUMA".into()],
        kinds: vec![LevelKind::Numa],
        custom: false,
        cache_bytes: None,
        sets: numa.to_vec(),
    }];
    let inputs = raw
        .iter()
        .map(|r| (PartitionInput::from_raw(r), false))
        .chain(custom.into_iter().map(|c| (c, true)));
    for (input, is_custom) in inputs {
        let mut sets: Vec<CpuSet> = input
            .sets
            .iter()
            .map(|s| s.intersection(&usable))
            .filter(|s| !s.is_empty())
            .collect();
        sets.sort();
        sets.dedup();
        if is_custom {
            let covered = sets.iter().fold(CpuSet::new(), |acc, s| acc.union(s));
            let all_input = input.sets.iter().fold(CpuSet::new(), |acc, s| acc.union(s));
            if covered != usable {
                return Err(HierarchyError::NotAPartition {
                    name: input.name,
                    extra: all_input.difference(&usable),
                    missing: usable.difference(&covered),
                });
            }
        }
        let existing = partitions.iter().position(|p| {
            let mut a = p.sets.clone();
            a.sort();
            a == sets
        });
        match existing {
            Some(i) => {
                let p = &mut partitions[i];
                p.names.push(input.name);
                p.kinds.push(input.kind);
                p.custom |= is_custom;
                p.cache_bytes = p.cache_bytes.or(input.cache_bytes);
            }
            None => partitions.push(Partition {
                names: vec![input.name],
                kinds: vec![input.kind],
                custom: is_custom,
                cache_bytes: input.cache_bytes,
                sets,
            }),
        }
    }
    Ok(partitions)
}

/// Orders the partitions (the NUMA one first) into one chain from the coarsest to the
/// finest, each refining the one above it, and says where NUMA is in it. Levels that never
/// vary or do not nest are dropped with a note; a custom one that does not nest is an
/// error.
fn nest(
    mut partitions: Vec<Partition>,
    notes: &mut Vec<String>,
) -> Result<(Vec<Partition>, usize), HierarchyError> {
    let numa_sets = partitions[0].sets.clone();
    let mut coarser = Vec::new();
    let mut finer = Vec::new();
    for p in partitions.drain(1..) {
        let label = p.names.join("+");
        let trivial_fine = p.sets.iter().all(|s| s.len() == 1);
        let trivial_coarse = p.sets.len() == 1;
        if !p.custom && (trivial_fine || trivial_coarse) {
            continue;
        }
        if refines(&p.sets, &numa_sets) {
            finer.push(p);
        } else if refines(&numa_sets, &p.sets) {
            coarser.push(p);
        } else if p.custom {
            let set = p
                .sets
                .iter()
                .find(|s| !numa_sets.iter().any(|n| s.is_subset(n)))
                .cloned()
                .unwrap_or_default();
            return Err(HierarchyError::DoesNotNest { name: label, set });
        } else {
            notes.push(format!(
                "hwloc level {label} straddles NUMA nodes without containing them; ignored"
            ));
        }
    }
    let numa = partitions.remove(0);
    // Coarse side, closest to NUMA first; fine side, closest to NUMA first.
    coarser.sort_by_key(|p| std::cmp::Reverse(p.sets.len()));
    finer.sort_by_key(|p| p.sets.len());
    let mut up: Vec<Partition> = Vec::new();
    for p in coarser {
        let below = up.last().map_or(&numa.sets, |q| &q.sets);
        if refines(below, &p.sets) {
            up.push(p);
        } else {
            notes.push(format!(
                "hwloc level {} does not nest with the levels below it; ignored",
                p.names.join("+")
            ));
        }
    }
    let mut down: Vec<Partition> = Vec::new();
    for p in finer {
        let above = down.last().map_or(&numa.sets, |q| &q.sets);
        if refines(&p.sets, above) {
            down.push(p);
        } else {
            notes.push(format!(
                "hwloc level {} does not nest with the levels above it; ignored",
                p.names.join("+")
            ));
        }
    }
    let numa_level = up.len();
    let chain = up
        .into_iter()
        .rev()
        .chain(std::iter::once(numa))
        .chain(down)
        .collect();
    Ok((chain, numa_level))
}

/// The levels of a nested chain, each instance linked to its parent and its children.
fn levels_of(chain: Vec<Partition>) -> Vec<Level> {
    let mut levels: Vec<Level> = Vec::with_capacity(chain.len());
    for p in chain {
        let kind = primary_kind(&p.kinds);
        let name = if p.custom && !p.kinds.contains(&LevelKind::Numa) && kind == LevelKind::Custom {
            p.names.last().cloned().unwrap_or_else(|| "custom".into())
        } else {
            short_name(kind).to_owned()
        };
        let instances = children_of(levels.last(), p.sets);
        if let Some(parent_level) = levels.last_mut() {
            for (ci, c) in instances.iter().enumerate() {
                if let Some(par) = parent_level.instances.get_mut(c.parent) {
                    par.children.push(ci);
                }
            }
        }
        levels.push(Level {
            name,
            kind,
            merged: p.names,
            cache_bytes: p.cache_bytes,
            instances,
        });
    }
    dedupe_names(&mut levels);
    levels
}

/// A level's instances under their parents: in the order of their parents, then of their
/// first PU, so that logical order follows hwloc's.
fn children_of(parent_level: Option<&Level>, mut sets: Vec<CpuSet>) -> Vec<Instance> {
    let Some(parent_level) = parent_level else {
        return sets
            .into_iter()
            .map(|cpus| Instance {
                cpus,
                parent: 0,
                children: Vec::new(),
            })
            .collect();
    };
    let parent_of = |s: &CpuSet| {
        parent_level
            .instances
            .iter()
            .position(|par| s.is_subset(&par.cpus))
    };
    sets.sort_by_key(|s| (parent_of(s), s.first()));
    sets.into_iter()
        .map(|cpus| Instance {
            parent: parent_of(&cpus).unwrap_or(0),
            cpus,
            children: Vec::new(),
        })
        .collect()
}

impl Hierarchy {
    /// Removes a level, re-linking its children to its parent, so that it stops constraining
    /// balance. The NUMA level and the allocation-unit level cannot be removed.
    pub fn remove_level(&mut self, name: &str) -> Result<(), HierarchyError> {
        let idx = self
            .levels
            .iter()
            .position(|l| l.name == name)
            .ok_or_else(|| HierarchyError::UnknownLevel {
                name: name.to_owned(),
                levels: self.level_names(),
            })?;
        if idx == self.unit_level || idx == self.numa_level {
            return Err(HierarchyError::Essential {
                name: name.to_owned(),
            });
        }
        let removed = self.levels.remove(idx);
        if idx < self.levels.len() {
            // The level below now hangs off the removed level's parents.
            let grand: Vec<usize> = removed.instances.iter().map(|i| i.parent).collect();
            for child in &mut self.levels[idx].instances {
                child.parent = grand.get(child.parent).copied().unwrap_or(0);
            }
            if idx > 0 {
                let (upper, lower) = self.levels.split_at_mut(idx);
                let parents = &mut upper[idx - 1].instances;
                for p in parents.iter_mut() {
                    p.children.clear();
                }
                for (ci, c) in lower[0].instances.iter().enumerate() {
                    if let Some(p) = parents.get_mut(c.parent) {
                        p.children.push(ci);
                    }
                }
            } else {
                for c in &mut self.levels[0].instances {
                    c.parent = 0;
                }
            }
        } else if idx > 0 {
            for p in &mut self.levels[idx - 1].instances {
                p.children.clear();
            }
        }
        if self.unit_level > idx {
            self.unit_level -= 1;
        }
        if self.numa_level > idx {
            self.numa_level -= 1;
        }
        Ok(())
    }

    pub fn level_names(&self) -> String {
        self.levels
            .iter()
            .map(|l| l.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Every set of `fine` lies inside one set of `coarse` (both partitions of the same PUs).
fn refines(fine: &[CpuSet], coarse: &[CpuSet]) -> bool {
    fine.iter().all(|f| coarse.iter().any(|c| f.is_subset(c)))
}

/// The name a merged level goes by: the NUMA node if it is one, else the resource closest
/// to the cores (an Intel core with its private L2 is a "core"; a Bulldozer module is "l2").
fn primary_kind(kinds: &[LevelKind]) -> LevelKind {
    const PRIORITY: [LevelKind; 11] = [
        LevelKind::Numa,
        LevelKind::Core,
        LevelKind::L2,
        LevelKind::L3,
        LevelKind::L1,
        LevelKind::L4,
        LevelKind::L5,
        LevelKind::Die,
        LevelKind::Package,
        LevelKind::Group,
        LevelKind::Custom,
    ];
    PRIORITY
        .into_iter()
        .find(|k| kinds.contains(k))
        .unwrap_or(LevelKind::Custom)
}

fn short_name(kind: LevelKind) -> &'static str {
    match kind {
        LevelKind::Core => "core",
        LevelKind::L1 => "l1",
        LevelKind::L2 => "l2",
        LevelKind::L3 => "l3",
        LevelKind::L4 => "l4",
        LevelKind::L5 => "l5",
        LevelKind::Die => "die",
        LevelKind::Package => "package",
        LevelKind::Group => "group",
        LevelKind::Numa => "numa",
        LevelKind::Custom => "custom",
    }
}

/// Two Group levels (or two L3 levels on odd machines) become `group` and `group2`, counting
/// from the coarsest.
fn dedupe_names(levels: &mut [Level]) {
    for i in 0..levels.len() {
        let base = levels[i].name.clone();
        let mut n = 1;
        for later in levels.iter_mut().skip(i + 1) {
            if later.name == base {
                n += 1;
                later.name = format!("{base}{n}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sets(list: &[&str]) -> Vec<CpuSet> {
        list.iter().map(|s| s.parse().unwrap()).collect()
    }

    fn raw(name: &str, kind: LevelKind, list: &[&str]) -> RawLevel {
        RawLevel {
            name: name.into(),
            kind,
            cache_bytes: None,
            objects: sets(list),
        }
    }

    #[test]
    fn merges_equal_partitions_and_drops_trivial_ones() {
        // 2 packages = 2 NUMA nodes = 2 L3, cores of 2 PUs sharing an L2, private L1d.
        let levels = [
            raw("Package", LevelKind::Package, &["0-3", "4-7"]),
            raw("L3", LevelKind::L3, &["0-3", "4-7"]),
            raw("L2", LevelKind::L2, &["0-1", "2-3", "4-5", "6-7"]),
            raw("Core", LevelKind::Core, &["0-1", "2-3", "4-5", "6-7"]),
            raw(
                "L1d",
                LevelKind::L1,
                &["0", "1", "2", "3", "4", "5", "6", "7"],
            ),
        ];
        let h = build(&levels, &sets(&["0-3", "4-7"]), vec![], None).unwrap();
        let names: Vec<_> = h.levels.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(names, ["numa", "core"]);
        assert_eq!(h.levels[0].merged, ["NUMA", "Package", "L3"]);
        assert_eq!(h.levels[1].merged, ["L2", "Core"]);
        assert_eq!(h.unit_level, 0);
        assert_eq!(h.levels[0].instances[1].children, vec![2, 3]);
        assert_eq!(h.levels[1].instances[3].parent, 1);
    }

    #[test]
    fn package_above_numa_is_kept_as_a_coarser_level() {
        let levels = [raw("Package", LevelKind::Package, &["0-7", "8-15"])];
        let h = build(
            &levels,
            &sets(&["0-3", "4-7", "8-11", "12-15"]),
            vec![],
            None,
        )
        .unwrap();
        let names: Vec<_> = h.levels.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(names, ["package", "numa"]);
        assert_eq!(h.unit_level, 1);
        assert_eq!(h.numa_level, 1);
        assert_eq!(h.levels[0].instances[0].children, vec![0, 1]);
    }

    #[test]
    fn straddling_levels_are_dropped_with_a_note_and_custom_ones_refused() {
        let levels = [raw("Group", LevelKind::Group, &["0-5", "6-7"])];
        let numa = sets(&["0-3", "4-7"]);
        let h = build(&levels, &numa, vec![], None).unwrap();
        assert_eq!(h.levels.len(), 1);
        assert_eq!(h.notes.len(), 1);
        let custom = PartitionInput {
            name: "ccx".into(),
            kind: LevelKind::Custom,
            cache_bytes: None,
            sets: sets(&["0-5", "6-7"]),
        };
        assert!(matches!(
            build(&[], &numa, vec![custom], None),
            Err(HierarchyError::DoesNotNest { .. })
        ));
    }

    #[test]
    fn removing_a_middle_level_relinks_the_tree() {
        let levels = [
            raw("Package", LevelKind::Package, &["0-7"]),
            raw("L3", LevelKind::L3, &["0-3", "4-7"]),
            raw("Core", LevelKind::Core, &["0-1", "2-3", "4-5", "6-7"]),
        ];
        let mut h = build(&levels, &sets(&["0-7"]), vec![], None).unwrap();
        assert_eq!(h.level_names(), "numa, l3, core");
        h.remove_level("l3").unwrap();
        assert_eq!(h.level_names(), "numa, core");
        assert_eq!(h.levels[0].instances[0].children, vec![0, 1, 2, 3]);
        assert!(h.levels[1].instances.iter().all(|c| c.parent == 0));
        assert!(matches!(
            h.remove_level("numa"),
            Err(HierarchyError::Essential { .. })
        ));
    }

    #[test]
    fn allocation_unit_can_be_a_finer_level() {
        let levels = [raw("L3", LevelKind::L3, &["0-3", "4-7"])];
        let h = build(&levels, &sets(&["0-7"]), vec![], Some("l3")).unwrap();
        assert_eq!(h.levels[h.unit_level].name, "l3");
        assert_eq!(h.numa_level, 0);
        let err = build(&levels, &sets(&["0-7"]), vec![], Some("ccd")).unwrap_err();
        assert!(matches!(err, HierarchyError::UnknownUnit { .. }));
    }
}
