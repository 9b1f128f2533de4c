//! Shared by the collector's tests (`collect`, `guest`).

/// `n` workloads for a collection test: built-in kernels of different families
/// (leave-one-family-out needs two families at least), topped up with the collector's
/// self-test workloads to two.
pub fn workloads(n: usize) -> String {
    let mut families = Vec::new();
    let mut pick: Vec<String> = Vec::new();
    for w in placed_training::workloads::builtin() {
        if !families.contains(&w.family) && pick.len() < n {
            families.push(w.family.clone());
            pick.push(w.name);
        }
    }
    for t in placed_training::collect::SELFTEST_NAMES {
        if pick.len() < 2 {
            pick.push((*t).into());
        }
    }
    pick.join(",")
}
