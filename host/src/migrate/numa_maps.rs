//! Where a process's memory is, from `/proc/<pid>/maps` and `/proc/<pid>/numa_maps`.
//!
//! `numa_maps` gives each mapping's start address and its resident pages per node
//! (`N1=512`, in units of `kernelpagesize_kB`); `maps` gives the same mappings' ends.
//! Counting pages per node this way is what `numastat -p` does.

use std::collections::BTreeMap;

/// Bytes per NUMA node.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct NodeBytes(pub BTreeMap<u32, u64>);

impl NodeBytes {
    /// Saturates rather than overflows: no process maps 2^64 bytes, so a sum that large
    /// only comes from a damaged file, and must not panic.
    pub fn total(&self) -> u64 {
        self.0.values().fold(0, |a, b| a.saturating_add(*b))
    }

    /// Bytes on nodes outside `nodes`.
    pub fn outside(&self, nodes: &placed_core::cpuset::NodeSet) -> u64 {
        self.0
            .iter()
            .filter(|(n, _)| !nodes.contains(**n))
            .map(|(_, b)| *b)
            .fold(0, u64::saturating_add)
    }

    pub fn add(&mut self, other: &NodeBytes) {
        for (n, b) in &other.0 {
            let sum = self.0.entry(*n).or_default();
            *sum = sum.saturating_add(*b);
        }
    }
}

/// One mapping with resident pages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Vma {
    pub start: u64,
    pub end: u64,
    /// Bytes per page of this mapping (4096, or the huge page size for hugetlbfs).
    pub page_size: u64,
    /// Resident pages per node, in `page_size` units.
    pub pages: BTreeMap<u32, u64>,
}

impl Vma {
    pub fn bytes(&self) -> NodeBytes {
        NodeBytes(
            self.pages
                .iter()
                .map(|(n, p)| (*n, p * self.page_size))
                .collect(),
        )
    }
}

/// A line that is not what the kernel writes, cut to 120 characters.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed {file} line: {line:?}")]
pub struct Malformed {
    pub file: &'static str,
    pub line: String,
}

/// Mapping ends by start address, from `maps` text.
pub fn parse_maps(text: &str) -> Result<BTreeMap<u64, u64>, Malformed> {
    let mut out = BTreeMap::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let bad = || Malformed {
            file: "maps",
            line: placed_core::text::clip(line, 120),
        };
        let range = line.split_whitespace().next().ok_or_else(bad)?;
        let (a, b) = range.split_once('-').ok_or_else(bad)?;
        let start = u64::from_str_radix(a, 16).map_err(|_| bad())?;
        let end = u64::from_str_radix(b, 16).map_err(|_| bad())?;
        out.insert(start, end);
    }
    Ok(out)
}

/// Mappings with resident pages, from `numa_maps` and `maps` text of the same process.
/// A mapping in `numa_maps` but not in `maps` (it changed between the two reads) is left
/// out: the next round sees it.
pub fn parse_numa_maps(numa_maps: &str, maps: &BTreeMap<u64, u64>) -> Result<Vec<Vma>, Malformed> {
    let mut out = Vec::new();
    for line in numa_maps.lines().filter(|l| !l.trim().is_empty()) {
        let bad = || Malformed {
            file: "numa_maps",
            line: placed_core::text::clip(line, 120),
        };
        let mut tokens = line.split_whitespace();
        let start = u64::from_str_radix(tokens.next().ok_or_else(bad)?, 16).map_err(|_| bad())?;
        let mut pages = BTreeMap::new();
        let mut page_kb: u64 = 4;
        for t in tokens {
            let Some((key, value)) = t.split_once('=') else {
                continue;
            };
            if let Some(node) = key.strip_prefix('N') {
                if let (Ok(n), Ok(p)) = (node.parse::<u32>(), value.parse::<u64>()) {
                    pages.insert(n, p);
                }
            } else if key == "kernelpagesize_kB" {
                page_kb = value.parse().map_err(|_| bad())?;
            }
        }
        if pages.is_empty() {
            continue;
        }
        let Some(&end) = maps.get(&start) else {
            continue;
        };
        // A mapping's bytes fit in the address space; numbers past it are a damaged line,
        // not a reason to overflow.
        let page_size = page_kb.checked_mul(1024).ok_or_else(bad)?;
        pages
            .values()
            .try_fold(0u64, |sum, p| sum.checked_add(p.checked_mul(page_size)?))
            .ok_or_else(bad)?;
        out.push(Vma {
            start,
            end,
            page_size,
            pages,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// From a 2-node QEMU guest (numa-vm): a 200 MiB anonymous buffer on node 1, the
    /// binary, a hugetlbfs mapping and the stack.
    const NUMA_MAPS: &str = "\
55d4c0a00000 default file=/usr/bin/python3.11 mapped=100 active=0 N0=100 kernelpagesize_kB=4
7f2a10000000 bind:1 anon=51200 dirty=51200 active=0 N1=51200 kernelpagesize_kB=4
7f2a30000000 default file=/dev/hugepages/x huge dirty=2 N0=1 N1=1 kernelpagesize_kB=2048
7f2a40000000 default
7ffd5e1c0000 default stack anon=3 dirty=3 N0=3 kernelpagesize_kB=4
";
    const MAPS: &str = "\
55d4c0a00000-55d4c0a64000 r--p 00000000 00:1a 123 /usr/bin/python3.11
7f2a10000000-7f2a1c800000 rw-p 00000000 00:00 0
7f2a30000000-7f2a30400000 rw-s 00000000 00:2f 7 /dev/hugepages/x
7f2a40000000-7f2a40001000 ---p 00000000 00:00 0
7ffd5e1c0000-7ffd5e1e1000 rw-p 00000000 00:00 0                          [stack]
";

    #[test]
    fn joins_numa_maps_with_maps() {
        let maps = parse_maps(MAPS).unwrap();
        let vmas = parse_numa_maps(NUMA_MAPS, &maps).unwrap();
        assert_eq!(
            vmas.len(),
            4,
            "the mapping without resident pages is left out"
        );
        assert_eq!(vmas[1].end - vmas[1].start, 200 << 20);
        assert_eq!(vmas[1].pages.get(&1), Some(&51200));
        assert_eq!(vmas[2].page_size, 2 << 20);
        let mut total = NodeBytes::default();
        for v in &vmas {
            total.add(&v.bytes());
        }
        assert_eq!(total.0[&1], (200 << 20) + (2 << 20));
        assert_eq!(total.0[&0], 103 * 4096 + (2 << 20));
        assert_eq!(total.outside(&"1".parse().unwrap()), 103 * 4096 + (2 << 20));
    }

    #[test]
    fn a_mapping_that_changed_between_reads_is_skipped() {
        let vmas = parse_numa_maps("7f0000000000 default anon=1 N0=1\n", &BTreeMap::new()).unwrap();
        assert!(vmas.is_empty());
        let err = parse_numa_maps("zz default\n", &BTreeMap::new()).unwrap_err();
        assert_eq!(err.file, "numa_maps");
        assert_eq!(parse_maps("nonsense\n").unwrap_err().file, "maps");
    }
}
