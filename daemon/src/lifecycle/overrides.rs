//! One container's cpuset checked against what placed enacted, and a difference handled by
//! its override policy: reassert (with a limit), adopt or leave ([`placed_core::reconcile`]).
//! The check the reconciliation's watches, the resync and the start-up all run.

use crate::state::{Assigned, ContainerRecord, Cpuset, OverrideRecord};
use crate::telemetry::ActionLabel;
use placed_core::reconcile::{Action, Backoff, Difference, OnOverride, compare};

use super::core::Core;
use super::error::{DaemonError, joined};
use super::events::{Event, EventKind, now_ms};
use super::handle::Handle;
use super::moving::{Journal, target_at};

/// What a check finds, from the record and the sets in effect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Nothing to compare (never placed, or a move in flight), or where placed put it.
    Agrees,
    /// Where placed put it again, after an override that was left or given up on: someone
    /// else put it back.
    Back,
    /// The override already reported and handled (left, or given up on) is still there.
    Known,
    /// A change not seen before.
    New(Difference),
}

/// Compares the container's record with the sets found in effect.
pub(crate) fn verdict(rec: &ContainerRecord, found: &Cpuset) -> Verdict {
    let Some(a) = &rec.assigned else {
        return Verdict::Agrees;
    };
    if rec.migration.is_some() || rec.resume.is_some() {
        return Verdict::Agrees;
    }
    let expected = Cpuset {
        cpus: a.cpus.clone(),
        mems: a.mems.clone(),
    };
    let standing = rec
        .overridden
        .as_ref()
        .filter(|o| matches!(o.action, Action::Left | Action::GaveUp));
    match (compare(&expected, found), standing) {
        (None, Some(_)) => Verdict::Back,
        (None, None) => Verdict::Agrees,
        (Some(_), Some(o)) if &o.found == found => Verdict::Known,
        (Some(d), _) => Verdict::New(d),
    }
}

/// The sets in effect for the container now; `None` when its cgroup is gone.
async fn found(handle: &Handle) -> Result<Option<Cpuset>, DaemonError> {
    let container = handle.with(|e| e.container.clone())?;
    let core = handle.core.clone();
    let cg = container.cgroup.clone();
    let read = tokio::task::spawn_blocking(move || core.node.host.effective_cpuset(&cg)).await;
    match joined("reading a cpuset", read)? {
        Ok(now) => Ok(Some(Cpuset {
            cpus: now.effective_cpus,
            mems: now.effective_mems,
        })),
        Err(_) if handle.vanished() => Ok(None),
        Err(source) => Err(DaemonError::Host {
            doing: "reading the cpuset of",
            container: container.label(),
            source: Box::new(source),
        }),
    }
}

/// Compares the container's cpuset with its record and acts on a difference. A first look
/// takes no lock (most checks find the container where placed put it); a difference, or a
/// move in progress, is looked at again under the container's operation lock, once the
/// move has ended: a write seen while placed itself was moving the container may be
/// someone else's, and a move that failed may have left the kernel elsewhere than its
/// record (issue 28: after a rollback while systemd rewrote the cpuset, the record and the
/// kernel disagreed until a restart).
pub(crate) async fn check(handle: &Handle) -> Result<(), DaemonError> {
    let Some(now) = found(handle).await? else {
        return Ok(());
    };
    let rec = handle.record()?;
    handle.core.telemetry.metrics.cpuset_checks.inc();
    if settled_at_first_look(&rec, &now) {
        return Ok(());
    }
    let _guard = handle.begin("checking its cpuset").await?;
    let Some(now) = found(handle).await? else {
        return Ok(());
    };
    let rec = handle.record()?;
    match verdict(&rec, &now) {
        Verdict::Agrees | Verdict::Known => Ok(()),
        Verdict::Back => {
            handle.with(|e| e.record.overridden = None)?;
            handle.event(
                EventKind::State,
                rec.state,
                rec.assigned.as_ref().and_then(|a| a.placement.clone()),
                format!("its cpuset is back where placed put it ({now})"),
            );
            handle.core.persist().await
        }
        Verdict::New(d) => act(handle, &rec, d).await,
    }
}

/// Whether a check can stop at its first look, without the container's lock: the container
/// is where its record says and no move of placed's is in flight. A write seen during a
/// move may be someone else's, and the move may yet fail and leave the kernel elsewhere
/// than the record: such a check looks again once the move has ended.
fn settled_at_first_look(rec: &ContainerRecord, found: &Cpuset) -> bool {
    let in_flight = rec.migration.is_some() || rec.resume.is_some();
    !in_flight && verdict(rec, found) == Verdict::Agrees
}

