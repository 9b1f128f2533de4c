//! What a pod's container asks of placed: whether it is taken, its size, policy, metric and
//! labels, from the runtime's description, the pod's annotations and the node's settings.

use std::collections::BTreeMap;

use placed_core::policy::Policy;
use placed_core::reconcile::OnOverride;
use placed_host::observe::SourceSpec;
use placed_nri::annotations;
use placed_nri::{Container, Pod};

use super::settings::{NriConfig, OptIn};

/// The label that marks a container placed took through NRI, and the one with the
/// runtime's id, which UpdateContainers names it by.
pub const VIA: &str = "placed.io/via";
pub const RUNTIME_ID: &str = "placed.io/runtime-id";

/// A container placed takes.
#[derive(Debug, Clone, PartialEq)]
pub struct Wanted {
    /// What `Manage` resolves: the container's cgroup, as a path below the mount.
    pub cgroup: String,
    /// `namespace/pod/container`, as people name it.
    pub name: String,
    pub vcpus: usize,
    pub policy: Option<Policy>,
    pub metric: Option<SourceSpec>,
    pub on_override: Option<OnOverride>,
    pub labels: BTreeMap<String, String>,
}

/// What placed does with a container, and what it could not use of its annotations.
#[derive(Debug, Clone, PartialEq)]
pub struct Reading {
    /// `Err` says why the container is left to the runtime.
    pub decision: Result<Wanted, String>,
    /// Annotations that could not be used, each in a line; the rest applies.
    pub errors: Vec<String>,
}

/// Reads what `container` of `pod` asks for under the node's `config`; `goal` is the
/// model policy's default goal.
pub fn read(config: &NriConfig, pod: &Pod, container: &Container, goal: f64) -> Reading {
    let annotated = annotations::intent(&pod.annotations, &container.name, goal);
    let mut errors: Vec<String> = annotated
        .errors
        .iter()
        .map(|e| placed_core::text::error_line(e))
        .collect();
    let intent = annotated.intent;
    let taken = match intent.opted_in() {
        Some(m) => m,
        None => {
            config.opt_in == OptIn::All
                || config.namespaces.contains(&pod.namespace)
                || (!config.pod_labels.is_empty()
                    && config
                        .pod_labels
                        .iter()
                        .all(|(k, v)| pod.labels.get(k) == Some(v)))
        }
    };
    if !taken {
        let why = if intent.manage == Some(false) {
            "opted out by its annotations"
        } else {
            "not opted in (no placed.io/ annotation; namespace and labels not in nri.namespaces or nri.pod_labels)"
        };
        return Reading {
            decision: Err(why.into()),
            errors,
        };
    }
    let Some(vcpus) = container.resources.vcpus() else {
        return Reading {
            decision: Err(
                "it has neither a CPU limit nor a CPU request (BestEffort): placed cannot size it"
                    .into(),
            ),
            errors,
        };
    };
    let metric = intent
        .metric
        .as_deref()
        .and_then(|text| match metric(text) {
            Ok(m) => m,
            Err(e) => {
                errors.push(format!("placed.io/metric: {e}"));
                None
            }
        });
    let mut labels = BTreeMap::from([
        (
            "io.kubernetes.pod.namespace".to_owned(),
            pod.namespace.clone(),
        ),
        ("io.kubernetes.pod.name".to_owned(), pod.name.clone()),
        ("io.kubernetes.pod.uid".to_owned(), pod.uid.clone()),
        (
            "io.kubernetes.container.name".to_owned(),
            container.name.clone(),
        ),
        (VIA.to_owned(), "nri".to_owned()),
        (RUNTIME_ID.to_owned(), container.id.clone()),
    ]);
    labels.retain(|_, v| !v.is_empty());
    Reading {
        decision: Ok(Wanted {
            cgroup: cgroup_path(&container.cgroups_path, &container.id),
            name: format!("{}/{}/{}", pod.namespace, pod.name, container.name),
            vcpus: usize::try_from(vcpus.count()).unwrap_or(usize::MAX),
            policy: intent.policy,
            metric,
            on_override: intent.on_override,
            labels,
        }),
        errors,
    }
}

/// A metric annotation, read as `placectl manage --metric` reads it.
fn metric(text: &str) -> Result<Option<SourceSpec>, String> {
    let spec = placed_proto::metric_text::parse(text).map_err(|e| e.to_string())?;
    crate::service::metric_from_pb(&spec).map_err(|s| s.message().to_owned())
}

