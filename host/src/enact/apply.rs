//! [`Host::apply`]: check the request, write the subtree in plan order, move the memory,
//! verify through `/proc`, roll back on failure, and report (see the module doc of
//! [`crate::enact`]).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::host::all_procs;
use super::verify::{TaskCheck, check_tasks};
use super::{ApplyOptions, ApplyReport, Error, Host, Rollback};
use crate::cgroup::plan::{self, Change, Sets};
use crate::cgroup::{self, CgroupPath, CpusetState, Version};
use crate::containers::Container;
use crate::kernel::fs::{IoError, Op};
use crate::migrate::{self, MigrationReport, Mode, MoveOptions, NodeBytes};
use placed_core::cpuset::{CpuSet, NodeSet};

impl Host {
    /// Puts `container` on `cpus` and `mems`, moving its memory in `mode`.
    pub fn apply(
        &self,
        container: &Container,
        cpus: &CpuSet,
        mems: &NodeSet,
        mode: &Mode,
    ) -> Result<ApplyReport, Error> {
        self.apply_with(container, cpus, mems, mode, &ApplyOptions::default())
    }

    /// [`Host::apply`] with explicit options.
    pub fn apply_with(
        &self,
        container: &Container,
        cpus: &CpuSet,
        mems: &NodeSet,
        mode: &Mode,
        opts: &ApplyOptions,
    ) -> Result<ApplyReport, Error> {
        let started = Instant::now();
        let cg = &container.cgroup;
        self.check_request(cg, cpus, mems)?;
        self.cgroups.prepare(cg)?;
        let tree = self.cgroups.subtree(cg)?;
        let before = self.sets_before(&tree)?;
        let pids = self.procs(&tree)?;
        let footprint_before = self.proc.footprint(&pids)?;
        let target = Sets {
            cpus: cpus.clone(),
            mems: mems.clone(),
        };

        let mut run = Run {
            host: self,
            before: &before,
            write_time: Duration::ZERO,
        };
        let outcome = run.enact(cg, &target, mode, opts, &footprint_before);
        let failed = |cause: Error, run: &mut Run| {
            let rollback = match run.restore() {
                Ok(()) => Rollback::Restored,
                Err(e) => Rollback::Failed(e.to_string()),
            };
            tracing::warn!(container = %container.label(), error = %cause, %rollback, "placement failed");
            Error::Failed {
                container: container.label(),
                cpus: cpus.clone(),
                mems: mems.clone(),
                rollback,
                cause: Box::new(cause),
            }
        };
        let mut done = match outcome {
            Ok(o) => o,
            Err(e) => return Err(failed(e, &mut run)),
        };
        let check = match self.verify(&tree, &done.top) {
            Ok(c) => c,
            Err(e) => return Err(failed(e, &mut run)),
        };
        // Verified: the container is where it should be. From here on nothing undoes the
        // move; what cannot be measured is a warning.
        let pids_after = self.procs(&tree).unwrap_or(pids);
        let mut warnings = std::mem::take(&mut done.warnings);
        let migration = self.measure_migration(
            container,
            (mode, mems),
            &done,
            footprint_before,
            &pids_after,
            &mut warnings,
        );
        let report = ApplyReport {
            container: container.clone(),
            version: self.cgroups.version(),
            before: before
                .first()
                .map(|(_, s)| Sets {
                    cpus: s.cpus.clone(),
                    mems: s.mems.clone(),
                })
                .unwrap_or_else(|| target.clone()),
            // What verify() read back as the effective sets.
            after: done.top,
            cgroups: tree.len(),
            cpuset_write: run.write_time,
            migration,
            tasks_checked: check.checked,
            total: started.elapsed(),
            warnings,
        };
        tracing::info!(
            container = %container.label(),
            cpus = %report.after.cpus,
            mems = %report.after.mems,
            mode = mode.name(),
            moved = report.migration.bytes_moved,
            left = report.migration.left_on_old_nodes,
            took = ?report.total,
            "placed"
        );
        Ok(report)
    }