/// Reports an override and applies the container's policy to it. The caller holds the
/// container's operation lock.
async fn act(handle: &Handle, rec: &ContainerRecord, d: Difference) -> Result<(), DaemonError> {
    let core = &handle.core;
    let action = choose(handle, rec)?;
    let adoption = (action == Action::Adopted).then(|| adopted(core, rec, &d.found));
    let record = OverrideRecord {
        expected: d.expected.clone(),
        found: d.found.clone(),
        action,
        unix_ms: now_ms(),
    };
    report(core, rec, &d, &record, adoption.as_ref());
    match (action, adoption) {
        (Action::Reasserted, _) => {
            let Some(a) = rec.assigned.clone() else {
                return Ok(());
            };
            let target = target_at(a, "written back after a change outside placed");
            let mode = core.settings.migration_mode();
            handle.move_to(&target, &mode, Journal::EachMove).await?;
            // The move ends what an earlier override held; this one stays on record.
            handle.with(|e| e.record.overridden = Some(record))?;
            handle.set_state(rec.state, &rec.detail);
        }
        (Action::Adopted, Some(assigned)) => {
            let freed = handle.with(|e| {
                let before = e.record.assigned.replace(assigned.clone());
                e.record.overridden = Some(record);
                before.is_some_and(|b| b.units != assigned.units)
            })?;
            if freed {
                core.containers.wake_sharers(&rec.id);
            }
        }
        _ => handle.with(|e| e.record.overridden = Some(record))?,
    }
    core.persist().await
}

/// What the container's override policy does with a change now.
fn choose(handle: &Handle, rec: &ContainerRecord) -> Result<Action, DaemonError> {
    let config = handle.core.settings.config();
    Ok(match rec.on_override.unwrap_or(config.policy.on_override) {
        OnOverride::Leave => Action::Left,
        OnOverride::Adopt => Action::Adopted,
        // Once given up, it stays given up until the operator places the container again.
        OnOverride::Reassert
            if rec.overridden.as_ref().map(|o| o.action) == Some(Action::GaveUp) =>
        {
            Action::GaveUp
        }
        OnOverride::Reassert => {
            let rule = Backoff {
                limit: config.policy.reassert_limit,
                window: config.policy.reassert_window,
            };
            let now = tokio::time::Instant::now();
            if handle.with(|e| rule.admit(&mut e.reasserts, now))? {
                Action::Reasserted
            } else {
                Action::GaveUp
            }
        }
    })
}

/// Says what happened, in the log, the metrics and an `Overridden` event.
fn report(
    core: &Core,
    rec: &ContainerRecord,
    d: &Difference,
    record: &OverrideRecord,
    adoption: Option<&Assigned>,
) {
    let policy = &core.settings.config().policy;
    let action = record.action;
    let what = match action {
        Action::Reasserted => "writing its placement back".to_owned(),
        Action::Adopted => match adoption.and_then(|a| a.placement.as_deref()) {
            Some(p) => format!(
                "adopted as placement {p}; placed no longer moves it until it is placed again"
            ),
            None => {
                "adopted as an external cpuset; placed no longer moves it until it is placed again"
                    .to_owned()
            }
        },
        Action::Left => "left as it is (on-override leave)".to_owned(),
        Action::GaveUp => format!(
            "not written back: the limit of {} write-backs in {} s is spent (another controller keeps changing it); placed no longer moves it until it is placed again",
            policy.reassert_limit,
            policy.reassert_window.as_secs()
        ),
    };
    let message = format!("cpuset changed outside placed: {d}; {what}");
    tracing::warn!(
        container = %rec.name,
        expected = %d.expected,
        found = %d.found,
        action = action.name(),
        "{message}"
    );
    let metrics = &core.telemetry.metrics;
    metrics.per_container.overridden(&rec.id);
    metrics
        .overrides
        .get_or_create(&ActionLabel {
            action: action.name().into(),
        })
        .inc();
    core.telemetry.send(Event {
        unix_ms: record.unix_ms,
        container: rec.id.clone(),
        kind: EventKind::Overridden,
        state: rec.state,
        placement: rec.assigned.as_ref().and_then(|a| a.placement.clone()),
        message,
        cpuset_override: Some(record.clone()),
        outcome: None,
        labels: rec.labels.clone(),
    });
}

