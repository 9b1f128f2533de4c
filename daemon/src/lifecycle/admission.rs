//! Placement before a container exists: where a new container of `v` vCPUs should start
//! under its policy, on the units nobody holds, with the predicted performance where a
//! prior applies; optionally held for it (a reservation) until it claims the units. One
//! decision serves the API's `Admit` and NRI's CreateContainer; a batch packs several
//! new containers at once.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use placed_core::placement::{PlacementSet, instantiate};
use placed_core::policy::{self, Policy, Situation, Target};

use crate::state::{Assigned, PredictionRecord, ReservationRecord};

use super::core::Core;
use super::decide::predicted_list;
use super::entry::usable_prediction;
use super::error::DaemonError;
use super::events::{Event, EventKind, now_ms};
use super::reservations::{Held, units_of};

/// Longest hold a reservation may ask for: a container that has not started within an
/// hour is not coming, and units held for it are lost to everyone else.
pub const MAX_HOLD: Duration = Duration::from_secs(3600);

/// A new container, as an orchestrator describes it before starting it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AdmitRequest {
    /// The orchestrator's name for it, repeated in the answer (and in a batch's).
    pub name: String,
    pub vcpus: usize,
    /// Its policy; the configured default when `None`.
    pub policy: Option<Policy>,
    pub labels: BTreeMap<String, String>,
    pub hint: Hint,
    /// Hold the units for this long, until the container claims them.
    pub reserve: Option<Duration>,
    /// The runtime's id of the container that will claim the hold (NRI knows it).
    pub for_container: Option<String>,
}

/// What may tell how the new container will behave.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum Hint {
    #[default]
    Nothing,
    /// A managed container (name, id or cgroup path) whose prediction applies.
    Container(String),
    /// The image: a managed container labelled `image` with this value whose prediction
    /// applies.
    Image(String),
}

/// What a prediction before the container exists rests on.
#[derive(Debug, Clone, PartialEq)]
pub enum Prior {
    /// Nothing: no prediction.
    Nothing,
    /// An earlier container's prediction, for the same number of vCPUs.
    Container { id: String, name: String },
}

/// Where a new container should start, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Admission {
    pub name: String,
    pub vcpus: usize,
    pub policy: Policy,
    pub target: Target,
    /// The calibrated interval of the predicted performance, where the prior has one.
    pub interval: Option<(f64, f64)>,
    pub prior: Prior,
    /// The hold, when one was asked for.
    pub reservation: Option<ReservationRecord>,
}

/// How a batch treats a container that cannot be placed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchMode {
    /// Every container is placed, or none: nothing is held unless all are.
    AllOrNothing,
    /// Each container placed if it can be; the others say why not.
    BestEffort,
}

/// Decides where a new container should start, and holds the units when asked.
pub(crate) fn admit(core: &Arc<Core>, req: &AdmitRequest) -> Result<Admission, DaemonError> {
    check(core, req)?;
    // The decision and the hold under one lock: two admissions cannot hold the same units.
    let mut held = core.reservations.lock();
    let available = free_units(core, &units_of(&held).into_keys().collect::<Vec<_>>(), &[]);
    let mut admission = decide(core, req, &available)?;
    hold(core, &mut held, req, &mut admission);
    drop(held);
    if let Some(r) = &admission.reservation {
        announce(core, r);
    }
    Ok(admission)
}

/// Decides for several new containers at once, the largest first, each on the units the
/// previous ones left; answers in the order asked.
pub(crate) fn admit_batch(
    core: &Arc<Core>,
    requests: &[AdmitRequest],
    mode: BatchMode,
) -> Vec<Result<Admission, DaemonError>> {
    let mut order: Vec<usize> = (0..requests.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(requests[i].vcpus));
    let mut held = core.reservations.lock();
    let reserved: Vec<usize> = units_of(&held).into_keys().collect();
    let mut taken_here: Vec<usize> = Vec::new();
    let mut answers: Vec<Option<Result<Admission, DaemonError>>> =
        requests.iter().map(|_| None).collect();
    for i in order {
        let req = &requests[i];
        let answer = check(core, req).and_then(|()| {
            let available = free_units(core, &reserved, &taken_here);
            decide(core, req, &available)
        });
        if let Ok(a) = &answer {
            taken_here.extend(a.target.units.iter().copied());
        }
        answers[i] = Some(answer);
    }
    let failed: Vec<String> = answers
        .iter()
        .zip(requests)
        .filter(|(a, _)| matches!(a, Some(Err(_))))
        .map(|(_, r)| r.name.clone())
        .collect();
    let mut out: Vec<Result<Admission, DaemonError>> = Vec::with_capacity(requests.len());
    for (answer, req) in answers.into_iter().zip(requests) {
        let answer = answer.unwrap_or(Err(DaemonError::Stopping));
        out.push(match answer {
            Ok(_) if mode == BatchMode::AllOrNothing && !failed.is_empty() => {
                Err(DaemonError::BatchRefused {
                    name: req.name.clone(),
                    failed: failed.join(", "),
                })
            }
            Ok(mut a) => {
                hold(core, &mut held, req, &mut a);
                Ok(a)
            }
            Err(e) => Err(e),
        });
    }
    drop(held);
    for r in out.iter().flatten().filter_map(|a| a.reservation.as_ref()) {
        announce(core, r);
    }
    out
}

