//! Label selectors, as List and Watch filter on the orchestrator's labels: `key=value`
//! pairs separated by commas, all of which must hold; `key` alone asks for the label to be
//! present. The subset of Kubernetes' equality selectors an orchestrator needs.

use std::collections::BTreeMap;

use super::error::DaemonError;

/// Longest selector accepted: a filter, not a document.
const MAX_SELECTOR: usize = 4096;

/// A parsed selector; the empty selector matches everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selector(Vec<(String, Option<String>)>);

impl Selector {
    /// Parses `text`; the error names the pair at fault.
    pub fn parse(text: &str) -> Result<Self, DaemonError> {
        if text.len() > MAX_SELECTOR {
            return Err(DaemonError::bad(
                "label_selector",
                format!(
                    "{} bytes is longer than the {MAX_SELECTOR} accepted",
                    text.len()
                ),
            ));
        }
        let mut pairs = Vec::new();
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (key, value) = match part.split_once('=') {
                Some((k, v)) => (k.trim(), Some(v.trim().to_owned())),
                None => (part, None),
            };
            if key.is_empty() || key.contains(['=', '!', ' ']) {
                return Err(DaemonError::bad(
                    "label_selector",
                    format!(
                        "{:?} is not key=value or key",
                        placed_core::text::clip(part, 100)
                    ),
                ));
            }
            pairs.push((key.to_owned(), value));
        }
        Ok(Self(pairs))
    }

    /// Whether `labels` satisfy every pair.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.0.iter().all(|(k, v)| match v {
            Some(v) => labels.get(k) == Some(v),
            None => labels.contains_key(k),
        })
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn every_pair_must_hold_and_a_bare_key_asks_for_presence() {
        let l = labels(&[("app", "web"), ("tier", "front")]);
        assert!(Selector::parse("").unwrap().matches(&l));
        assert!(Selector::parse("app=web").unwrap().matches(&l));
        assert!(Selector::parse("app=web, tier").unwrap().matches(&l));
        assert!(!Selector::parse("app=web,tier=back").unwrap().matches(&l));
        assert!(!Selector::parse("zone").unwrap().matches(&l));
        assert!(
            Selector::parse("app=")
                .unwrap()
                .matches(&labels(&[("app", "")]))
        );
    }

    #[test]
    fn a_malformed_pair_is_refused_by_name() {
        for bad in ["=web", "app!=web", "a b=c"] {
            match Selector::parse(bad) {
                Err(DaemonError::BadRequest { field, reason }) => {
                    assert_eq!(field, "label_selector");
                    assert!(reason.contains("not key=value"), "{reason}");
                }
                other => panic!("{bad}: {other:?}"),
            }
        }
        Selector::parse(&"a".repeat(5000)).unwrap_err();
    }
}
