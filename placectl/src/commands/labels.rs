//! Labels as typed (`--label key=value`, repeated), for admit and manage, and a label
//! selector (`--selector key=value,key`) for containers and watch.

use std::collections::HashMap;

use crate::cli::UsageError;

#[derive(clap::Args, Debug, Clone, Default)]
pub struct LabelArgs {
    /// The orchestrator's own label, `key=value`; repeat for more. On manage, `key=`
    /// removes the label.
    #[arg(long = "label", value_name = "KEY=VALUE")]
    pub labels: Vec<String>,
}

impl LabelArgs {
    /// The labels on the wire; a word without `=` is the caller's mistake, named.
    pub fn to_map(&self) -> Result<HashMap<String, String>, UsageError> {
        let mut map = HashMap::new();
        for l in &self.labels {
            let Some((k, v)) = l.split_once('=') else {
                return Err(UsageError(format!(
                    "--label {l}: expected KEY=VALUE (KEY= removes a label on manage)"
                )));
            };
            if k.is_empty() {
                return Err(UsageError(format!("--label {l}: the key is empty")));
            }
            if map.insert(k.to_owned(), v.to_owned()).is_some() {
                return Err(UsageError(format!("--label: {k} is given twice")));
            }
        }
        Ok(map)
    }
}

#[derive(clap::Args, Debug, Clone, Default)]
pub struct SelectorArgs {
    /// Only containers whose labels match: `key=value` pairs separated by commas, all of
    /// which must hold; `key` alone asks for the label to be present.
    #[arg(long, value_name = "SELECTOR")]
    pub selector: Option<String>,
}

impl SelectorArgs {
    pub fn to_wire(&self) -> String {
        self.selector.clone().unwrap_or_default()
    }
}

/// Labels as `k=v,k=v`, sorted by key; `-` for none.
pub fn render(labels: &HashMap<String, String>) -> String {
    if labels.is_empty() {
        return "-".into();
    }
    let mut pairs: Vec<_> = labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
    pairs.sort();
    pairs.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(labels: &[&str]) -> LabelArgs {
        LabelArgs {
            labels: labels.iter().map(|&s| s.to_owned()).collect(),
        }
    }

    #[test]
    fn labels_are_key_value_pairs_and_an_empty_value_is_kept() {
        let m = args(&["team=db", "image=nginx:1.27", "old="])
            .to_map()
            .unwrap();
        assert_eq!(m["team"], "db");
        assert_eq!(m["image"], "nginx:1.27");
        assert_eq!(m["old"], "");
        assert_eq!(render(&m), "image=nginx:1.27,old=,team=db");
        let e = args(&["team"]).to_map().unwrap_err();
        assert!(e.0.contains("--label team: expected KEY=VALUE"), "{e}");
        args(&["=x"]).to_map().unwrap_err();
        assert!(
            args(&["a=1", "a=2"])
                .to_map()
                .unwrap_err()
                .0
                .contains("twice")
        );
    }
}
