//! What `placectl` prints for the commands that talk to the daemon: status, containers,
//! predict (a table and a bar chart), recommend, place, watch. JSON forms are documented
//! in docs/cli-json.md.

use std::fmt::Write;

use placed_core::lifecycle::Lifecycle;
use placed_core::policy::Policy;
use placed_proto::convert;
use placed_proto::v1 as pb;
use serde_json::{Value, json};

use super::table::Table;

fn state_name(s: i32) -> &'static str {
    convert::state_from_pb(s).map_or("unknown", Lifecycle::name)
}

fn provenance_name(p: i32) -> &'static str {
    match pb::Provenance::try_from(p) {
        Ok(pb::Provenance::Real) => "real",
        Ok(pb::Provenance::VirtualMachine) => "virtual_machine",
        Ok(pb::Provenance::Simulated) => "simulated",
        _ => "unknown",
    }
}

/// How a model's provenance must be shown: loudly unless measured on real hardware.
fn provenance_banner(p: i32) -> Option<&'static str> {
    match pb::Provenance::try_from(p) {
        Ok(pb::Provenance::Simulated) => Some(
            "SIMULATED: this model was trained on simulated data; its predictions are not real placement results",
        ),
        Ok(pb::Provenance::VirtualMachine) => Some(
            "VIRTUAL MACHINE: this model was trained in a virtual machine; its timings say nothing about real hardware",
        ),
        _ => None,
    }
}

pub fn policy_name(p: Option<&pb::Policy>) -> String {
    let Some(p) = p else {
        return Policy::Observe.name();
    };
    // Daemons from before POLICY_KIND_OBSERVE sent observe as unset. A goal of 0 is not
    // replaced by a default here: the name shows what the daemon sent.
    match convert::policy_from_pb(Some(p), p.goal) {
        Ok(Some(policy)) => policy.name(),
        Ok(None) => Policy::Observe.name(),
        Err(_) => format!("unknown ({})", p.kind),
    }
}

pub fn render_status(s: &pb::GetStatusResponse) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "placed {}  up {} s",
        s.version,
        seconds(s.uptime.as_ref())
    );
    let _ = writeln!(o, "Class       {}", s.fingerprint);
    let _ = writeln!(o, "cgroups     {}", s.cgroup);
    let _ = writeln!(o, "State file  {}", s.state_file);
    let counts: Vec<String> = s
        .containers
        .iter()
        .filter(|c| c.count > 0)
        .map(|c| format!("{} {}", c.count, state_name(c.state)))
        .collect();
    let _ = writeln!(
        o,
        "Containers  {}",
        if counts.is_empty() {
            "none".into()
        } else {
            counts.join(", ")
        }
    );
    if s.models.is_empty() {
        let _ = writeln!(
            o,
            "Models      none: train one with `{}` (DIR: the daemon's daemon.model_dir)",
            placed_models::train_command("N", "DIR")
        );
    } else {
        let _ = writeln!(o, "\nModels");
        let mut t = Table::new(["ID", "VCPUS", "DATA", "PATH"]).right(1);
        for m in &s.models {
            let vcpus = if m.trained_vcpus.is_empty() {
                m.vcpus.to_string()
            } else {
                let sizes: Vec<String> = m.trained_vcpus.iter().map(u32::to_string).collect();
                format!("any (across {})", sizes.join(","))
            };
            t.row([
                m.id.clone(),
                vcpus,
                provenance_name(m.provenance).into(),
                m.path.clone(),
            ]);
        }
        o.push_str(&t.render("  "));
    }
    for w in &s.warnings {
        let _ = writeln!(o, "warning: {w}");
    }
    o
}

pub fn status_json(s: &pb::GetStatusResponse) -> Value {
    json!({
        "schema": "placed.status/v1",
        "version": s.version,
        "fingerprint": s.fingerprint,
        "uptime_s": seconds(s.uptime.as_ref()),
        "cgroup": s.cgroup,
        "state_file": s.state_file,
        "containers": s.containers.iter()
            .map(|c| (state_name(c.state).to_owned(), json!(c.count)))
            .collect::<serde_json::Map<_, _>>(),
        "models": s.models.iter().map(|m| json!({
            "id": m.id, "vcpus": m.vcpus, "trained_vcpus": m.trained_vcpus,
            "provenance": provenance_name(m.provenance), "path": m.path,
        })).collect::<Vec<_>>(),
        "warnings": s.warnings,
    })
}

