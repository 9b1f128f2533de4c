//! Placements undone from outside: what a container's cpuset should be against what the
//! kernel says it is, what to do about a difference, and how often placed may insist.
//!
//! systemd (`AllowedCPUs=` at a `daemon-reload`), the kubelet's CPU manager and
//! `docker update --cpuset-cpus` write the same cpuset files placed writes. The daemon
//! compares what it enacted with what it finds ([`compare`]): an event such as an inotify
//! modify only says a file was written, and placed's own writes cause those too.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::cpuset::{CpuSet, NodeSet};

/// What the daemon does when a managed container's cpuset changed outside it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OnOverride {
    /// Write the placement back, up to a limit within a window, then give up and say so.
    Reassert,
    /// Take the new cpuset as the container's placement and stop moving it until the
    /// operator places it again.
    Adopt,
    /// Report it and change nothing.
    Leave,
}

impl OnOverride {
    pub const ALL: [OnOverride; 3] = [Self::Reassert, Self::Adopt, Self::Leave];

    pub fn name(self) -> &'static str {
        match self {
            Self::Reassert => "reassert",
            Self::Adopt => "adopt",
            Self::Leave => "leave",
        }
    }
}

impl fmt::Display for OnOverride {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown override policy {0:?}: expected reassert, adopt or leave")]
pub struct UnknownOnOverride(pub String);

impl FromStr for OnOverride {
    type Err = UnknownOnOverride;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|o| o.name() == s)
            .ok_or_else(|| UnknownOnOverride(crate::text::clip(s, 100)))
    }
}

/// What the daemon did about one override.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// The placement was written back.
    Reasserted,
    /// The new cpuset became the container's placement; placed no longer moves it.
    Adopted,
    /// Reported only.
    Left,
    /// Written back too often within the window: placed stopped insisting and no longer
    /// moves it.
    GaveUp,
}

impl Action {
    pub const ALL: [Action; 4] = [Self::Reasserted, Self::Adopted, Self::Left, Self::GaveUp];

    pub fn name(self) -> &'static str {
        match self {
            Self::Reasserted => "reasserted",
            Self::Adopted => "adopted",
            Self::Left => "left",
            Self::GaveUp => "gave_up",
        }
    }

    /// Whether the daemon stops moving the container on its own after this, until the
    /// operator places it again: it took the other controller's choice, or lost the fight.
    pub fn holds(self) -> bool {
        matches!(self, Self::Adopted | Self::GaveUp)
    }
}

/// A cpuset as placed compares it: the CPUs and memory nodes the tasks may use.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sets {
    pub cpus: CpuSet,
    pub mems: NodeSet,
}

impl fmt::Display for Sets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cpus {} mems {}", self.cpus, self.mems)
    }
}

/// How the cpuset found differs from the one placed enacted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Difference {
    pub expected: Sets,
    pub found: Sets,
}

impl Difference {
    pub fn cpus_changed(&self) -> bool {
        self.expected.cpus != self.found.cpus
    }

    pub fn mems_changed(&self) -> bool {
        self.expected.mems != self.found.mems
    }
}

impl fmt::Display for Difference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        if self.cpus_changed() {
            parts.push(format!(
                "cpus {} instead of {}",
                self.found.cpus, self.expected.cpus
            ));
        }
        if self.mems_changed() {
            parts.push(format!(
                "mems {} instead of {}",
                self.found.mems, self.expected.mems
            ));
        }
        f.write_str(&parts.join(", "))
    }
}

/// The difference between what placed enacted and what the kernel holds, `None` when they
/// agree. Both sides are the sets in effect (on cgroup v2 the configured set within the
/// parent's), so a parent narrowed from outside counts as well as a write to the
/// container's own files; an empty side (a cpuset that could not be read as one) never
/// stands for "the whole machine".
pub fn compare(expected: &Sets, found: &Sets) -> Option<Difference> {
    (expected != found).then(|| Difference {
        expected: expected.clone(),
        found: found.clone(),
    })
}

/// How often placed writes a placement back before it gives up: at most `limit` times
/// within any `window`, so that two controllers that each insist on their own cpuset stop
/// after a few rounds instead of migrating the container back and forth for ever.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    pub limit: u32,
    pub window: Duration,
}

impl Backoff {
    /// Whether another write-back is allowed at `now`, given the times of the earlier ones
    /// (which it records when allowed, and prunes of those older than the window). Generic
    /// over the clock, so the daemon's paused test clock and a real one both serve.
    pub fn admit<T>(&self, history: &mut Vec<T>, now: T) -> bool
    where
        T: Copy + std::ops::Sub<Output = Duration>,
    {
        history.retain(|&t| now - t < self.window);
        if history.len() >= self.limit as usize {
            return false;
        }
        history.push(now);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sets(cpus: &str, mems: &str) -> Sets {
        Sets {
            cpus: cpus.parse().unwrap(),
            mems: mems.parse().unwrap(),
        }
    }

    #[test]
    fn the_same_sets_in_any_spelling_are_no_override() {
        assert_eq!(compare(&sets("0-3", "0"), &sets("0,1,2,3", "0")), None);
    }

    #[test]
    fn cpus_or_mems_changed_outside_are_named() {
        let d = compare(&sets("0-3", "0"), &sets("0-7", "0")).unwrap();
        assert!(d.cpus_changed() && !d.mems_changed());
        assert_eq!(d.to_string(), "cpus 0-7 instead of 0-3");
        let d = compare(&sets("0-3", "0"), &sets("0-3", "0-1")).unwrap();
        assert!(!d.cpus_changed() && d.mems_changed());
        assert_eq!(d.to_string(), "mems 0-1 instead of 0");
        let d = compare(&sets("0-3", "0"), &sets("4-7", "1")).unwrap();
        assert_eq!(
            d.to_string(),
            "cpus 4-7 instead of 0-3, mems 1 instead of 0"
        );
        assert_eq!(d.expected, sets("0-3", "0"));
        assert_eq!(d.found, sets("4-7", "1"));
    }

    #[test]
    fn a_narrower_or_emptied_cpuset_is_an_override_too() {
        assert!(compare(&sets("0-3", "0"), &sets("0-1", "0")).is_some());
        assert!(compare(&sets("0-3", "0"), &sets("", "")).is_some());
    }

    #[test]
    fn write_backs_stop_at_the_limit_within_the_window_and_resume_after_it() {
        let rule = Backoff {
            limit: 3,
            window: Duration::from_secs(600),
        };
        let at = |s: u64| Duration::from_secs(s);
        let mut history = Vec::new();
        assert!(rule.admit(&mut history, at(0)));
        assert!(rule.admit(&mut history, at(10)));
        assert!(rule.admit(&mut history, at(20)));
        // A fourth within ten minutes of the first: refused, and not recorded.
        assert!(!rule.admit(&mut history, at(30)));
        assert!(!rule.admit(&mut history, at(599)));
        assert_eq!(history.len(), 3);
        // The first has left the window: one more is allowed.
        assert!(rule.admit(&mut history, at(600)));
        assert!(!rule.admit(&mut history, at(605)));
    }

    #[test]
    fn override_policies_parse_by_name_only() {
        for o in OnOverride::ALL {
            assert_eq!(o.name().parse::<OnOverride>(), Ok(o));
        }
        let e = "Adopt".parse::<OnOverride>().unwrap_err();
        assert!(
            e.to_string().contains("expected reassert, adopt or leave"),
            "{e}"
        );
        assert!(Action::Adopted.holds() && Action::GaveUp.holds());
        assert!(!Action::Reasserted.holds() && !Action::Left.holds());
    }
}
