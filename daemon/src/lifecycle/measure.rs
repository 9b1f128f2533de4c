//! Measuring a container where it is, with the metric source its record names: built on
//! demand, rebuilt when the spec changes, checked against the operator's rules each time.

use crate::state::ContainerRecord;
use placed_host::cgroup::CgroupPath;
use placed_host::observe::{
    AnySource, Measurement, MetricSource as _, SourceSpec, Target as NoiseTarget, measure,
};

use super::error::DaemonError;
use super::handle::Handle;

/// The metric source a task measures with, built on demand and rebuilt when the container's
/// metric spec changes.
#[derive(Debug, Default)]
pub(crate) struct MetricSlot {
    built: Option<(SourceSpec, AnySource)>,
    /// Watch measurements in a row whose interval missed the prediction's (the drift
    /// rule's evidence); kept with the source because it counts that source's readings.
    pub drift_count: u32,
    /// The goal of a decision made on this source's measurements whose outcome the next
    /// watch measurement gives (a fresh evaluation sets it again).
    pub awaiting_outcome: Option<f64>,
}

impl MetricSlot {
    /// The source for the record's spec, built (or rebuilt) now if needed.
    pub async fn ensure(
        &mut self,
        handle: &Handle,
        rec: &ContainerRecord,
    ) -> Result<&mut AnySource, DaemonError> {
        let spec = rec.metric.clone().ok_or_else(|| DaemonError::NoMetric {
            container: rec.name.clone(),
        })?;
        // An ended source (a pattern program that exited) is started again.
        let stale = self
            .built
            .as_ref()
            .is_none_or(|(s, source)| *s != spec || source.ended());
        let slot = if stale {
            let core = &handle.core;
            let cg = cgroup_of(rec);
            let dir = core
                .node
                .host
                .perf_dir(&cg)
                .unwrap_or_else(|| core.node.host.cgroup_dir(&cg));
            let cpus = core.node.machine.pus.usable.clone();
            let timeouts = core.settings.config().source_timeouts();
            // A record kept in the state file from before the allow-lists is held to them
            // too, not only a new Manage.
            core.settings.check_metric(&spec, &rec.name)?;
            // The old source goes first: a pattern program is killed before its successor
            // starts.
            self.built = None;
            let (built, reporter) = spec
                .build_with(&rec.name, &dir, &cpus, core.settings.access(), &timeouts)
                .await
                .map_err(|source| DaemonError::MetricSource {
                    container: rec.name.clone(),
                    source: Box::new(source),
                })?;
            handle.with(|e| e.reporter = reporter)?;
            Some(self.built.insert((spec, built)))
        } else {
            self.built.as_mut()
        };
        slot.map(|(_, source)| source)
            .ok_or_else(|| DaemonError::NoMetric {
                container: rec.name.clone(),
            })
    }

    /// Measures the container where it is now.
    pub async fn measure_here(
        &mut self,
        handle: &Handle,
        rec: &ContainerRecord,
    ) -> Result<Measurement, DaemonError> {
        let core = handle.core.clone();
        let source = self.ensure(handle, rec).await?;
        let dir = core.node.host.cgroup_dir(&cgroup_of(rec));
        let cpus = rec.assigned.as_ref().map(|a| a.cpus.clone());
        // Perf counters are opened for this measurement only, and only on the PUs the
        // container was given: a few descriptors per vCPU instead of some per usable PU.
        let usable = &core.node.machine.pus.usable;
        let count_on = cpus
            .as_ref()
            .map(|c| c.intersection(usable))
            .filter(|c| !c.is_empty())
            .unwrap_or_else(|| usable.clone());
        source.count_on(&count_on);
        let probe = core.node.host.noise_probe(NoiseTarget::Cgroup(dir), cpus);
        let protocol = core
            .settings
            .config()
            .protocol_for(&core.settings.protocol(), source.is_pulled());
        measure(source, &probe, &protocol).await.map_err(|source| {
            let e = DaemonError::Measure {
                container: rec.name.clone(),
                source: Box::new(source),
            };
            if e.fault() == placed_core::fault::Fault::HostConfig {
                core.telemetry.metrics.error("observe");
            }
            e
        })
    }
}

/// A record's cgroup. Records are keyed by their cgroup's path, parsed when they were made.
fn cgroup_of(rec: &ContainerRecord) -> CgroupPath {
    CgroupPath::parse(&rec.id).unwrap_or_else(|_| CgroupPath::root())
}