/// Holds the admission's units when the request asks, under the reservations' lock the
/// caller holds.
fn hold(
    core: &Core,
    held: &mut BTreeMap<String, Held>,
    req: &AdmitRequest,
    admission: &mut Admission,
) {
    if let Some(hold) = req.reserve {
        let record = reservation(core, req, admission, hold);
        held.insert(
            record.id.clone(),
            Held {
                record: record.clone(),
                deadline: tokio::time::Instant::now() + hold,
            },
        );
        admission.reservation = Some(record);
    }
}

/// What is refused before anything is decided.
fn check(core: &Core, req: &AdmitRequest) -> Result<(), DaemonError> {
    if req.vcpus == 0 {
        return Err(DaemonError::bad("vcpus", "must be at least 1"));
    }
    if req.vcpus > core.node.machine.pus.usable.len() {
        return Err(DaemonError::bad(
            "vcpus",
            format!(
                "{} is more than the {} PUs this host can place on",
                req.vcpus,
                core.node.machine.pus.usable.len()
            ),
        ));
    }
    if let Some(p) = &req.policy {
        p.validate().map_err(DaemonError::policy)?;
    }
    match req.reserve {
        Some(d) if d.is_zero() => Err(DaemonError::bad(
            "reserve",
            "a hold of 0 s holds nothing: leave it unset for an answer without a hold",
        )),
        Some(d) if d > MAX_HOLD => Err(DaemonError::bad(
            "reserve",
            format!(
                "a hold of {} s is longer than the {} s placed allows",
                d.as_secs(),
                MAX_HOLD.as_secs()
            ),
        )),
        _ => Ok(()),
    }
}

/// The units nobody holds or has reserved, less `also` (held earlier in the same batch).
fn free_units(core: &Core, reserved: &[usize], also: &[usize]) -> Vec<usize> {
    let taken = core.containers.registry().taken_units("");
    (0..core.node.machine.units.len())
        .filter(|u| !taken.contains(u) && !reserved.contains(u) && !also.contains(u))
        .collect()
}

/// The policy's choice for the new container on `available` units.
fn decide(core: &Core, req: &AdmitRequest, available: &[usize]) -> Result<Admission, DaemonError> {
    let set = core.node.placements(req.vcpus)?;
    let policy = req
        .policy
        .clone()
        .unwrap_or_else(|| core.settings.default_policy());
    if let Policy::Pinned { placement } = &policy {
        if set.get(placement).is_none() {
            return Err(DaemonError::UnknownPlacement {
                placement: placement.clone(),
                vcpus: req.vcpus,
            });
        }
    }
    let (prior_record, prior) = prior(core, req);
    let target = match (&policy, &prior_record) {
        (Policy::Model { .. }, None) => first_measured(core, &set, available, req.vcpus)?,
        _ => {
            let predicted = prior_record.as_ref().map(predicted_list);
            let situation = Situation {
                machine: &core.node.machine,
                placements: &set,
                available,
                predictions: predicted.as_deref(),
                goal_bound: PredictionRecord::goal_bound(
                    prior_record.as_ref(),
                    core.settings.config().policy.goal_bound,
                ),
            };
            policy::decide(&policy, &situation)
                .map_err(DaemonError::policy)?
                .unwrap_or_else(|| unpinned(core))
        }
    };
    let interval = prior_record.as_ref().and_then(|p| {
        target
            .placement
            .as_deref()
            .and_then(|id| p.predicted(id))
            .and_then(|cell| cell.interval.map(|i| (i.low, i.high)))
    });
    let predicted = prior_record
        .as_ref()
        .zip(target.placement.as_deref())
        .and_then(|(p, id)| p.relative(id))
        .or(target.predicted);
    let target = Target {
        predicted,
        ..target
    };
    Ok(Admission {
        name: req.name.clone(),
        vcpus: req.vcpus,
        policy,
        target,
        interval,
        prior,
        reservation: None,
    })
}

