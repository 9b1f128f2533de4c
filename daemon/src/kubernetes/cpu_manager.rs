//! The kubelet's CPU manager, read from its state file: with the static policy the kubelet
//! gives Guaranteed pods exclusive cpusets and rewrites them whenever it reconciles, so two
//! owners of the node's cpusets would fight. placed then manages nothing through NRI.

use std::path::Path;

/// Why placed stands aside, or `None` when the kubelet leaves cpusets alone.
///
/// A missing file is a node without a kubelet state (or a kubelet with the `none` policy
/// that never wrote one): nothing to stand aside for. A file that cannot be read or parsed
/// is treated as static: placed cannot tell, and fighting the kubelet is worse than
/// placing nothing.
pub fn conflict(path: &Path) -> Option<String> {
    let text = match std::fs::read(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(e) => {
            return Some(format!(
                "the kubelet's CPU manager state {} cannot be read ({e}): placed cannot tell whether the kubelet owns cpusets, and places nothing through NRI",
                path.display()
            ));
        }
    };
    let policy = serde_json::from_slice::<serde_json::Value>(&text)
        .ok()
        .and_then(|v| v.get("policyName")?.as_str().map(str::to_owned));
    match policy.as_deref() {
        Some("none") => None,
        Some(p) => Some(format!(
            "the kubelet's CPU manager policy is {:?} ({}): the kubelet owns the cpusets of this node, so placed places nothing through NRI; set cpuManagerPolicy: none on nodes that run placed",
            placed_core::text::clip(p, 40),
            path.display()
        )),
        None => Some(format!(
            "the kubelet's CPU manager state {} has no policyName placed can read: placed cannot tell whether the kubelet owns cpusets, and places nothing through NRI",
            path.display()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_none_policy_or_no_file_lets_placed_act() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cpu_manager_state");
        assert_eq!(conflict(&path), None);
        std::fs::write(
            &path,
            r#"{"policyName":"none","defaultCpuSet":"","checksum":1}"#,
        )
        .unwrap();
        assert_eq!(conflict(&path), None);
        std::fs::write(
            &path,
            r#"{"policyName":"static","defaultCpuSet":"0-3","entries":{},"checksum":2}"#,
        )
        .unwrap();
        assert!(conflict(&path).unwrap().contains("\"static\""));
        std::fs::write(&path, "{not json").unwrap();
        assert!(conflict(&path).unwrap().contains("no policyName"));
    }
}