/// The container's cgroup below the mount, from what the runtime gives runc: a path with
/// the cgroupfs driver (`/kubepods/burstable/pod<uid>/<id>`), or `slice:prefix:name` with
/// the systemd driver (`kubepods-burstable-pod<uid>.slice:cri-containerd:<id>`), where a
/// slice `a-b-c.slice` sits in `a.slice/a-b.slice/`. Empty: the id, which the host
/// resolves as it resolves any container id.
pub fn cgroup_path(cgroups_path: &str, id: &str) -> String {
    if cgroups_path.starts_with('/') {
        return cgroups_path.to_owned();
    }
    let mut parts = cgroups_path.splitn(3, ':');
    match (parts.next(), parts.next(), parts.next()) {
        (Some(slice), Some(prefix), Some(name)) if slice.ends_with(".slice") => {
            let stem = slice.trim_end_matches(".slice");
            let mut path = String::new();
            let mut so_far = String::new();
            for piece in stem.split('-') {
                if !so_far.is_empty() {
                    so_far.push('-');
                }
                so_far.push_str(piece);
                path.push('/');
                path.push_str(&so_far);
                path.push_str(".slice");
            }
            format!("{path}/{prefix}-{name}.scope")
        }
        _ => id.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use placed_nri::Resources;

    fn pod(annotations: &[(&str, &str)], namespace: &str) -> Pod {
        Pod {
            id: "sandbox".into(),
            uid: "u1".into(),
            name: "web".into(),
            namespace: namespace.into(),
            annotations: annotations
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            ..Pod::default()
        }
    }

    fn container(quota: Option<i64>, shares: Option<u64>) -> Container {
        Container {
            id: "c0ffee".into(),
            name: "app".into(),
            cgroups_path: "/kubepods/burstable/podu1/c0ffee".into(),
            resources: Resources {
                cpu_quota: quota,
                cpu_period: Some(100_000),
                cpu_shares: shares,
                ..Resources::default()
            },
            ..Container::default()
        }
    }

    #[test]
    fn annotated_pods_are_taken_with_their_size_and_identity() {
        let config = NriConfig::default();
        let r = read(
            &config,
            &pod(&[("placed.io/policy", "conservative")], "shop"),
            &container(Some(250_000), None),
            0.9,
        );
        let w = r.decision.unwrap();
        assert_eq!(w.vcpus, 3);
        assert_eq!(w.name, "shop/web/app");
        assert_eq!(w.cgroup, "/kubepods/burstable/podu1/c0ffee");
        assert_eq!(w.policy, Some(Policy::Conservative));
        assert_eq!(w.labels[RUNTIME_ID], "c0ffee");
        assert_eq!(w.labels["io.kubernetes.pod.namespace"], "shop");
        assert!(r.errors.is_empty());
    }

    #[test]
    fn unannotated_pods_follow_the_node_setting_and_opt_outs_win() {
        let plain = pod(&[], "shop");
        let sized = container(None, Some(2048));
        let config = NriConfig::default();
        read(&config, &plain, &sized, 0.9).decision.unwrap_err();
        let ns = NriConfig {
            namespaces: vec!["shop".into()],
            ..NriConfig::default()
        };
        assert_eq!(read(&ns, &plain, &sized, 0.9).decision.unwrap().vcpus, 2);
        let labelled = NriConfig {
            pod_labels: [("tier".to_owned(), "gold".to_owned())].into(),
            ..NriConfig::default()
        };
        read(&labelled, &plain, &sized, 0.9).decision.unwrap_err();
        let mut gold = plain.clone();
        gold.labels.insert("tier".into(), "gold".into());
        read(&labelled, &gold, &sized, 0.9).decision.unwrap();
        let all = NriConfig {
            opt_in: OptIn::All,
            ..NriConfig::default()
        };
        let out = pod(&[("placed.io/manage", "false")], "shop");
        let why = read(&all, &out, &sized, 0.9).decision.unwrap_err();
        assert!(why.contains("opted out"), "{why}");
    }

    #[test]
    fn best_effort_containers_are_left_and_bad_annotations_reported() {
        let config = NriConfig::default();
        let p = pod(&[("placed.io/manage", "true")], "shop");
        let why = read(&config, &p, &container(None, Some(2)), 0.9)
            .decision
            .unwrap_err();
        assert!(why.contains("BestEffort"), "{why}");
        let p = pod(
            &[
                ("placed.io/goal", "7"),
                ("placed.io/metric", "carrier-pigeon"),
                ("placed.io/manage", "true"),
            ],
            "shop",
        );
        let r = read(&config, &p, &container(Some(100_000), None), 0.9);
        r.decision.as_ref().expect("the pod is still taken");
        assert_eq!(r.errors.len(), 2, "{:?}", r.errors);
        assert!(
            r.errors.iter().any(|e| e.contains("placed.io/goal")),
            "{:?}",
            r.errors
        );
        assert!(
            r.errors.iter().any(|e| e.contains("placed.io/metric")),
            "{:?}",
            r.errors
        );
    }

    #[test]
    fn systemd_driver_paths_are_expanded_into_their_slices() {
        assert_eq!(
            cgroup_path(
                "kubepods-burstable-podu1.slice:cri-containerd:c0ffee",
                "c0ffee"
            ),
            "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podu1.slice/cri-containerd-c0ffee.scope"
        );
        assert_eq!(cgroup_path("", "c0ffee"), "c0ffee");
        assert_eq!(cgroup_path("/a/b", "x"), "/a/b");
    }
}
