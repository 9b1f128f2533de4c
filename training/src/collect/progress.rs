//! Progress on stderr: measurements done of the total, what runs now, and the time left
//! estimated from the measurements this process has timed.

use std::time::Duration;

#[derive(Debug)]
pub struct Progress {
    total: usize,
    done: usize,
    /// Estimate for one measurement before any has been timed.
    first_guess: Duration,
    timed: Vec<Duration>,
}

impl Progress {
    pub fn new(total: usize, already_done: usize, first_guess: Duration) -> Self {
        Self {
            total,
            done: already_done,
            first_guess,
            timed: Vec::new(),
        }
    }

    /// Counts one measurement finished (or given up) after `took`.
    pub fn finished(&mut self, took: Duration) {
        self.done += 1;
        self.timed.push(took);
    }

    /// Time left at the mean duration so far.
    pub fn left(&self) -> Duration {
        let each = if self.timed.is_empty() {
            self.first_guess
        } else {
            self.timed.iter().sum::<Duration>() / u32::try_from(self.timed.len()).unwrap_or(1)
        };
        each.saturating_mul(u32::try_from(self.total.saturating_sub(self.done)).unwrap_or(u32::MAX))
    }

    /// `[3/12]` and the estimate, the prefix of every progress line.
    pub fn prefix(&self) -> String {
        format!("[{}/{}]", self.done + 1, self.total)
    }

    pub fn done(&self) -> usize {
        self.done
    }
}

/// `1h02m`, `3m05s` or `12s`.
pub fn human(d: Duration) -> String {
    let s = d.as_secs();
    if s >= 3600 {
        format!("{}h{:02}m", s / 3600, (s % 3600) / 60)
    } else if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{s}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_left_follows_the_measured_mean() {
        let mut p = Progress::new(10, 2, Duration::from_secs(10));
        assert_eq!(p.left(), Duration::from_secs(80));
        p.finished(Duration::from_secs(4));
        p.finished(Duration::from_secs(6));
        assert_eq!(p.left(), Duration::from_secs(30));
        assert_eq!(human(Duration::from_secs(3725)), "1h02m");
        assert_eq!(human(Duration::from_secs(185)), "3m05s");
    }
}
