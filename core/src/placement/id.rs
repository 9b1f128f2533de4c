//! Placement ids: the score vector written out, so that an id means the same placement on
//! every host of a machine class, in every version that keeps the concerns, and an operator
//! can read it: `numa4-package2-l2x16-ic3.014` is four NUMA nodes on two packages, sixteen L2
//! caches, interconnect score 3.014. Models and state files key on these strings.

use crate::machine::{Concern, Machine, Scope};

/// A score as shown: counts as integers, bandwidths with three decimals.
pub fn format_score(concern: &Concern, milli: i64) -> String {
    match concern.scope {
        Scope::Interconnect | Scope::NodeWeights { .. } => {
            let sign = if milli < 0 { "-" } else { "" };
            let a = milli.unsigned_abs();
            format!("{sign}{}.{:03}", a / 1000, a % 1000)
        }
        _ => (milli / 1000).to_string(),
    }
}

pub fn placement_id(m: &Machine, scores: &[i64]) -> String {
    m.concerns
        .iter()
        .zip(scores)
        .map(|(c, &s)| {
            // `l2` followed by `16` would read as `l216`.
            let sep = if c.name.ends_with(|ch: char| ch.is_ascii_digit()) {
                "x"
            } else {
                ""
            };
            format!("{}{sep}{}", c.name, format_score(c, s))
        })
        .collect::<Vec<_>>()
        .join("-")
}