pub fn render_containers(cs: &[pb::Container]) -> String {
    if cs.is_empty() {
        return "placed manages no container (placectl manage <container> takes one over)\n".into();
    }
    let mut t = Table::new([
        "NAME",
        "RUNTIME",
        "VCPUS",
        "POLICY",
        "STATE",
        "PLACEMENT",
        "CPUS",
        "MEMS",
        "DETAIL",
    ])
    .right(2);
    for c in cs {
        t.row([
            c.name.clone(),
            runtime_name(c.runtime),
            c.vcpus.to_string(),
            policy_name(c.policy.as_ref()),
            state_name(c.state).into(),
            if c.placement_id.is_empty() {
                "-".into()
            } else {
                c.placement_id.clone()
            },
            c.cpus.clone(),
            c.mems.clone(),
            match c.cpuset_override.as_ref().map(override_line) {
                Some(o) if c.detail.is_empty() => o,
                Some(o) => format!("{o}; {}", c.detail),
                None => c.detail.clone(),
            },
        ]);
    }
    t.render("")
}

pub fn container_json(c: &pb::Container) -> Value {
    json!({
        "id": c.id, "name": c.name, "runtime": runtime_name(c.runtime), "cgroup": c.cgroup,
        "vcpus": c.vcpus, "vcpus_source": vcpus_source_name(c.vcpus_source),
        "policy": policy_name(c.policy.as_ref()),
        "state": state_name(c.state), "detail": c.detail,
        "placement": if c.placement_id.is_empty() { Value::Null } else { json!(c.placement_id) },
        "cpus": c.cpus, "mems": c.mems, "units": c.units, "model_id": c.model_id,
        "metric": c.metric.as_ref().map_or(Value::Null, crate::metric::json),
        "updated_unix_ms": unix_ms(c.update_time.as_ref()),
        "on_override": on_override_name(c.effective_on_override),
        "on_override_default": c.on_override == pb::OnOverride::Unspecified as i32,
        "cpuset_override": c.cpuset_override.as_ref().map_or(Value::Null, override_json),
    })
}

fn on_override_name(o: i32) -> &'static str {
    match pb::OnOverride::try_from(o) {
        Ok(pb::OnOverride::Reassert) => "reassert",
        Ok(pb::OnOverride::Adopt) => "adopt",
        Ok(pb::OnOverride::Leave) => "leave",
        Ok(pb::OnOverride::Unspecified) | Err(_) => "unknown",
    }
}

fn override_action_name(a: i32) -> &'static str {
    match pb::OverrideAction::try_from(a) {
        Ok(pb::OverrideAction::Reasserted) => "reasserted",
        Ok(pb::OverrideAction::Adopted) => "adopted",
        Ok(pb::OverrideAction::Left) => "left",
        Ok(pb::OverrideAction::GaveUp) => "gave_up",
        Ok(pb::OverrideAction::Unspecified) | Err(_) => "unknown",
    }
}

/// An override in the containers table's detail: where placed put it, where it was found,
/// and what the daemon did.
fn override_line(o: &pb::CpusetOverride) -> String {
    format!(
        "OVERRIDDEN at {}: found cpus {} mems {}, placed had cpus {} mems {}; {}",
        rfc3339(o.time.as_ref()),
        o.found_cpus,
        o.found_mems,
        o.expected_cpus,
        o.expected_mems,
        override_action_name(o.action).replace('_', " ")
    )
}

fn override_json(o: &pb::CpusetOverride) -> Value {
    json!({
        "expected_cpus": o.expected_cpus, "expected_mems": o.expected_mems,
        "found_cpus": o.found_cpus, "found_mems": o.found_mems,
        "action": override_action_name(o.action),
        "unix_ms": unix_ms(o.time.as_ref()),
    })
}

/// Whole seconds of a Duration (0 when absent).
fn seconds(d: Option<&prost_types::Duration>) -> i64 {
    d.map_or(0, |d| d.seconds)
}

/// Milliseconds since the epoch of a Timestamp (0 when absent).
fn unix_ms(t: Option<&prost_types::Timestamp>) -> i64 {
    t.map_or(0, |t| {
        t.seconds.saturating_mul(1000) + i64::from(t.nanos / 1_000_000)
    })
}