/// The placement an adopted cpuset stands for: the important placement for the container's
/// vCPUs with exactly these sets (and its units), else an external cpuset holding no unit:
/// placed reserves only what it chose.
fn adopted(core: &Core, rec: &ContainerRecord, found: &Cpuset) -> Assigned {
    let matching = core.node.placements(rec.vcpus).ok().and_then(|set| {
        set.placements
            .iter()
            .find(|p| p.cpus == found.cpus && p.mems == found.mems)
            .cloned()
    });
    match matching {
        Some(p) => Assigned {
            placement: Some(p.id),
            units: p.units,
            cpus: p.cpus,
            mems: p.mems,
        },
        None => Assigned {
            placement: None,
            units: Vec::new(),
            cpus: found.cpus.clone(),
            mems: found.mems.clone(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::{Lifecycle, Migration};
    use placed_core::policy::Policy;

    fn sets(cpus: &str, mems: &str) -> Cpuset {
        Cpuset {
            cpus: cpus.parse().unwrap(),
            mems: mems.parse().unwrap(),
        }
    }

    fn placed(cpus: &str, mems: &str) -> ContainerRecord {
        ContainerRecord {
            state: Lifecycle::Watched,
            assigned: Some(Assigned {
                placement: Some("p".into()),
                units: vec![0],
                cpus: cpus.parse().unwrap(),
                mems: mems.parse().unwrap(),
            }),
            ..ContainerRecord::new("/ctr/c", "c", 4, Policy::SmartAggressive)
        }
    }

    fn with_override(mut rec: ContainerRecord, found: Cpuset, action: Action) -> ContainerRecord {
        let a = rec.assigned.clone().unwrap();
        rec.overridden = Some(OverrideRecord {
            expected: Cpuset {
                cpus: a.cpus,
                mems: a.mems,
            },
            found,
            action,
            unix_ms: 0,
        });
        rec
    }

    #[test]
    fn a_container_where_placed_put_it_agrees() {
        assert_eq!(
            verdict(&placed("0-3", "0"), &sets("0-3", "0")),
            Verdict::Agrees
        );
        // Never placed: nothing was enacted, so nothing can be undone.
        let mut never = placed("0-3", "0");
        never.assigned = None;
        assert_eq!(verdict(&never, &sets("0-31", "0-1")), Verdict::Agrees);
    }

    #[test]
    fn a_different_cpuset_is_new_with_both_sides() {
        match verdict(&placed("0-3", "0"), &sets("0-7", "0-1")) {
            Verdict::New(d) => {
                assert_eq!(d.expected, sets("0-3", "0"));
                assert_eq!(d.found, sets("0-7", "0-1"));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_daemons_own_move_in_flight_is_no_override() {
        let mut moving = placed("0-3", "0");
        moving.migration = Some(Migration {
            from: sets("0-3", "0"),
            to: Assigned {
                placement: Some("q".into()),
                units: vec![1],
                cpus: "16-19".parse().unwrap(),
                mems: "1".parse().unwrap(),
            },
            started_unix_ms: 0,
            frozen: false,
        });
        // Half-way: new CPUs, old nodes.
        assert_eq!(verdict(&moving, &sets("16-19", "0")), Verdict::Agrees);
        let mut measuring = placed("0-3", "0");
        measuring.resume = measuring.assigned.clone();
        assert_eq!(verdict(&measuring, &sets("16-19", "1")), Verdict::Agrees);
    }

    #[test]
    fn a_check_during_a_move_looks_again_once_the_move_has_ended() {
        let mut moving = placed("0-3", "0");
        moving.migration = Some(Migration {
            from: sets("0-3", "0"),
            to: moving.assigned.clone().unwrap(),
            started_unix_ms: 0,
            frozen: false,
        });
        // Someone else's write during the move agrees with nothing, but is not dropped.
        assert_eq!(verdict(&moving, &sets("8-11", "0")), Verdict::Agrees);
        assert!(!settled_at_first_look(&moving, &sets("8-11", "0")));
        let mut measuring = placed("0-3", "0");
        measuring.resume = measuring.assigned.clone();
        assert!(!settled_at_first_look(&measuring, &sets("0-3", "0")));
        // Where placed put it, nothing in flight: settled.
        assert!(settled_at_first_look(
            &placed("0-3", "0"),
            &sets("0-3", "0")
        ));
        assert!(!settled_at_first_look(
            &placed("0-3", "0"),
            &sets("0-7", "0")
        ));
    }

    #[test]
    fn an_override_already_handled_is_reported_once() {
        for action in [Action::Left, Action::GaveUp] {
            let rec = with_override(placed("0-3", "0"), sets("0-7", "0"), action);
            assert_eq!(
                verdict(&rec, &sets("0-7", "0")),
                Verdict::Known,
                "{action:?}"
            );
            // Changed again: a new override.
            assert!(matches!(verdict(&rec, &sets("0-5", "0")), Verdict::New(_)));
            // Put back by someone else.
            assert_eq!(
                verdict(&rec, &sets("0-3", "0")),
                Verdict::Back,
                "{action:?}"
            );
        }
        // A written-back placement changed again to the same cpuset is the fight going on:
        // new each time, so that the write-back limit sees it.
        let rec = with_override(placed("0-3", "0"), sets("0-7", "0"), Action::Reasserted);
        assert!(matches!(verdict(&rec, &sets("0-7", "0")), Verdict::New(_)));
        assert_eq!(verdict(&rec, &sets("0-3", "0")), Verdict::Agrees);
    }
}
