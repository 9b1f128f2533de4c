//! What a pod's annotations ask of placed, for one of its containers.
//!
//! Every key starts with [`PREFIX`]. A key alone applies to every container of the pod; the
//! same key followed by `.container.<name>` applies to the container of that name only,
//! and wins over the pod's:
//!
//! ```text
//! placed.io/policy: model                    every container: the model policy
//! placed.io/goal: "0.8"                      ... keeping 80% of baseline performance
//! placed.io/policy.container.sidecar: observe   but the sidecar is only observed
//! placed.io/manage.container.logger: "false"    and the logger is left alone
//! ```
//!
//! The keys ([`Key`]): `manage` (`true`/`false`: opt in or out, whatever the node's
//! opt-in setting says), `policy` (as `placectl manage --policy`: observe, model,
//! conservative, aggressive, smart-aggressive, `pinned:<id>`), `goal` (the model policy's
//! fraction of baseline, in (0, 2]), `metric` (as `placectl manage --metric`, kept as
//! written for the daemon to parse), `placement` (a placement id: short for
//! `policy: pinned:<id>`) and `on-override` (reassert, adopt or leave).
//!
//! Annotations are written by people: nothing here panics on what they wrote. A bad value,
//! an unknown key (a typo such as `placed.io/polcy`), or `policy` and `placement`
//! disagreeing in one scope is an [`AnnotationError`] naming the key; the key is then left
//! out, the others still apply, and the caller decides what a container with errors gets.
//! Keys scoped to another container are not this container's business and are not read.

use std::str::FromStr;

use placed_core::fault::Fault;
use placed_core::policy::{Policy, PolicyError};
use placed_core::reconcile::OnOverride;

use crate::objects::Map;

/// What every placed annotation key starts with.
pub const PREFIX: &str = "placed.io/";
/// Between a key and a container's name in a container-scoped key.
pub const CONTAINER_SCOPE: &str = ".container.";
/// The longest metric annotation read: a command line, not a script.
pub const MAX_METRIC: usize = 4096;
/// How much of a refused value an error quotes.
const QUOTED: usize = 80;

/// A setting an annotation can make.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Key {
    Manage,
    Policy,
    Goal,
    Metric,
    Placement,
    OnOverride,
}

impl Key {
    pub const ALL: [Key; 6] = [
        Self::Manage,
        Self::Policy,
        Self::Goal,
        Self::Metric,
        Self::Placement,
        Self::OnOverride,
    ];

    /// The key's name after the prefix.
    pub fn name(self) -> &'static str {
        match self {
            Self::Manage => "manage",
            Self::Policy => "policy",
            Self::Goal => "goal",
            Self::Metric => "metric",
            Self::Placement => "placement",
            Self::OnOverride => "on-override",
        }
    }

    /// The annotation that sets it for the whole pod.
    pub fn pod_key(self) -> String {
        format!("{PREFIX}{}", self.name())
    }

    /// The annotation that sets it for one container.
    pub fn container_key(self, container: &str) -> String {
        format!("{PREFIX}{}{CONTAINER_SCOPE}{container}", self.name())
    }
}

/// An annotation placed cannot use; it names the annotation's key.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AnnotationError {
    #[error(
        "annotation {key:?}: unknown key; expected {PREFIX}<key> or {PREFIX}<key>{CONTAINER_SCOPE}<container> with <key> one of manage, policy, goal, metric, placement, on-override"
    )]
    UnknownKey { key: String },
    #[error("annotation {key:?}: no container name after {CONTAINER_SCOPE:?}")]
    NoContainer { key: String },
    #[error("annotation {key:?}: {value:?} {problem}")]
    BadValue {
        key: String,
        value: String,
        problem: String,
    },
    #[error("annotations {key:?} and {other:?} disagree on the policy; neither is used")]
    Conflict { key: String, other: String },
}

impl AnnotationError {
    /// The annotation's key (the first one, for a conflict).
    pub fn key(&self) -> &str {
        match self {
            Self::UnknownKey { key }
            | Self::NoContainer { key }
            | Self::BadValue { key, .. }
            | Self::Conflict { key, .. } => key,
        }
    }

    /// The pod's author has to fix it.
    pub fn fault(&self) -> Fault {
        Fault::InvalidInput
    }
}

/// What the annotations ask for one container; `None` where they say nothing (the node's
/// settings apply).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Intent {
    /// Opted in or out explicitly.
    pub manage: Option<bool>,
    /// The policy; a model policy carries the goal (the annotated one, or the default
    /// given to [`intent`]).
    pub policy: Option<Policy>,
    /// The goal, when annotated (it applies to the model policy, whichever scope or
    /// setting chose that).
    pub goal: Option<f64>,
    /// The metric, as written.
    pub metric: Option<String>,
    pub on_override: Option<OnOverride>,
}