/// A protobuf timestamp as RFC 3339 in UTC with milliseconds (`2026-11-24T08:17:23.123Z`);
/// `-` when absent or before the epoch.
pub fn rfc3339(t: Option<&prost_types::Timestamp>) -> String {
    let at = t.and_then(|t| {
        let secs = u64::try_from(t.seconds).ok()?;
        let nanos = u32::try_from(t.nanos).ok()?;
        std::time::UNIX_EPOCH.checked_add(std::time::Duration::new(secs, nanos))
    });
    at.map_or_else(
        || "-".to_owned(),
        |at| humantime::format_rfc3339_millis(at).to_string(),
    )
}

fn millis(d: Option<&prost_types::Duration>) -> i64 {
    d.map_or(0, |d| {
        d.seconds.saturating_mul(1000) + i64::from(d.nanos / 1_000_000)
    })
}

/// The runtime's name, as the daemon's config and `placectl containers --host` spell it.
pub fn runtime_name(r: i32) -> String {
    match pb::ContainerRuntime::try_from(r) {
        Ok(pb::ContainerRuntime::Docker) => "docker".into(),
        Ok(pb::ContainerRuntime::Podman) => "podman".into(),
        Ok(pb::ContainerRuntime::Containerd) => "containerd".into(),
        Ok(pb::ContainerRuntime::Crio) => "crio".into(),
        Ok(pb::ContainerRuntime::Cri) => "cri".into(),
        Ok(pb::ContainerRuntime::Pod) => "pod".into(),
        Ok(pb::ContainerRuntime::Lxc) => "lxc".into(),
        Ok(pb::ContainerRuntime::Systemd) => "systemd".into(),
        Ok(pb::ContainerRuntime::Cgroup) => "cgroup".into(),
        Ok(pb::ContainerRuntime::Unspecified) | Err(_) => format!("unknown ({r})"),
    }
}

fn vcpus_source_name(v: i32) -> String {
    match pb::VcpuSource::try_from(v) {
        Ok(pb::VcpuSource::Request) => "request".into(),
        Ok(pb::VcpuSource::Quota) => "quota".into(),
        Ok(pb::VcpuSource::Cpuset) => "cpuset".into(),
        Ok(pb::VcpuSource::Unspecified) | Err(_) => format!("unknown ({v})"),
    }
}

pub fn containers_json(cs: &[pb::Container]) -> Value {
    json!({
        "schema": "placed.containers/v1",
        "containers": cs.iter().map(container_json).collect::<Vec<_>>(),
    })
}

/// The predicted performance per placement as a table with a bar chart: one bar per
/// placement, scaled to the best, marked where it was measured and where it is now.
pub fn render_prediction(p: &pb::PredictResponse, current: Option<&str>) -> String {
    let mut o = String::new();
    if let Some(b) = provenance_banner(p.provenance) {
        let _ = writeln!(o, "{b}\n");
    }
    let _ = writeln!(
        o,
        "Container   {} ({} vCPUs)\nModel       {} (trained on {} data)",
        p.container,
        p.vcpus,
        p.model_id,
        provenance_name(p.provenance)
    );
    let _ = writeln!(o, "\nObserved");
    let mut t = Table::new([
        "PLACEMENT",
        "ROLE",
        "MEDIAN",
        "95% INTERVAL",
        "WINDOWS",
        "SOURCE",
    ])
    .right(2)
    .right(4);
    for obs in &p.observations {
        let role = if obs.placement_id == p.baseline_id {
            "baseline"
        } else if obs.placement_id == p.probe_id {
            "probe"
        } else {
            "third"
        };
        t.row([
            obs.placement_id.clone(),
            role.into(),
            format!("{:.4}", obs.value),
            format!("{:.4} - {:.4}", obs.low, obs.high),
            format!("{} ({} dropped)", obs.windows, obs.dropped_windows),
            obs.unit.clone(),
        ]);
    }
    o.push_str(&t.render("  "));
    let _ = writeln!(o, "\nPredicted, relative to the baseline (x1.00)");
    let best = p
        .placements
        .iter()
        .map(|x| x.relative)
        .fold(0.0_f64, f64::max)
        .max(1e-9);
    const WIDTH: usize = 30;
    let level = p
        .placements
        .iter()
        .map(|x| x.interval_level)
        .find(|l| *l > 0.0);
    let range_header = level.map_or_else(
        || "RANGE".to_owned(),
        |l| format!("{:.0}% INTERVAL", l * 100.0),
    );
    let mut t = Table::new(["PLACEMENT", "PERF", "+-", range_header.as_str(), "", ""])
        .right(1)
        .right(2);
    for x in &p.placements {
        let filled = ((x.relative / best) * WIDTH as f64)
            .round()
            .clamp(0.0, WIDTH as f64);
        // Truncation is intended: a bar length in characters.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let filled = filled as usize;
        let mut marks = Vec::new();
        if x.placement_id == p.baseline_id {
            marks.push("measured (baseline)");
        } else if x.placement_id == p.probe_id {
            marks.push("measured (probe)");
        } else if x.measured {
            marks.push("measured (third)");
        }
        if current == Some(x.placement_id.as_str()) {
            marks.push("<- now");
        }
        t.row([
            x.placement_id.clone(),
            format!("x{:.2}", x.relative),
            format!("{:.2}", x.spread),
            if x.interval_level > 0.0 {
                format!("x{:.2}-x{:.2}", x.interval_low, x.interval_high)
            } else {
                String::new()
            },
            format!("{}{}", "#".repeat(filled), ".".repeat(WIDTH - filled)),
            marks.join(", "),
        ]);
    }
    o.push_str(&t.render("  "));
    if !p.third_measurement.is_empty() {
        let _ = writeln!(o, "third measurement: {}", p.third_measurement);
    }
    for w in &p.warnings {
        let _ = writeln!(o, "warning: {w}");
    }
    o
}

