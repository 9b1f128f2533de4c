//! Which sub-windows are disturbed, from the noise recorded with them.
//!
//! Two kinds of rule. Absolute ones for causes outside the container that no placement
//! explains: the hypervisor stealing the CPU, other tasks running on the container's PUs
//! (containers never share an allocation unit, so that is a neighbour out of place), the PUs changing frequency (Kozak,
//! Kozak, *Chasing Zero Variability in Software Performance*, §5.1.1: DVFS ramps change the rate by a factor of three), a
//! counter reset. Relative ones for the container's own scheduling figures (involuntary
//! switches, migrations, interrupts, run-queue wait): a window is disturbed when a figure is
//! far above that same measurement's median. Relative because a placement legitimately
//! changes these figures (fewer PUs mean more switches), so an absolute threshold would
//! drop every window of one placement and none of the other; against its own median only a
//! burst stands out, like the 2-second tmux script in Kozak §4.4.1.

use super::noise::Noise;
use super::stats::median;

/// A reason to drop a window.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum Disturbance {
    /// The hypervisor took more than the allowed fraction of the PUs' time.
    Steal {
        /// Fraction stolen.
        fraction: f64,
    },
    /// Something other than the container used more than the allowed fraction of its PUs.
    ForeignLoad {
        /// Fraction of the PUs' time used by others.
        fraction: f64,
    },
    /// The PUs' frequency moved by more than the allowed fraction.
    FrequencyChanged {
        /// Lowest frequency seen, kHz.
        min_khz: u64,
        /// Highest frequency seen, kHz.
        max_khz: u64,
    },
    /// A running total went backwards: the workload, or its exporter, restarted.
    CounterReset,
    /// A scheduling figure far above this measurement's median.
    Outlier {
        /// Which figure.
        indicator: Indicator,
        /// Its value in this window.
        value: f64,
        /// The measurement's median of it.
        typical: f64,
    },
}

/// A scheduling figure checked against its median.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Indicator {
    /// Involuntary context switches per second.
    InvoluntarySwitches,
    /// Migrations per second.
    Migrations,
    /// Interrupts per second on the container's PUs.
    Interrupts,
    /// Threads waiting for a CPU, on average.
    RunqueueWait,
}

/// Thresholds. A relative figure is an outlier when it exceeds both `outlier_factor` times
/// the median and the median plus its floor: the factor catches bursts, the floor keeps a
/// near-zero median (2 switches/s) from turning every blip into a disturbance.
#[derive(Debug, Clone, PartialEq)]
pub struct DisturbanceRules {
    /// Largest tolerated steal fraction.
    pub max_steal: f64,
    /// Largest tolerated fraction of the PUs' time used by anything but the container.
    pub max_foreign: f64,
    /// Largest tolerated `max / min - 1` of the PUs' frequencies.
    pub max_frequency_spread: f64,
    /// Multiple of the median above which a figure is an outlier.
    pub outlier_factor: f64,
    /// Absolute excess over the median needed as well, per indicator:
    /// involuntary switches/s, migrations/s, interrupts/s, waiting threads.
    pub floors: [(Indicator, f64); 4],
}

impl DisturbanceRules {
    /// The reasons each window is disturbed (empty: kept).
    pub fn classify(&self, noise: &[&Noise], counter_resets: &[bool]) -> Vec<Vec<Disturbance>> {
        let medians: Vec<Option<f64>> = self
            .floors
            .iter()
            .map(|&(ind, _)| {
                let xs: Vec<f64> = noise.iter().filter_map(|n| figure(n, ind)).collect();
                median(&xs)
            })
            .collect();
        noise
            .iter()
            .zip(counter_resets)
            .map(|(n, &reset)| {
                let mut out = Vec::new();
                if n.steal > self.max_steal {
                    out.push(Disturbance::Steal { fraction: n.steal });
                }
                if n.foreign > self.max_foreign {
                    out.push(Disturbance::ForeignLoad {
                        fraction: n.foreign,
                    });
                }
                if let Some((lo, hi)) = n.frequency_khz {
                    if lo > 0 && hi as f64 / lo as f64 - 1.0 > self.max_frequency_spread {
                        out.push(Disturbance::FrequencyChanged {
                            min_khz: lo,
                            max_khz: hi,
                        });
                    }
                }
                if reset {
                    out.push(Disturbance::CounterReset);
                }
                for (&(indicator, floor), typical) in self.floors.iter().zip(&medians) {
                    let (Some(value), Some(typical)) = (figure(n, indicator), *typical) else {
                        continue;
                    };
                    if value > typical * self.outlier_factor && value > typical + floor {
                        out.push(Disturbance::Outlier {
                            indicator,
                            value,
                            typical,
                        });
                    }
                }
                out
            })
            .collect()
    }
}

