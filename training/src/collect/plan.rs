//! The order of the measurements: every (run, workload) measured in every placement, with
//! the placement order rotated from one workload to the next so that slow drift of the host
//! (a neighbour's load, thermal state) does not always fall on the same placement.

/// One measurement to take, by index into the workload and placement lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Step {
    pub run: u32,
    pub workload: usize,
    pub placement: usize,
}

/// All steps in order.
pub fn steps(runs: u32, workloads: usize, placements: usize) -> Vec<Step> {
    let mut out = Vec::with_capacity(runs as usize * workloads * placements);
    let mut turn = 0usize;
    for run in 0..runs {
        for workload in 0..workloads {
            for k in 0..placements {
                out.push(Step {
                    run,
                    workload,
                    placement: (k + turn) % placements,
                });
            }
            turn += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_pair_once_and_each_placement_leads_in_turn() {
        let s = steps(2, 3, 3);
        assert_eq!(s.len(), 18);
        let mut seen = std::collections::HashSet::new();
        for st in &s {
            assert!(seen.insert((st.run, st.workload, st.placement)));
        }
        let leaders: Vec<usize> = s.chunks(3).map(|c| c[0].placement).collect();
        assert_eq!(leaders, vec![0, 1, 2, 0, 1, 2]);
    }
}