pub fn prediction_json(p: &pb::PredictResponse) -> Value {
    json!({
        "schema": "placed.prediction/v1",
        "container": p.container,
        "vcpus": p.vcpus,
        "model_id": p.model_id,
        "provenance": provenance_name(p.provenance),
        "baseline": p.baseline_id,
        "probe": p.probe_id,
        "observations": p.observations.iter().map(|o| json!({
            "placement": o.placement_id, "value": o.value, "low": o.low, "high": o.high,
            "source": o.unit, "windows": o.windows, "dropped_windows": o.dropped_windows,
        })).collect::<Vec<_>>(),
        "placements": p.placements.iter().map(|x| json!({
            "placement": x.placement_id, "relative": x.relative, "spread": x.spread,
            "measured": x.measured,
            "interval": (x.interval_level > 0.0).then(|| json!({
                "low": x.interval_low, "high": x.interval_high, "level": x.interval_level,
            })),
        })).collect::<Vec<_>>(),
        "warnings": p.warnings,
        "third_measurement": (!p.third_measurement.is_empty()).then_some(&p.third_measurement),
    })
}

pub fn render_recommendation(r: &pb::RecommendResponse) -> String {
    let target = if r.placement_id.is_empty() {
        format!("unpinned (cpus {}, mems {})", r.cpus, r.mems)
    } else {
        format!("{} (cpus {}, mems {})", r.placement_id, r.cpus, r.mems)
    };
    let mut o = format!("{}: {target}\n", r.container);
    if r.predicted_relative > 0.0 {
        let _ = writeln!(o, "predicted x{:.2} of the baseline", r.predicted_relative);
    }
    let _ = writeln!(
        o,
        "{}: {}",
        if r.would_move {
            "would move"
        } else {
            "would stay"
        },
        r.reason
    );
    o
}

pub fn recommendation_json(r: &pb::RecommendResponse) -> Value {
    json!({
        "schema": "placed.recommendation/v1",
        "container": r.container,
        "placement": if r.placement_id.is_empty() { Value::Null } else { json!(r.placement_id) },
        "cpus": r.cpus, "mems": r.mems,
        "predicted_relative": if r.predicted_relative > 0.0 { json!(r.predicted_relative) } else { Value::Null },
        "would_move": r.would_move,
        "reason": r.reason,
    })
}

/// `new_policy`: the policy the request made the container's own (`pinned:<id>` for a
/// placement), to be said rather than changed silently.
pub fn render_place(r: &pb::PlaceResponse, new_policy: Option<&str>) -> String {
    let target = if r.placement_id.is_empty() {
        "unpinned".to_owned()
    } else {
        r.placement_id.clone()
    };
    let mut text = if r.moved {
        format!(
            "{} moved to {target}: cpus {}, mems {} ({} bytes migrated in {} ms)\n{}\n",
            r.container,
            r.cpus,
            r.mems,
            r.bytes_moved,
            millis(r.duration.as_ref()),
            r.reason
        )
    } else {
        format!("{} not moved: {}\n", r.container, r.reason)
    };
    if let Some(policy) = new_policy {
        text.push_str(&format!(
            "policy of {} is now {policy}: the daemon keeps it there; `placectl manage {} --policy ...` changes it\n",
            r.container, r.container
        ));
    }
    text
}

