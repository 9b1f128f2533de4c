//! How many descriptors perf counters may hold at once, shared by every container.
//!
//! Counters cost one descriptor per event per PU, and the limit on open descriptors is
//! the whole process's: counters that took them all would make the next `accept(2)` or
//! state-file write fail with EMFILE. So every opening of counters first takes a
//! [`Lease`] on the budget, for all the descriptors it will hold, and is refused with
//! [`BudgetExhausted`] when they are not there. It fails rather than waits: a measurement
//! runs under its container's operation lock, in the middle of an evaluation the
//! container sits in a placement chosen only to be measured, and a measurement larger
//! than the whole budget would wait for ever; a refused one is retried by its task's
//! back-off like any other failed measurement.

use std::sync::{Arc, Mutex, OnceLock, PoisonError};

/// Descriptors kept out of the budget for everything else the process opens: its
/// listeners and clients, the state file, cgroup and procfs files, inotify, pattern
/// programs' pipes. A quarter of the limit, and never fewer than this.
pub const MIN_RESERVE: u64 = 256;

/// Opening counters would pass the budget.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "descriptor budget exhausted: {open} open of {budget}; {what} needs {wanted} more (measured again when other measurements end; raise LimitNOFILE for more at once)"
)]
pub struct BudgetExhausted {
    /// Descriptors held by counters now.
    pub open: usize,
    /// The budget.
    pub budget: usize,
    /// What was refused.
    pub wanted: usize,
    /// Whose counters, in words.
    pub what: String,
}

#[derive(Debug, Default)]
struct Counts {
    open: usize,
    peak: usize,
}

/// A budget of descriptors; clones share it.
#[derive(Debug, Clone)]
pub struct FdBudget {
    budget: usize,
    counts: Arc<Mutex<Counts>>,
}

impl FdBudget {
    /// A budget of `budget` descriptors.
    pub fn new(budget: usize) -> Self {
        Self {
            budget,
            counts: Arc::default(),
        }
    }

    /// The budget a process whose open-descriptor limit is `limit` can afford.
    pub fn for_limit(limit: u64) -> Self {
        let reserve = (limit / 4).max(MIN_RESERVE);
        Self::new(usize::try_from(limit.saturating_sub(reserve)).unwrap_or(usize::MAX))
    }

    /// This process's budget, derived once, on first use, from its soft RLIMIT_NOFILE
    /// (the daemon raises it to the hard limit before anything else).
    pub fn host() -> &'static Self {
        static HOST: OnceLock<FdBudget> = OnceLock::new();
        HOST.get_or_init(|| Self::for_limit(nofile_soft_limit()))
    }

    /// Takes `n` descriptors for `what`, or says why not.
    pub fn lease(&self, n: usize, what: impl FnOnce() -> String) -> Result<Lease, BudgetExhausted> {
        let mut c = self.counts.lock().unwrap_or_else(PoisonError::into_inner);
        if c.open.saturating_add(n) > self.budget {
            return Err(BudgetExhausted {
                open: c.open,
                budget: self.budget,
                wanted: n,
                what: what(),
            });
        }
        c.open += n;
        c.peak = c.peak.max(c.open);
        Ok(Lease {
            budget: self.clone(),
            n,
        })
    }

    /// The budget.
    pub fn budget(&self) -> usize {
        self.budget
    }

    /// Descriptors leased now.
    pub fn open(&self) -> usize {
        self.counts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .open
    }

    /// The most ever leased at once.
    pub fn peak(&self) -> usize {
        self.counts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .peak
    }

    fn give_back(&self, n: usize) {
        let mut c = self.counts.lock().unwrap_or_else(PoisonError::into_inner);
        c.open = c.open.saturating_sub(n);
    }
}

/// Descriptors taken from a budget, given back when dropped.
#[derive(Debug)]
pub struct Lease {
    budget: FdBudget,
    n: usize,
}

impl Lease {
    /// Gives `n` of the leased descriptors back early (those that were needed only while
    /// opening).
    pub fn shrink(&mut self, n: usize) {
        let n = n.min(self.n);
        self.n -= n;
        self.budget.give_back(n);
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.budget.give_back(self.n);
    }
}

fn nofile_soft_limit() -> u64 {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we own.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        // The historical default: the budget is then small, never too large.
        return 1024;
    }
    lim.rlim_cur
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_keeps_a_reserve_and_refuses_past_it_with_the_numbers() {
        assert_eq!(FdBudget::for_limit(1024).budget(), 768);
        assert_eq!(FdBudget::for_limit(65536).budget(), 49152);
        assert_eq!(FdBudget::for_limit(200).budget(), 0);
        let b = FdBudget::new(500);
        let first = b.lease(449, || "a".into()).unwrap();
        let err = b.lease(449, || "perf counters of b".into()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "descriptor budget exhausted: 449 open of 500; perf counters of b needs 449 more (measured again when other measurements end; raise LimitNOFILE for more at once)"
        );
        drop(first);
        assert_eq!(b.open(), 0);
        let mut again = b.lease(449, String::new).unwrap();
        again.shrink(1);
        assert_eq!(b.open(), 448);
        assert_eq!(b.peak(), 449);
    }
}