/// Where a container under the model policy starts when nothing predicts it yet: the
/// model's baseline placement, where the lifecycle measures it first (so its first move is
/// saved); with no model for this size, where smart-aggressive would put it.
fn first_measured(
    core: &Core,
    set: &PlacementSet,
    available: &[usize],
    vcpus: usize,
) -> Result<Target, DaemonError> {
    let machine = &core.node.machine;
    let Some(model) = core.models.find(machine.fingerprint(), set) else {
        let s = Situation {
            machine,
            placements: set,
            available,
            predictions: None,
            goal_bound: core.settings.config().policy.goal_bound,
        };
        let mut t = policy::decide(&Policy::SmartAggressive, &s)
            .map_err(DaemonError::policy)?
            .unwrap_or_else(|| unpinned(core));
        t.reason = format!(
            "no model for this machine class and {vcpus} vCPUs: started where smart-aggressive would put it ({}); the model policy waits for a model",
            t.reason
        );
        return Ok(t);
    };
    let baseline = model.model.baseline().to_owned();
    let placement = set
        .get(&baseline)
        .ok_or_else(|| DaemonError::UnknownPlacement {
            placement: baseline.clone(),
            vcpus,
        })?;
    let inst = instantiate(machine, vcpus, placement, available)
        .map_err(|source| DaemonError::Placements {
            vcpus,
            source: Box::new(source),
        })?
        .ok_or_else(|| DaemonError::NoRoom {
            container: format!("a new container of {vcpus} vCPUs"),
            placement: baseline.clone(),
        })?;
    Ok(Target {
        placement: Some(inst.id),
        units: inst.units,
        cpus: inst.cpus,
        mems: inst.mems,
        predicted: None,
        reason: format!(
            "model policy: starts in model {}'s baseline placement {baseline}, where it is measured first; nothing predicts a container not started yet",
            model.model.id()
        ),
    })
}

/// Every usable PU and memory node, holding no unit: where observe and aggressive
/// containers run.
fn unpinned(core: &Core) -> Target {
    let machine = &core.node.machine;
    Target {
        placement: None,
        units: Vec::new(),
        cpus: machine.pus.usable.clone(),
        mems: machine.units.iter().fold(
            Default::default(),
            |acc: placed_core::cpuset::NodeSet, u| acc.union(&u.mems),
        ),
        predicted: None,
        reason: "the policy pins nothing: the container starts unpinned".into(),
    }
}

/// The prediction a hint points to, for the request's size.
fn prior(core: &Core, req: &AdmitRequest) -> (Option<PredictionRecord>, Prior) {
    let registry = core.containers.registry();
    let matches = |labels: &BTreeMap<String, String>, id: &str, name: &str| match &req.hint {
        Hint::Nothing => false,
        Hint::Container(r) => {
            r == id || r == name || format!("/{}", r.trim_start_matches('/')) == id
        }
        Hint::Image(image) => labels.get("image") == Some(image),
    };
    let best = registry
        .entries
        .values()
        .filter(|e| matches(&e.record.labels, &e.record.id, &e.record.name))
        .filter(|e| e.record.vcpus == req.vcpus)
        .filter_map(|e| usable_prediction(&e.record).map(|p| (p.clone(), &e.record)))
        .max_by_key(|(p, _)| p.unix_ms);
    match best {
        Some((p, rec)) => (
            Some(p),
            Prior::Container {
                id: rec.id.clone(),
                name: rec.name.clone(),
            },
        ),
        None => (None, Prior::Nothing),
    }
}

/// The hold for an admission.
fn reservation(
    core: &Core,
    req: &AdmitRequest,
    a: &Admission,
    hold: Duration,
) -> ReservationRecord {
    let now = now_ms();
    ReservationRecord {
        id: core.reservations.new_id(),
        assigned: Assigned {
            placement: a.target.placement.clone(),
            units: a.target.units.clone(),
            cpus: a.target.cpus.clone(),
            mems: a.target.mems.clone(),
        },
        vcpus: req.vcpus,
        policy: a.policy.clone(),
        labels: req.labels.clone(),
        for_container: req.for_container.clone(),
        created_unix_ms: now,
        expires_unix_ms: now.saturating_add(i64::try_from(hold.as_millis()).unwrap_or(i64::MAX)),
    }
}

/// Says a hold was made: an event, and the expiry task told.
fn announce(core: &Core, r: &ReservationRecord) {
    core.reservations.changed.notify_one();
    core.telemetry.send(Event {
        unix_ms: r.created_unix_ms,
        container: r.id.clone(),
        kind: EventKind::Reserved,
        state: crate::state::Lifecycle::Discovered,
        placement: r.assigned.placement.clone(),
        message: format!(
            "units {:?} (cpus {}, mems {}) held for a new container of {} vCPUs until {} ms",
            r.assigned.units, r.assigned.cpus, r.assigned.mems, r.vcpus, r.expires_unix_ms
        ),
        cpuset_override: None,
        outcome: None,
        labels: r.labels.clone(),
    });
}
