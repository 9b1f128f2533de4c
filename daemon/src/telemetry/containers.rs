//! Per-container metrics: what the daemon decided for each managed container and how that
//! turned out. Read from the daemon's registry at each scrape, so a container that is no
//! longer managed has no series from the next scrape on, and no lifecycle step has to keep
//! gauges in step with the records.
//!
//! Labels are bounded: `id` (the container's cgroup path, unique), `container` (its name),
//! `runtime`, `policy` (the kind: `observe`,
//! `model`, `conservative`, `aggressive`, `smart-aggressive`, `pinned`), plus `placement`
//! (an id from the machine's important placements) on the info series and `state` (the
//! nine lifecycle states) on the state series.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;

use crate::state::{ContainerRecord, Lifecycle};
use placed_core::policy::Policy;

/// One managed container, as the metrics show it.
#[derive(Debug, Clone, PartialEq)]
pub struct View {
    /// The stable key (cgroup path): the `id` label.
    pub id: String,
    pub name: String,
    pub runtime: String,
    pub policy: &'static str,
    pub state: Lifecycle,
    pub placement: Option<String>,
    pub units: usize,
    /// Predicted performance in the current placement, relative to the baseline.
    pub predicted: Option<f64>,
    /// Performance measured in the current placement by the evaluation, relative to the
    /// baseline (later watch measurements replace it).
    pub measured: Option<f64>,
}

impl View {
    pub fn of(record: &ContainerRecord) -> Self {
        let placement = record.assigned.as_ref().and_then(|a| a.placement.clone());
        let prediction = record.prediction.as_ref();
        let predicted = prediction
            .zip(placement.as_deref())
            .and_then(|(p, at)| p.relative(at));
        let measured = prediction.zip(placement.as_deref()).and_then(|(p, at)| {
            let base = p.baseline_value().filter(|b| *b > 0.0)?;
            let here = p.observations.iter().find(|o| o.placement == at)?;
            Some(here.value / base)
        });
        Self {
            id: record.id.clone(),
            name: record.name.clone(),
            runtime: record.runtime.clone(),
            policy: policy_kind(&record.policy),
            state: record.state,
            placement,
            units: record.assigned.as_ref().map_or(0, |a| a.units.len()),
            predicted,
            measured,
        }
    }
}

/// The policy's kind, without its goal or pinned placement (bounded label values).
pub fn policy_kind(p: &Policy) -> &'static str {
    match p {
        Policy::Observe => "observe",
        Policy::Model { .. } => "model",
        Policy::Conservative => "conservative",
        Policy::Aggressive => "aggressive",
        Policy::SmartAggressive => "smart-aggressive",
        Policy::Pinned { .. } => "pinned",
    }
}

type Source = Arc<dyn Fn() -> Vec<View> + Send + Sync>;

/// What the daemon tells the metrics about each container besides its record.
#[derive(Default)]
pub struct PerContainer {
    source: RwLock<Option<Source>>,
    /// Last observed relative performance (watch measurements), by container id.
    observed: Mutex<HashMap<String, f64>>,
    /// Completed moves and the bytes they moved, by container id.
    moves: Mutex<HashMap<String, (u64, u64)>>,
    /// Changes of the cpuset made outside placed, by container id.
    overrides: Mutex<HashMap<String, u64>>,
}

impl std::fmt::Debug for PerContainer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PerContainer").finish_non_exhaustive()
    }
}

impl PerContainer {
    /// Where the managed containers are listed from at each scrape (set once the daemon
    /// has started; before that no container is shown).
    pub fn set_source(&self, source: impl Fn() -> Vec<View> + Send + Sync + 'static) {
        *self.source.write().unwrap_or_else(|p| p.into_inner()) = Some(Arc::new(source));
    }

    /// A watch measured container `id` at `relative` of its baseline.
    pub fn observed(&self, id: &str, relative: f64) {
        if relative.is_finite() {
            lock(&self.observed).insert(id.to_owned(), relative);
        }
    }

    /// Container `id` completed a move of `bytes`.
    pub fn moved(&self, id: &str, bytes: u64) {
        let mut m = lock(&self.moves);
        let e = m.entry(id.to_owned()).or_default();
        e.0 += 1;
        e.1 += bytes;
    }

    /// Container `id`'s cpuset was found changed outside placed.
    pub fn overridden(&self, id: &str) {
        *lock(&self.overrides).entry(id.to_owned()).or_default() += 1;
    }