    /// The sets to restore on failure. On v2, descendants without the cpuset controller
    /// inherit the container's and are neither written nor restored.
    fn sets_before(&self, tree: &[CgroupPath]) -> Result<Vec<(CgroupPath, CpusetState)>, Error> {
        let mut before = Vec::new();
        for (i, c) in tree.iter().enumerate() {
            match self.cgroups.cpuset(c) {
                Ok(s) => before.push((c.clone(), s)),
                Err(cgroup::Error::MissingFile { .. } | cgroup::Error::Vanished { .. })
                    if i > 0 => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(before)
    }

    /// The migration's account after a verified move: memory per node afterwards, what
    /// moved and what is left. What cannot be read is a warning, not an error.
    fn measure_migration(
        &self,
        container: &Container,
        (mode, mems): (&Mode, &NodeSet),
        done: &Enacted,
        footprint_before: NodeBytes,
        pids_after: &[u32],
        warnings: &mut Vec<String>,
    ) -> MigrationReport {
        let footprint_after = match self.proc.footprint(pids_after) {
            Ok(f) => Some(f),
            Err(e) => {
                let w = format!(
                    "the move is done, but the memory per node afterwards could not be read \
                     ({}); the report's memory after, what is left on the old nodes and (kernel \
                     mode) the bytes moved are not measured",
                    placed_core::text::error_line(&e)
                );
                tracing::warn!(container = %container.label(), warning = %w, "placed, partly unmeasured");
                warnings.push(w);
                None
            }
        };
        let left = footprint_after.as_ref().map_or(0, |f| f.outside(mems));
        let workers_moved = done.workers.as_ref().map_or(0, |w| w.bytes_moved);
        // What left the old nodes, by numa_maps; the workers' exact count when larger (the
        // processes may have allocated meanwhile).
        let bytes_moved = match &footprint_after {
            Some(_) => workers_moved.max(footprint_before.outside(mems).saturating_sub(left)),
            None => workers_moved,
        };
        if let Mode::Throttled { bytes_per_sec } = mode {
            // The new CPUs come first, so the kernel's automatic NUMA balancing pulls hot
            // pages after the threads at its own pace: only what the worker moves is capped.
            let uncapped = bytes_moved.saturating_sub(workers_moved);
            if uncapped > 0 && self.proc.numa_balancing() {
                let w = format!(
                    "automatic NUMA balancing (kernel.numa_balancing) moved {} toward the new \
                     CPUs itself, outside the {}/s cap; set kernel.numa_balancing=0 for a \
                     strict cap",
                    placed_core::text::human_bytes(uncapped),
                    placed_core::text::human_bytes(*bytes_per_sec)
                );
                tracing::warn!(container = %container.label(), warning = %w, "throttle bypassed");
                warnings.push(w);
            }
        }
        MigrationReport {
            mode: mode.clone(),
            bytes_moved,
            duration: done.duration,
            frozen_for: done.frozen_for,
            before: footprint_before,
            after: footprint_after.unwrap_or_default(),
            left_on_old_nodes: left,
            workers: done.workers.clone(),
            cancelled: done.cancelled,
        }
    }

    /// Refuses requests the host cannot satisfy, before anything is written.
    fn check_request(&self, cg: &CgroupPath, cpus: &CpuSet, mems: &NodeSet) -> Result<(), Error> {
        if cg.is_root() {
            return Err(Error::RootCgroup);
        }
        if cpus.is_empty() {
            return Err(Error::Empty { what: "CPU set" });
        }
        if mems.is_empty() {
            return Err(Error::Empty {
                what: "memory node set",
            });
        }
        let online = self.online_cpus()?;
        if !cpus.is_subset(&online) {
            return Err(Error::OfflineCpus {
                missing: cpus.difference(&online),
                online,
            });
        }
        let with_memory = self.memory_nodes()?;
        if !mems.is_subset(&with_memory) {
            return Err(Error::NodesWithoutMemory {
                missing: mems.difference(&with_memory),
                with_memory,
            });
        }
        if !self.cgroups.exists(cg)? {
            return Err(cgroup::Error::Vanished {
                path: cg.under(self.cgroups.root()),
                source: Box::new(IoError {
                    op: Op::Read,
                    path: cg.under(self.cgroups.root()),
                    value: None,
                    source: std::io::Error::from_raw_os_error(libc::ENOENT),
                }),
            }
            .into());
        }
        if let Some(parent) = cg.parent() {
            let p = self.effective_of(&parent)?;
            if !cpus.is_subset(&p.effective_cpus) || !mems.is_subset(&p.effective_mems) {
                return Err(Error::OutsideParent {
                    cpus: cpus.clone(),
                    mems: mems.clone(),
                    parent,
                    parent_cpus: p.effective_cpus,
                    parent_mems: p.effective_mems,
                });
            }
        }
        Ok(())
    }

    /// Reads back every cgroup written and checks every task.
    fn verify(&self, tree: &[CgroupPath], target: &Sets) -> Result<TaskCheck, Error> {
        let mut problems = Vec::new();
        if let Some(top) = tree.first() {
            let s = self.cgroups.cpuset(top)?;
            if s.effective_cpus != target.cpus || s.effective_mems != target.mems {
                problems.push(format!(
                    "{top} reads back cpus {} mems {} instead of cpus {} mems {}",
                    s.effective_cpus, s.effective_mems, target.cpus, target.mems
                ));
            }
        }
        let check = check_tasks(&self.cgroups, &self.proc, tree)?;
        problems.extend(check.problems.iter().cloned());
        if problems.is_empty() {
            Ok(check)
        } else {
            Err(Error::Verify {
                bad: problems.len().max(check.bad),
                problems,
            })
        }
    }
}

/// One apply in progress: the sets it started from, for the rollback.
struct Run<'a> {
    host: &'a Host,
    before: &'a [(CgroupPath, CpusetState)],
    write_time: Duration,
}

/// What [`Run::enact`] did.
struct Enacted {
    /// The workers' account (fast and throttled modes, when there was memory to move).
    workers: Option<migrate::MoveStats>,
    /// How long the cgroup was frozen, if it was.
    frozen_for: Option<Duration>,
    /// The whole migration, first write (or freeze) to last write.
    duration: Duration,
    /// The container cgroup's sets as finally written, to verify against: the target, or
    /// after a cancelled throttled move the target's CPUs with the old and new nodes.
    top: Sets,
    cancelled: bool,
    warnings: Vec<String>,
}

/// `target` with the nodes `from` allows now added: the first step of the fast and
/// throttled modes, which migrates nothing.
fn widened(from: &CpusetState, target: &Sets) -> Sets {
    Sets {
        cpus: target.cpus.clone(),
        // On v2 an empty `cpuset.mems` inherits: what it allows is the effective set.
        mems: if from.mems.is_empty() {
            from.effective_mems.union(&target.mems)
        } else {
            from.mems.union(&target.mems)
        },
    }
}

impl Run<'_> {
    /// Moves the memory of every process of the container's tree, listed again as the
    /// workers go (processes come and go during a long move), to `to`.
    fn move_memory(
        &self,
        cg: &CgroupPath,
        to: &NodeSet,
        opts: &MoveOptions,
        cancel: &AtomicBool,
    ) -> Result<migrate::MoveStats, Error> {
        let cgroups = &self.host.cgroups;
        let list = || {
            let tree = cgroups.subtree(cg)?;
            all_procs(cgroups, &tree)
        };
        Ok(migrate::move_memory(
            &self.host.proc,
            &list,
            to,
            opts,
            cancel,
        )?)
    }