pub fn place_json(r: &pb::PlaceResponse, new_policy: Option<&str>) -> Value {
    json!({
        "schema": "placed.place/v1",
        "container": r.container,
        "placement": if r.placement_id.is_empty() { Value::Null } else { json!(r.placement_id) },
        "cpus": r.cpus, "mems": r.mems, "moved": r.moved,
        "bytes_moved": r.bytes_moved, "duration_ms": millis(r.duration.as_ref()), "reason": r.reason,
        "policy": new_policy,
    })
}

pub fn render_unmanaged(r: &pb::UnmanageResponse) -> String {
    let name = if r.name.is_empty() {
        &r.container
    } else {
        &r.name
    };
    format!(
        "{name} handed back{}: cpus {}, mems {}\n{}\n",
        if r.restored {
            ", its original cpuset restored"
        } else {
            ""
        },
        r.cpus,
        r.mems,
        r.detail
    )
}

pub fn unmanaged_json(r: &pb::UnmanageResponse) -> Value {
    json!({
        "schema": "placed.unmanage/v1",
        "container": r.container, "name": r.name, "restored": r.restored,
        "cpus": r.cpus, "mems": r.mems, "detail": r.detail,
    })
}

fn kind_name(k: i32) -> &'static str {
    match pb::EventKind::try_from(k) {
        Ok(pb::EventKind::Discovered) => "discovered",
        Ok(pb::EventKind::State) => "state",
        Ok(pb::EventKind::Predicted) => "predicted",
        Ok(pb::EventKind::MigrationStarted) => "migration-started",
        Ok(pb::EventKind::MigrationFinished) => "migration-finished",
        Ok(pb::EventKind::Vanished) => "vanished",
        Ok(pb::EventKind::Error) => "error",
        Ok(pb::EventKind::Overridden) => "overridden",
        Ok(pb::EventKind::Unmanaged) => "unmanaged",
        _ => "unknown",
    }
}

pub fn render_event(e: &pb::WatchResponse) -> String {
    format!(
        "{} #{} {} {} [{}] {}{}\n",
        rfc3339(e.time.as_ref()),
        e.sequence,
        e.container,
        kind_name(e.kind),
        state_name(e.state),
        e.message,
        if e.placement_id.is_empty() {
            String::new()
        } else {
            format!(" ({})", e.placement_id)
        }
    )
}