    fn views(&self) -> Vec<View> {
        let source = self
            .source
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let views = source.map(|s| s()).unwrap_or_default();
        // Forget what the daemon no longer manages.
        lock(&self.observed).retain(|id, _| views.iter().any(|v| v.id == *id));
        lock(&self.moves).retain(|id, _| views.iter().any(|v| v.id == *id));
        lock(&self.overrides).retain(|id, _| views.iter().any(|v| v.id == *id));
        views
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

type Labels = Vec<(&'static str, String)>;

fn labels(v: &View) -> Labels {
    vec![
        // The id makes each container's series its own: two containers may share a name
        // (`w1` under two parents), and duplicate series make an OpenMetrics parser refuse
        // the whole page.
        ("id", v.id.clone()),
        ("container", v.name.clone()),
        ("runtime", v.runtime.clone()),
        ("policy", v.policy.to_owned()),
    ]
}

/// One family: its name (after `placed_`), help, type, and the samples.
struct FamilyOut<'a> {
    name: &'a str,
    help: &'a str,
    counter: bool,
    samples: Vec<(Labels, f64)>,
}

fn encode_family(encoder: &mut DescriptorEncoder, f: FamilyOut) -> Result<(), std::fmt::Error> {
    let kind = if f.counter {
        MetricType::Counter
    } else {
        MetricType::Gauge
    };
    let mut m = encoder.encode_descriptor(f.name, f.help, None, kind)?;
    for (labels, value) in &f.samples {
        let e = m.encode_family(labels)?;
        if f.counter {
            ConstCounter::new(*value).encode(e)?;
        } else {
            ConstGauge::new(*value).encode(e)?;
        }
    }
    Ok(())
}

impl Collector for PerContainer {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        for f in families(self) {
            encode_family(&mut encoder, f)?;
        }
        Ok(())
    }
}

fn families(per: &PerContainer) -> Vec<FamilyOut<'static>> {
    let views = per.views();
    let observed = lock(&per.observed).clone();
    let moves = lock(&per.moves).clone();
    let overrides = lock(&per.overrides).clone();
    let each = |f: &dyn Fn(&View) -> Option<f64>| -> Vec<(Labels, f64)> {
        views
            .iter()
            .filter_map(|v| Some((labels(v), f(v)?)))
            .collect()
    };
    let last_observed = |v: &View| observed.get(&v.id).copied().or(v.measured);
    let with = |v: &View, k: &'static str, val: String| {
        let mut l = labels(v);
        l.push((k, val));
        l
    };
    vec![
        FamilyOut {
            name: "container_placement",
            help: "The container's current placement (the placement label; 1 while it holds it)",
            counter: false,
            samples: views
                .iter()
                .filter_map(|v| Some((with(v, "placement", v.placement.clone()?), 1.0)))
                .collect(),
        },
        FamilyOut {
            name: "container_units",
            help: "Allocation units the container holds",
            counter: false,
            samples: each(&|v| Some(v.units as f64)),
        },
        FamilyOut {
            name: "container_state",
            help: "The container's lifecycle state (1 for the current one, 0 for the others)",
            counter: false,
            samples: views
                .iter()
                .flat_map(|v| {
                    Lifecycle::ALL.iter().map(move |s| {
                        let on = if *s == v.state { 1.0 } else { 0.0 };
                        (with(v, "state", s.name().to_owned()), on)
                    })
                })
                .collect(),
        },
        FamilyOut {
            name: "container_predicted_relative_performance",
            help: "Predicted performance in the current placement, relative to the baseline placement",
            counter: false,
            samples: each(&|v| v.predicted),
        },
        FamilyOut {
            name: "container_observed_relative_performance",
            help: "Last measured performance in the current placement, relative to the baseline placement",
            counter: false,
            samples: each(&last_observed),
        },
        FamilyOut {
            name: "container_prediction_error",
            help: "Last observed over predicted relative performance, minus 1 (0.1 = 10% better than predicted)",
            counter: false,
            samples: each(&|v| Some(last_observed(v)? / v.predicted.filter(|p| *p > 0.0)? - 1.0)),
        },
        FamilyOut {
            name: "container_migrations",
            help: "Completed moves of the container since placed began managing it",
            counter: true,
            samples: each(&|v| Some(moves.get(&v.id).map_or(0.0, |m| m.0 as f64))),
        },
        FamilyOut {
            name: "container_migration_bytes",
            help: "Bytes of the container's memory moved between NUMA nodes",
            counter: true,
            samples: each(&|v| Some(moves.get(&v.id).map_or(0.0, |m| m.1 as f64))),
        },
        FamilyOut {
            name: "container_overrides",
            help: "Changes of the container's cpuset made outside placed (systemd, kubelet, docker update) that placed noticed",
            counter: true,
            samples: each(&|v| Some(overrides.get(&v.id).copied().unwrap_or(0) as f64)),
        },
    ]
}

#[cfg(test)]
mod tests;
