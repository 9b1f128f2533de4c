//! The `[nri]` section: whether placed runs as the node's NRI plugin, where the runtime's
//! socket is, and which pods it takes.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Which pods' containers placed takes when their annotations say nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OptIn {
    /// Only containers whose pod (or own) `placed.io/` annotations opt them in, and every
    /// container of the namespaces listed in `nri.namespaces`.
    Annotated,
    /// Every sized container (a CPU limit or request) not opted out.
    All,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NriConfig {
    /// Run as an NRI plugin of the container runtime (containerd 1.7+, CRI-O).
    pub enabled: bool,
    /// The runtime's NRI socket.
    pub socket: PathBuf,
    /// The name placed registers with the runtime.
    pub plugin_name: String,
    /// Two digits: the runtime calls plugins in ascending order of it.
    pub plugin_index: String,
    /// How long an answer to the runtime may take; past it the pod starts as the runtime
    /// would start it and placed's decision follows as an update. Under 2 s (the runtime
    /// drops a plugin that answers later).
    #[serde(with = "humantime_serde")]
    pub answer_budget: Duration,
    pub opt_in: OptIn,
    /// Namespaces whose containers are taken unless their annotations opt them out.
    pub namespaces: Vec<String>,
    /// Pod labels (all of them, with these values) whose pods' containers are taken unless
    /// their annotations opt them out.
    pub pod_labels: std::collections::BTreeMap<String, String>,
    /// How long the units chosen at CreateContainer stay held for the container until it
    /// has started (an image pull happens before creation, so this covers only the
    /// runtime's own work).
    #[serde(with = "humantime_serde")]
    pub start_hold: Duration,
    /// The kubelet's CPU manager state (read only): with its static policy on, the kubelet
    /// owns exclusive cpusets and placed manages nothing through NRI.
    pub kubelet_cpu_manager_state: PathBuf,
}

impl Default for NriConfig {
    fn default() -> Self {
        let plugin = placed_nri::Config::default();
        Self {
            enabled: false,
            socket: plugin.socket,
            plugin_name: plugin.name,
            plugin_index: plugin.index,
            answer_budget: plugin.budget,
            opt_in: OptIn::Annotated,
            namespaces: Vec::new(),
            pod_labels: std::collections::BTreeMap::new(),
            start_hold: Duration::from_secs(120),
            kubelet_cpu_manager_state: PathBuf::from("/var/lib/kubelet/cpu_manager_state"),
        }
    }
}

impl NriConfig {
    /// The plugin's own settings, checked.
    pub fn plugin(&self) -> Result<placed_nri::Config, placed_nri::config::ConfigError> {
        let config = placed_nri::Config {
            socket: self.socket.clone(),
            name: self.plugin_name.clone(),
            index: self.plugin_index.clone(),
            budget: self.answer_budget,
            ..placed_nri::Config::default()
        };
        config.validate()?;
        Ok(config)
    }

    /// What is wrong with the section, in a line; `None` when it can be used.
    pub fn problem(&self) -> Option<String> {
        if let Err(e) = self.plugin() {
            return Some(placed_core::text::error_line(&e));
        }
        if self.start_hold.is_zero() || self.start_hold > crate::lifecycle::MAX_HOLD {
            return Some(format!(
                "nri.start_hold {:?} must be above 0 and at most {:?}",
                self.start_hold,
                crate::lifecycle::MAX_HOLD
            ));
        }
        if let Some(n) = self.namespaces.iter().find(|n| n.trim().is_empty()) {
            return Some(format!("nri.namespaces holds an empty name ({n:?})"));
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_usable_and_bad_values_are_named() {
        assert_eq!(NriConfig::default().problem(), None);
        let late = NriConfig {
            answer_budget: Duration::from_secs(3),
            ..NriConfig::default()
        };
        assert!(late.problem().unwrap().contains("nri.budget"), "{late:?}");
        let index = NriConfig {
            plugin_index: "5".into(),
            ..NriConfig::default()
        };
        assert!(index.problem().unwrap().contains("nri.index"));
        let hold = NriConfig {
            start_hold: Duration::ZERO,
            ..NriConfig::default()
        };
        assert!(hold.problem().unwrap().contains("nri.start_hold"));
        let ns = NriConfig {
            namespaces: vec![" ".into()],
            ..NriConfig::default()
        };
        assert!(ns.problem().unwrap().contains("nri.namespaces"));
    }
}
