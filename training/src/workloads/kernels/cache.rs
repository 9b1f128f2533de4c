//! Cache sizes of this host, from sysfs, for sizing working sets.

use std::path::Path;

/// Used when sysfs does not say (containers hiding it, odd VMs): typical of current
/// server cores.
const FALLBACK_L2: usize = 1 << 20;
const FALLBACK_L3: usize = 32 << 20;

/// Data or unified cache sizes of CPU 0, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caches {
    /// Level 2 (per core on current parts).
    pub l2: usize,
    /// Last level (level 3, or level 2 where there is no level 3).
    pub llc: usize,
}

impl Caches {
    /// This host's caches, with fallbacks for what sysfs does not tell.
    pub fn host() -> Self {
        Self::from_sysfs(Path::new("/sys/devices/system/cpu/cpu0/cache"))
    }

    /// The caches described under `dir` (`index*/{level,type,size}`).
    pub fn from_sysfs(dir: &Path) -> Self {
        let mut l2 = None;
        let mut l3 = None;
        if let Ok(entries) = std::fs::read_dir(dir) {
            for entry in entries.flatten() {
                let path = entry.path();
                let read = |f: &str| std::fs::read_to_string(path.join(f)).unwrap_or_default();
                if read("type").trim() == "Instruction" {
                    continue;
                }
                let Some(size) = parse_size(read("size").trim()) else {
                    continue;
                };
                match read("level").trim() {
                    "2" => l2 = Some(size),
                    "3" => l3 = Some(size),
                    _ => {}
                }
            }
        }
        let l2 = l2.unwrap_or(FALLBACK_L2);
        Self {
            l2,
            llc: l3.unwrap_or_else(|| l2.max(FALLBACK_L3)),
        }
    }
}

/// Parses sysfs sizes such as `2048K`, `32M` or `512`.
pub fn parse_size(text: &str) -> Option<usize> {
    let (digits, unit) = match text.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => text.split_at(i),
        None => (text, ""),
    };
    let n: usize = digits.parse().ok()?;
    let factor = match unit.trim() {
        "" => 1,
        "K" | "k" => 1 << 10,
        "M" => 1 << 20,
        "G" => 1 << 30,
        _ => return None,
    };
    n.checked_mul(factor).filter(|&b| b > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_and_missing_sysfs_falls_back() {
        assert_eq!(parse_size("2048K"), Some(2 << 20));
        assert_eq!(parse_size("105M"), Some(105 << 20));
        assert_eq!(parse_size("x"), None);
        assert_eq!(parse_size("0K"), None);
        let none = Caches::from_sysfs(Path::new("/nonexistent"));
        assert_eq!(
            none,
            Caches {
                l2: FALLBACK_L2,
                llc: FALLBACK_L3
            }
        );
    }

    #[test]
    fn a_fake_sysfs_is_read() {
        let dir = tempfile::tempdir().unwrap();
        for (i, (level, kind, size)) in [
            ("1", "Data", "48K"),
            ("1", "Instruction", "32K"),
            ("2", "Unified", "2048K"),
            ("3", "Unified", "100M"),
        ]
        .iter()
        .enumerate()
        {
            let d = dir.path().join(format!("index{i}"));
            std::fs::create_dir(&d).unwrap();
            std::fs::write(d.join("level"), level).unwrap();
            std::fs::write(d.join("type"), kind).unwrap();
            std::fs::write(d.join("size"), size).unwrap();
        }
        assert_eq!(
            Caches::from_sysfs(dir.path()),
            Caches {
                l2: 2 << 20,
                llc: 100 << 20
            }
        );
    }
}