/// One JSON line per event.
pub fn event_json(e: &pb::WatchResponse) -> Value {
    json!({
        "schema": "placed.event/v1",
        "sequence": e.sequence,
        "unix_ms": unix_ms(e.time.as_ref()), "time": rfc3339(e.time.as_ref()), "container": e.container, "kind": kind_name(e.kind),
        "state": state_name(e.state),
        "placement": if e.placement_id.is_empty() { Value::Null } else { json!(e.placement_id) },
        "message": e.message,
        "cpuset_override": e.cpuset_override.as_ref().map_or(Value::Null, override_json),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn response() -> pb::PlaceResponse {
        pb::PlaceResponse {
            container: "web".into(),
            placement_id: "numa1-a".into(),
            cpus: "0-3".into(),
            mems: "0".into(),
            moved: true,
            reason: "ordered".into(),
            ..Default::default()
        }
    }

    #[test]
    fn a_placement_says_it_pins_the_container() {
        let text = render_place(&response(), Some("pinned:numa1-a"));
        assert!(
            text.contains("policy of web is now pinned:numa1-a"),
            "{text}"
        );
        assert_eq!(
            place_json(&response(), Some("pinned:numa1-a"))["policy"],
            "pinned:numa1-a"
        );
        // Its own policy applied: nothing changes, nothing to say.
        assert!(!render_place(&response(), None).contains("policy"));
        assert!(place_json(&response(), None)["policy"].is_null());
    }

    #[test]
    fn an_overridden_container_says_so_in_the_table_and_in_json() {
        let c = pb::Container {
            name: "web".into(),
            cpus: "0-3".into(),
            mems: "0".into(),
            detail: "placed by smart-aggressive".into(),
            effective_on_override: pb::OnOverride::Adopt as i32,
            cpuset_override: Some(pb::CpusetOverride {
                expected_cpus: "0-3".into(),
                expected_mems: "0".into(),
                found_cpus: "0-7".into(),
                found_mems: "0-1".into(),
                action: pb::OverrideAction::GaveUp as i32,
                time: Some(prost_types::Timestamp {
                    seconds: 1_795_508_243,
                    nanos: 0,
                }),
            }),
            ..Default::default()
        };
        let text = render_containers(std::slice::from_ref(&c));
        assert!(
            text.contains("OVERRIDDEN at 2026-11-24T08:17:23.000Z: found cpus 0-7 mems 0-1, placed had cpus 0-3 mems 0; gave up; placed by smart-aggressive"),
            "{text}"
        );
        let j = container_json(&c);
        assert_eq!(j["on_override"], "adopt");
        assert_eq!(j["on_override_default"], true);
        assert_eq!(j["cpuset_override"]["action"], "gave_up");
        assert_eq!(j["cpuset_override"]["found_mems"], "0-1");
        let plain = container_json(&pb::Container::default());
        assert!(plain["cpuset_override"].is_null(), "{plain}");
    }

    #[test]
    fn a_prediction_shows_its_calibrated_intervals_and_none_for_measured_cells() {
        let p = pb::PredictResponse {
            container: "web".into(),
            baseline_id: "a".into(),
            probe_id: "b".into(),
            placements: vec![
                pb::PredictedPlacement {
                    placement_id: "a".into(),
                    relative: 1.0,
                    ..Default::default()
                },
                pb::PredictedPlacement {
                    placement_id: "c".into(),
                    relative: 1.2,
                    spread: 0.02,
                    interval_low: 1.05,
                    interval_high: 1.31,
                    interval_level: 0.9,
                    measured: false,
                },
            ],
            ..Default::default()
        };
        let text = render_prediction(&p, None);
        assert!(text.contains("90% INTERVAL"), "{text}");
        assert!(text.contains("x1.05-x1.31"), "{text}");
        assert!(!text.contains("third"), "{text}");
        let j = prediction_json(&p);
        assert!(j["placements"][0]["interval"].is_null(), "{j}");
        assert_eq!(j["placements"][1]["interval"]["high"], 1.31);
        assert_eq!(j["placements"][1]["interval"]["level"], 0.9);
        assert!(j["third_measurement"].is_null(), "{j}");
    }

    #[test]
    fn a_third_measurement_is_shown_as_measured_with_its_reason() {
        let why = "c measured as well: its predicted interval 0.85-1.05 holds the goal 0.9, and measured at 0.93 x baseline";
        let p = pb::PredictResponse {
            container: "web".into(),
            baseline_id: "a".into(),
            probe_id: "b".into(),
            observations: ["a", "b", "c"]
                .map(|id| pb::Observation {
                    placement_id: id.into(),
                    value: 100.0,
                    ..Default::default()
                })
                .to_vec(),
            placements: vec![pb::PredictedPlacement {
                placement_id: "c".into(),
                relative: 0.93,
                measured: true,
                ..Default::default()
            }],
            third_measurement: why.into(),
            ..Default::default()
        };
        let text = render_prediction(&p, None);
        assert!(text.contains("measured (third)"), "{text}");
        assert!(
            text.contains(&format!("third measurement: {why}")),
            "{text}"
        );
        let observed: Vec<&str> = text
            .lines()
            .filter(|l| l.trim_start().starts_with("c "))
            .collect();
        assert!(observed[0].contains("third"), "{text}");
        let j = prediction_json(&p);
        assert_eq!(j["third_measurement"], why);
        assert_eq!(j["placements"][0]["measured"], true);
    }

    #[test]
    fn times_are_rfc3339_utc_with_milliseconds() {
        let t = prost_types::Timestamp {
            seconds: 1_795_508_243,
            nanos: 123_456_789,
        };
        assert_eq!(rfc3339(Some(&t)), "2026-11-24T08:17:23.123Z");
        assert_eq!(rfc3339(None), "-");
        let before_epoch = prost_types::Timestamp {
            seconds: -1,
            nanos: 0,
        };
        assert_eq!(rfc3339(Some(&before_epoch)), "-");
    }
}