fn figure(n: &Noise, indicator: Indicator) -> Option<f64> {
    match indicator {
        Indicator::InvoluntarySwitches => Some(n.involuntary_switches_per_s),
        Indicator::Migrations => n.migrations_per_s,
        Indicator::Interrupts => Some(n.interrupts_per_s),
        Indicator::RunqueueWait => Some(n.runqueue_wait),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quiet() -> Noise {
        Noise {
            steal: 0.0,
            foreign: 0.01,
            interrupts_per_s: 300.0,
            involuntary_switches_per_s: 2.0,
            migrations_per_s: Some(1.0),
            runqueue_wait: 0.001,
            cpu_use: 1.0,
            frequency_khz: None,
            threads: 1,
        }
    }

    fn rules() -> DisturbanceRules {
        DisturbanceRules {
            max_steal: 0.02,
            max_foreign: 0.05,
            max_frequency_spread: 0.1,
            outlier_factor: 3.0,
            floors: [
                (Indicator::InvoluntarySwitches, 50.0),
                (Indicator::Migrations, 20.0),
                (Indicator::Interrupts, 500.0),
                (Indicator::RunqueueWait, 0.05),
            ],
        }
    }

    #[test]
    fn each_rule_flags_its_window_and_only_it() {
        let mut ws: Vec<Noise> = (0..9).map(|_| quiet()).collect();
        ws[1].steal = 0.05;
        ws[8].foreign = 0.2;
        ws[2].frequency_khz = Some((1_000_000, 2_000_000));
        ws[4].runqueue_wait = 0.3;
        ws[5].involuntary_switches_per_s = 20.0; // 10x the median but under the floor
        ws[6].interrupts_per_s = 5_000.0;
        let resets = [false, false, false, true, false, false, false, false, false];
        let refs: Vec<&Noise> = ws.iter().collect();
        let got = rules().classify(&refs, &resets);
        let flagged: Vec<usize> = (0..9).filter(|&i| !got[i].is_empty()).collect();
        assert_eq!(flagged, vec![1, 2, 3, 4, 6, 8]);
        assert!(matches!(got[8][..], [Disturbance::ForeignLoad { .. }]));
        assert!(matches!(got[1][0], Disturbance::Steal { .. }));
        assert!(matches!(got[2][0], Disturbance::FrequencyChanged { .. }));
        assert_eq!(got[3], vec![Disturbance::CounterReset]);
        assert!(matches!(
            got[4][0],
            Disturbance::Outlier {
                indicator: Indicator::RunqueueWait,
                ..
            }
        ));
        assert!(matches!(
            got[6][0],
            Disturbance::Outlier {
                indicator: Indicator::Interrupts,
                ..
            }
        ));
    }

    #[test]
    fn a_steadily_busy_placement_is_not_an_outlier_of_itself() {
        // Every window has many switches: that is the placement, not a disturbance.
        let mut n = quiet();
        n.involuntary_switches_per_s = 900.0;
        let ws: Vec<Noise> = (0..8).map(|_| n.clone()).collect();
        let refs: Vec<&Noise> = ws.iter().collect();
        assert!(
            rules()
                .classify(&refs, &[false; 8])
                .iter()
                .all(Vec::is_empty)
        );
    }
}
