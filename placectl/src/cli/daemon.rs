//! How `placectl` writes what the daemon sends about containers, for the commands that
//! print them (containers, manage) and those that name their states, policies, overrides
//! and times (status, predict, watch, ...). JSON forms are documented in docs/cli-json.md;
//! each command's own output is in its module of `crate::commands`.

use placed_core::lifecycle::Lifecycle;
use placed_core::policy::Policy;
use placed_proto::convert;
use placed_proto::v1 as pb;
use serde_json::{Value, json};

use super::table::Table;

pub fn state_name(s: i32) -> &'static str {
    convert::state_from_pb(s).map_or("unknown", Lifecycle::name)
}

pub fn provenance_name(p: i32) -> &'static str {
    match pb::Provenance::try_from(p) {
        Ok(pb::Provenance::Real) => "real",
        Ok(pb::Provenance::VirtualMachine) => "virtual_machine",
        Ok(pb::Provenance::Simulated) => "simulated",
        _ => "unknown",
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
            {
                let detail = match c.cpuset_override.as_ref().map(override_line) {
                    Some(o) if c.detail.is_empty() => o,
                    Some(o) => format!("{o}; {}", c.detail),
                    None => c.detail.clone(),
                };
                match c.outcome.as_ref().map(outcome_line) {
                    Some(o) if detail.is_empty() => o,
                    Some(o) => format!("{detail}; {o}"),
                    None => detail,
                }
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
        "labels": c.labels,
        "outcome": c.outcome.as_ref().map_or(Value::Null, outcome_json),
    })
}

/// A decision's outcome in words: what was predicted where it was placed, what was
/// measured there afterwards, and whether the interval and the goal held.
pub fn outcome_line(o: &pb::DecisionOutcome) -> String {
    let interval = if o.measured {
        "a measured cell".to_owned()
    } else if o.interval_level > 0.0 {
        format!(
            "{} its {:.0}% interval {:.3}-{:.3}",
            if o.inside_interval {
                "inside"
            } else {
                "OUTSIDE"
            },
            o.interval_level * 100.0,
            o.interval_low,
            o.interval_high
        )
    } else {
        "no interval".to_owned()
    };
    let goal = if o.goal > 0.0 {
        format!(
            ", goal {:.2} {}",
            o.goal,
            if o.goal_kept { "kept" } else { "MISSED" }
        )
    } else {
        String::new()
    };
    let data = match provenance_name(o.provenance) {
        "real" => String::new(),
        other => format!(" [model data: {other}]"),
    };
    format!(
        "checked at {}: {} predicted {:.3}, measured {:.3} ({:.1}% off, {interval}{goal}){data}",
        rfc3339(o.time.as_ref()),
        o.placement_id,
        o.predicted,
        o.realized,
        o.error_percent
    )
}

pub fn outcome_json(o: &pb::DecisionOutcome) -> Value {
    let interval = (o.interval_level > 0.0).then(
        || json!({"low": o.interval_low, "high": o.interval_high, "level": o.interval_level}),
    );
    json!({
        "model_id": o.model_id, "provenance": provenance_name(o.provenance),
        "placement": o.placement_id, "predicted": o.predicted, "interval": interval,
        "measured": o.measured, "realized": o.realized, "error_percent": o.error_percent,
        "inside_interval": if o.measured || interval.is_none() { Value::Null } else { json!(o.inside_interval) },
        "goal": if o.goal > 0.0 { json!(o.goal) } else { Value::Null },
        "goal_kept": if o.goal > 0.0 { json!(o.goal_kept) } else { Value::Null },
        "unix_ms": unix_ms(o.time.as_ref()),
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

pub fn override_json(o: &pb::CpusetOverride) -> Value {
    json!({
        "expected_cpus": o.expected_cpus, "expected_mems": o.expected_mems,
        "found_cpus": o.found_cpus, "found_mems": o.found_mems,
        "action": override_action_name(o.action),
        "unix_ms": unix_ms(o.time.as_ref()),
    })
}

/// Milliseconds since the epoch of a Timestamp (0 when absent).
pub fn unix_ms(t: Option<&prost_types::Timestamp>) -> i64 {
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

#[cfg(test)]
mod tests {
    use super::*;

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
    fn a_checked_decision_says_what_was_measured_in_the_table_and_in_json() {
        let c = pb::Container {
            name: "web".into(),
            detail: "moved".into(),
            outcome: Some(pb::DecisionOutcome {
                model_id: "m1".into(),
                provenance: pb::Provenance::Simulated as i32,
                placement_id: "numa1-core4".into(),
                predicted: 1.1,
                interval_low: 1.09,
                interval_high: 1.11,
                interval_level: 0.9,
                realized: 1.5,
                error_percent: 26.7,
                goal: 1.0,
                goal_kept: true,
                ..Default::default()
            }),
            ..Default::default()
        };
        let table = render_containers(std::slice::from_ref(&c));
        assert!(table.contains("moved; checked at"), "{table}");
        assert!(
            table.contains("OUTSIDE its 90% interval 1.090-1.110"),
            "{table}"
        );
        assert!(table.contains("[model data: simulated]"), "{table}");
        let j = container_json(&c);
        assert_eq!(j["outcome"]["inside_interval"], false);
        assert_eq!(j["outcome"]["goal_kept"], true);
        assert_eq!(j["outcome"]["interval"]["level"], 0.9);
        assert!(container_json(&pb::Container::default())["outcome"].is_null());
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