    /// Writes the sets and moves the memory.
    fn enact(
        &mut self,
        cg: &CgroupPath,
        target: &Sets,
        mode: &Mode,
        opts: &ApplyOptions,
        footprint: &NodeBytes,
    ) -> Result<Enacted, Error> {
        let started = Instant::now();
        let has_memory_elsewhere = footprint.outside(&target.mems) > 0;
        let done = |workers, frozen_for, top: &Sets| Enacted {
            workers,
            frozen_for,
            duration: started.elapsed(),
            top: top.clone(),
            cancelled: false,
            warnings: Vec::new(),
        };
        match mode {
            Mode::Kernel => {
                self.write_all(|_, _| target.clone())?;
                Ok(done(None, None, target))
            }
            // Nothing to move: one write, as the kernel mode does.
            Mode::Fast { .. } | Mode::Throttled { .. } if !has_memory_elsewhere => {
                self.write_all(|_, _| target.clone())?;
                Ok(done(None, None, target))
            }
            Mode::Fast { .. } | Mode::Throttled { .. } => {
                let (workers, freeze, rate) = match mode {
                    Mode::Fast { workers, freeze } => (*workers, *freeze, None),
                    Mode::Throttled { bytes_per_sec } => (1, false, Some(*bytes_per_sec)),
                    Mode::Kernel => (1, false, None),
                };
                let frozen = if freeze {
                    Some(self.host.cgroups.freeze(cg, opts.freeze_timeout)?)
                } else {
                    None
                };
                // Step 1: new CPUs, old and new nodes (nothing migrates yet).
                self.write_all(|_, now| widened(now, target))?;
                let never = AtomicBool::new(false);
                let cancel = opts.cancel.as_deref().unwrap_or(&never);
                let move_opts = MoveOptions {
                    workers: workers.max(1),
                    rate,
                    chunk_pages: opts.chunk_pages,
                    whole_process_bytes: opts.whole_process_bytes,
                    hold: opts.hold.clone(),
                };
                let stats = self.move_memory(cg, &target.mems, &move_opts, cancel)?;
                let cancelled = cancel.load(Ordering::Relaxed);
                if cancelled && rate.is_some() {
                    // Throttled and cancelled: the second write would have the kernel move
                    // whatever the worker had not reached, at full speed, under a
                    // latency-sensitive container. Keep both nodes instead.
                    let top = self
                        .before
                        .first()
                        .map_or_else(|| target.clone(), |(_, from)| widened(from, target));
                    let w = format!(
                        "cancelled: the throttled move stopped after {} moved; the cgroup \
                         keeps cpus {} and mems {} (old and new nodes) so that nothing moves \
                         uncapped; apply again to finish",
                        placed_core::text::human_bytes(stats.bytes_moved),
                        top.cpus,
                        top.mems
                    );
                    tracing::warn!(container = %cg, warning = %w, "move cancelled");
                    return Ok(Enacted {
                        cancelled,
                        warnings: vec![w],
                        ..done(Some(stats), None, &top)
                    });
                }
                // Step 2: only the new nodes; the kernel sweeps what the workers missed
                // (after a cancel: everything they did not reach).
                self.write_all(|_, _| target.clone())?;
                let frozen_for = match frozen {
                    Some(g) => Some(g.thaw()?),
                    None => None,
                };
                let mut warnings = Vec::new();
                if cancelled {
                    let w = format!(
                        "cancelled: the workers stopped after {} moved; the kernel moved the \
                         rest in the final cpuset write",
                        placed_core::text::human_bytes(stats.bytes_moved)
                    );
                    tracing::warn!(container = %cg, warning = %w, "move cancelled");
                    warnings.push(w);
                }
                Ok(Enacted {
                    cancelled,
                    warnings,
                    ..done(Some(stats), frozen_for, target)
                })
            }
        }
    }