impl Intent {
    /// Whether the annotations opt the container in (`Some(true)`: `manage: true`, or any
    /// other placed key and no `manage: false`), out (`Some(false)`: `manage: false`), or
    /// say nothing (`None`: the node's opt-in setting decides).
    pub fn opted_in(&self) -> Option<bool> {
        let any = self.policy.is_some()
            || self.goal.is_some()
            || self.metric.is_some()
            || self.on_override.is_some();
        match self.manage {
            Some(m) => Some(m),
            None if any => Some(true),
            None => None,
        }
    }
}

/// The intent for one container and the annotations that could not be used.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Annotated {
    pub intent: Intent,
    pub errors: Vec<AnnotationError>,
}

/// Reads the pod's annotations for the container named `container`; `default_goal` is the
/// goal of a model policy with no goal annotated.
pub fn intent(annotations: &Map, container: &str, default_goal: f64) -> Annotated {
    let mut errors = Vec::new();
    // (key, value) pairs of each scope, in key order (the map is sorted: errors come out
    // in a stable order).
    let mut pod = Vec::new();
    let mut own = Vec::new();
    for (full, value) in annotations {
        let Some(rest) = full.strip_prefix(PREFIX) else {
            continue;
        };
        let (name, scope) = match rest.split_once(CONTAINER_SCOPE) {
            Some((name, c)) => (name, Some(c)),
            None => (rest, None),
        };
        let Some(key) = Key::ALL.into_iter().find(|k| k.name() == name) else {
            errors.push(AnnotationError::UnknownKey { key: clip(full) });
            continue;
        };
        match scope {
            None => pod.push((key, full.as_str(), value.trim())),
            Some("") => errors.push(AnnotationError::NoContainer { key: clip(full) }),
            Some(c) if c == container => own.push((key, full.as_str(), value.trim())),
            Some(_) => {}
        }
    }
    let pod = Scope::read(&pod, default_goal, &mut errors);
    let own = Scope::read(&own, default_goal, &mut errors);
    let goal = own.goal.or(pod.goal);
    let mut policy = own.policy.or(pod.policy);
    if let (Some(Policy::Model { goal: g }), Some(annotated)) = (&mut policy, goal) {
        *g = annotated;
    }
    Annotated {
        intent: Intent {
            manage: own.manage.or(pod.manage),
            policy,
            goal,
            metric: own.metric.or(pod.metric),
            on_override: own.on_override.or(pod.on_override),
        },
        errors,
    }
}

/// The settings of one scope (the pod's, or one container's).
#[derive(Default)]
struct Scope {
    manage: Option<bool>,
    policy: Option<Policy>,
    goal: Option<f64>,
    metric: Option<String>,
    on_override: Option<OnOverride>,
}

impl Scope {
    fn read(
        pairs: &[(Key, &str, &str)],
        default_goal: f64,
        errors: &mut Vec<AnnotationError>,
    ) -> Self {
        let mut s = Self::default();
        let mut policy = None;
        let mut placement = None;
        for &(key, full, value) in pairs {
            let bad = |problem: &str| AnnotationError::BadValue {
                key: clip(full),
                value: clip(value),
                problem: problem.to_owned(),
            };
            let read = match key {
                Key::Manage => match value {
                    "true" | "false" => {
                        s.manage = Some(value == "true");
                        Ok(())
                    }
                    _ => Err(bad("is not true or false")),
                },
                // The core's own messages quote the value whole; ours quote it clipped.
                Key::Policy => match Policy::parse(value, default_goal) {
                    Ok(p) => {
                        policy = Some((full, p));
                        Ok(())
                    }
                    Err(PolicyError::Unknown { .. }) => Err(bad(
                        "is not a policy: expected observe, model, conservative, aggressive, smart-aggressive or pinned:<placement id>",
                    )),
                    Err(e) => Err(bad(&format!("is not a policy: {e}"))),
                },
                Key::Goal => match f64::from_str(value) {
                    Ok(g) if g > 0.0 && g <= 2.0 => {
                        s.goal = Some(g);
                        Ok(())
                    }
                    _ => Err(bad(
                        "is not a goal: a fraction of baseline performance in (0, 2]",
                    )),
                },
                Key::Metric => {
                    if value.is_empty() {
                        Err(bad("is empty"))
                    } else if value.len() > MAX_METRIC {
                        Err(bad(&format!("is longer than {MAX_METRIC} bytes")))
                    } else if value.contains(['\n', '\r']) {
                        Err(bad("spans several lines"))
                    } else {
                        s.metric = Some(value.to_owned());
                        Ok(())
                    }
                }
                Key::Placement => {
                    if value.is_empty() || value.contains(char::is_whitespace) {
                        Err(bad("is not a placement id"))
                    } else {
                        placement = Some((full, value));
                        Ok(())
                    }
                }
                Key::OnOverride => match value.parse() {
                    Ok(o) => {
                        s.on_override = Some(o);
                        Ok(())
                    }
                    Err(_) => Err(bad("is not reassert, adopt or leave")),
                },
            };
            if let Err(e) = read {
                errors.push(e);
            }
        }
        s.policy = match (policy, placement) {
            (p, None) => p.map(|(_, p)| p),
            (None, Some((_, id))) => Some(Policy::Pinned {
                placement: id.to_owned(),
            }),
            (Some((_, Policy::Pinned { placement: a })), Some((_, b))) if a == b => {
                Some(Policy::Pinned { placement: a })
            }
            (Some((pk, _)), Some((lk, _))) => {
                errors.push(AnnotationError::Conflict {
                    key: clip(pk),
                    other: clip(lk),
                });
                None
            }
        };
        s
    }
}

fn clip(text: &str) -> String {
    placed_core::text::clip(text, QUOTED)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&str, &str)]) -> Map {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn read(pairs: &[(&str, &str)], container: &str) -> Annotated {
        intent(&map(pairs), container, 0.9)
    }

    #[test]
    fn no_placed_annotations_say_nothing() {
        let a = read(
            &[("io.kubernetes.pod.name", "web"), ("other.io/policy", "x")],
            "web",
        );
        assert_eq!(a, Annotated::default());
        assert_eq!(a.intent.opted_in(), None);
    }

    #[test]
    fn pod_keys_apply_to_every_container() {
        let pairs = [
            ("placed.io/policy", "model"),
            ("placed.io/goal", "0.8"),
            (
                "placed.io/metric",
                "prometheus http://127.0.0.1:9100/metrics ops_total",
            ),
            ("placed.io/on-override", "adopt"),
        ];
        for c in ["web", "sidecar"] {
            let a = read(&pairs, c);
            assert_eq!(a.errors, []);
            assert_eq!(a.intent.policy, Some(Policy::Model { goal: 0.8 }));
            assert_eq!(a.intent.goal, Some(0.8));
            assert_eq!(
                a.intent.metric.as_deref(),
                Some("prometheus http://127.0.0.1:9100/metrics ops_total")
            );
            assert_eq!(a.intent.on_override, Some(OnOverride::Adopt));
            assert_eq!(a.intent.opted_in(), Some(true));
        }
    }

    #[test]
    fn the_containers_key_wins_over_the_pods_for_that_container_only() {
        let pairs = [
            ("placed.io/policy", "model"),
            ("placed.io/goal", "0.8"),
            ("placed.io/policy.container.sidecar", "observe"),
            ("placed.io/goal.container.web", "1.1"),
            ("placed.io/manage.container.logger", "false"),
        ];
        let web = read(&pairs, "web").intent;
        assert_eq!(web.policy, Some(Policy::Model { goal: 1.1 }));
        let sidecar = read(&pairs, "sidecar").intent;
        assert_eq!(sidecar.policy, Some(Policy::Observe));
        assert_eq!(sidecar.goal, Some(0.8));
        let logger = read(&pairs, "logger").intent;
        assert_eq!(logger.opted_in(), Some(false));
        assert_eq!(logger.policy, Some(Policy::Model { goal: 0.8 }));
    }

    #[test]
    fn a_model_policy_without_a_goal_gets_the_default() {
        let a = read(&[("placed.io/policy.container.web", "model")], "web");
        assert_eq!(a.intent.policy, Some(Policy::Model { goal: 0.9 }));
        assert_eq!(a.intent.goal, None);
        // A pod's goal reaches a container's own model policy.
        let a = read(
            &[
                ("placed.io/goal", "0.5"),
                ("placed.io/policy.container.web", "model"),
            ],
            "web",
        );
        assert_eq!(a.intent.policy, Some(Policy::Model { goal: 0.5 }));
    }

    #[test]
    fn placement_is_short_for_pinned_and_its_scope_decides() {
        let a = read(&[("placed.io/placement", "numa1-core2-ic1")], "web");
        assert_eq!(
            a.intent.policy,
            Some(Policy::Pinned {
                placement: "numa1-core2-ic1".into()
            })
        );
        // A container's placement wins over the pod's policy, and the reverse.
        let a = read(
            &[
                ("placed.io/policy", "model"),
                ("placed.io/placement.container.web", "p1"),
            ],
            "web",
        );
        assert_eq!(
            a.intent.policy,
            Some(Policy::Pinned {
                placement: "p1".into()
            })
        );
        let a = read(
            &[
                ("placed.io/placement", "p1"),
                ("placed.io/policy.container.web", "aggressive"),
            ],
            "web",
        );
        assert_eq!(a.intent.policy, Some(Policy::Aggressive));
        // Agreeing in one scope is fine.
        let a = read(
            &[
                ("placed.io/placement", "p1"),
                ("placed.io/policy", "pinned:p1"),
            ],
            "web",
        );
        assert_eq!(a.errors, []);
        assert_eq!(
            a.intent.policy,
            Some(Policy::Pinned {
                placement: "p1".into()
            })
        );
    }

    #[test]
    fn policy_and_placement_disagreeing_in_one_scope_is_an_error_and_neither_applies() {
        let a = read(
            &[("placed.io/placement", "p1"), ("placed.io/policy", "model")],
            "web",
        );
        assert_eq!(
            a.errors,
            [AnnotationError::Conflict {
                key: "placed.io/policy".into(),
                other: "placed.io/placement".into()
            }]
        );
        assert_eq!(a.intent.policy, None);
        // The pod's conflict does not hide a container's own choice.
        let a = read(
            &[
                ("placed.io/placement", "p1"),
                ("placed.io/policy", "model"),
                ("placed.io/policy.container.web", "observe"),
            ],
            "web",
        );
        assert_eq!(a.intent.policy, Some(Policy::Observe));
        assert_eq!(a.errors.len(), 1);
    }

    #[test]
    fn bad_values_name_their_key_and_leave_the_rest_in_force() {
        let a = read(
            &[
                ("placed.io/policy", "fastest"),
                ("placed.io/goal.container.web", "3"),
                ("placed.io/manage", "yes"),
                ("placed.io/on-override", "fight"),
                ("placed.io/metric", " "),
                ("placed.io/placement", "a b"),
                ("placed.io/polcy", "model"),
                ("placed.io/policy.container.", "model"),
                ("placed.io/metric.container.web", "pushed"),
            ],
            "web",
        );
        let keys: Vec<_> = a.errors.iter().map(AnnotationError::key).collect();
        assert_eq!(
            keys,
            [
                "placed.io/polcy",
                "placed.io/policy.container.",
                "placed.io/manage",
                "placed.io/metric",
                "placed.io/on-override",
                "placed.io/placement",
                "placed.io/policy",
                "placed.io/goal.container.web",
            ]
        );
        assert!(a.errors.iter().all(|e| e.fault() == Fault::InvalidInput));
        let messages: Vec<_> = a.errors.iter().map(ToString::to_string).collect();
        assert!(
            messages[6].contains("\"fastest\" is not a policy: expected observe"),
            "{messages:?}"
        );
        assert!(messages[7].contains("in (0, 2]"), "{messages:?}");
        assert!(messages[0].contains("unknown key"), "{messages:?}");
        // What was good still applies.
        assert_eq!(a.intent.metric.as_deref(), Some("pushed"));
        assert_eq!(a.intent.policy, None);
        assert_eq!(a.intent.opted_in(), Some(true));
    }

    #[test]
    fn hostile_values_are_refused_without_panicking_and_quoted_short() {
        let long = "x".repeat(MAX_METRIC + 1);
        let odd = "\u{0}\u{ffff}é".repeat(50);
        let a = read(
            &[
                ("placed.io/metric", long.as_str()),
                ("placed.io/goal", "NaN"),
                ("placed.io/goal.container.a", "inf"),
                ("placed.io/goal.container.b", "-0"),
                ("placed.io/on-override", odd.as_str()),
                ("placed.io/metric.container.web", "pushed\nrm -rf /"),
            ],
            "web",
        );
        assert_eq!(a.errors.len(), 4, "{:?}", a.errors);
        // Key and value are quoted clipped: a message stays a line, whatever was written.
        assert!(
            a.errors
                .iter()
                .all(|e| e.to_string().chars().count() < 1200),
            "{:?}",
            a.errors
        );
        assert_eq!(a.intent, Intent::default());
        assert_eq!(
            read(&[("placed.io/goal.container.a", "inf")], "a")
                .errors
                .len(),
            1
        );
    }

    #[test]
    fn values_are_trimmed() {
        let a = read(
            &[
                ("placed.io/policy", " smart-aggressive\n"),
                ("placed.io/manage", "true "),
            ],
            "c",
        );
        assert_eq!(a.errors, []);
        assert_eq!(a.intent.policy, Some(Policy::SmartAggressive));
        assert_eq!(a.intent.manage, Some(true));
    }

    #[test]
    fn keys_are_spelled_for_people() {
        assert_eq!(Key::OnOverride.pod_key(), "placed.io/on-override");
        assert_eq!(
            Key::Policy.container_key("web"),
            "placed.io/policy.container.web"
        );
    }
}