    /// Writes `next(first, now)` to every cgroup of the subtree, from what is configured now
    /// (`now`) and what was before the apply (`first`), in plan order. Descendants that
    /// inherit on v2 are left alone: they are neither written nor restored.
    fn write_all(
        &mut self,
        next: impl Fn(&CpusetState, &CpusetState) -> Sets,
    ) -> Result<(), Error> {
        let cgroups = &self.host.cgroups;
        let mut changes = Vec::new();
        for (i, (cg, first)) in self.before.iter().enumerate() {
            let v2_inherits = cgroups.version() == Version::V2
                && i > 0
                && first.cpus.is_empty()
                && first.mems.is_empty();
            if v2_inherits {
                continue;
            }
            let now = match cgroups.cpuset(cg) {
                Ok(s) => s,
                Err(cgroup::Error::Vanished { .. }) if i > 0 => continue,
                Err(e) => return Err(e.into()),
            };
            changes.push(Change {
                cgroup: cg.clone(),
                from: Sets {
                    cpus: now.cpus.clone(),
                    mems: now.mems.clone(),
                },
                to: next(first, &now),
            });
        }
        self.execute(&changes)
    }

    fn execute(&mut self, changes: &[Change]) -> Result<(), Error> {
        let writes = plan::order(changes).map_err(|e| {
            Error::Cgroup(cgroup::Error::Unexpected {
                path: e.child.under(self.host.cgroups.root()),
                content: e.to_string(),
            })
        })?;
        let t = Instant::now();
        let r = plan::execute(self.host.cgroups.backend().as_ref(), &writes);
        self.write_time += t.elapsed();
        r.map_err(|(_, e)| e.into())
    }

    /// Writes back the sets the apply started from.
    fn restore(&mut self) -> Result<(), Error> {
        self.write_all(|first, _| Sets {
            cpus: first.cpus.clone(),
            mems: first.mems.clone(),
        })
    }
}
