//! Sets of PU and NUMA node ids in the kernel's list syntax (`0-3,8,10-11`).
//!
//! One type serves `cpuset.cpus`, `cpuset.mems`, `/proc/<pid>/status`'s `*_allowed_list`,
//! placement PU sets and state files, so that every place that prints or parses a set agrees
//! (STYLE.md §5: sets are stored in cpulist syntax, readable and diffable).

use std::fmt;
use std::hash::{Hash, Hasher};
use std::marker::PhantomData;
use std::str::FromStr;

/// Ids above this are refused when parsing: Linux caps `NR_CPUS` at 8192 and
/// `MAX_NUMNODES` at 1024, so anything larger is a typo or hostile input, and accepting
/// "0-4000000000" would allocate half a gigabyte of bitmap.
pub const MAX_ID: u32 = 65_535;

/// Marker for sets of PUs (what Linux calls CPUs).
#[derive(Debug)]
pub enum Cpus {}
/// Marker for sets of NUMA nodes.
#[derive(Debug)]
pub enum Nodes {}

/// A set of PU os indices.
pub type CpuSet = IdSet<Cpus>;
/// A set of NUMA node os indices.
pub type NodeSet = IdSet<Nodes>;

/// A set of small ids, stored as a bitmap and shown in cpulist syntax.
pub struct IdSet<K> {
    words: Vec<u64>,
    kind: PhantomData<fn() -> K>,
}

/// A cpulist that could not be parsed; the message names the offending piece. `input` and
/// `piece` are cut to [`QUOTED`] characters: a list can come from a file or a request of
/// any length, and the message must stay a line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseIdSetError {
    #[error("invalid id list {input:?}: {piece:?} is not a number or a range like 0-3")]
    Malformed { input: String, piece: String },
    #[error("invalid id list {input:?}: range {piece:?} goes backwards")]
    Backwards { input: String, piece: String },
    #[error("invalid id list {input:?}: id {id} is above the limit of {MAX_ID}")]
    TooLarge { input: String, id: u64 },
}

/// How much of a refused list its error quotes.
pub const QUOTED: usize = 80;

impl<K> IdSet<K> {
    /// The empty set.
    pub fn new() -> Self {
        Self {
            words: Vec::new(),
            kind: PhantomData,
        }
    }

    /// Adds `id`; returns whether it was absent.
    pub fn insert(&mut self, id: u32) -> bool {
        let (w, b) = Self::slot(id);
        if self.words.len() <= w {
            self.words.resize(w + 1, 0);
        }
        let was = self.words[w] & b != 0;
        self.words[w] |= b;
        !was
    }

    /// Removes `id`; returns whether it was present.
    pub fn remove(&mut self, id: u32) -> bool {
        let (w, b) = Self::slot(id);
        match self.words.get_mut(w) {
            Some(word) if *word & b != 0 => {
                *word &= !b;
                self.trim();
                true
            }
            _ => false,
        }
    }

    pub fn contains(&self, id: u32) -> bool {
        let (w, b) = Self::slot(id);
        self.words.get(w).is_some_and(|word| word & b != 0)
    }

    pub fn len(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }

    /// Ids in increasing order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = u32> + '_ {
        self.words.iter().enumerate().flat_map(|(wi, &word)| {
            (0..64u32)
                .filter(move |bit| word & (1u64 << bit) != 0)
                .map(move |bit| Self::id_at(wi, bit))
        })
    }

    pub fn first(&self) -> Option<u32> {
        self.iter().next()
    }

    pub fn last(&self) -> Option<u32> {
        self.iter().next_back()
    }

    pub fn union(&self, other: &Self) -> Self {
        let n = self.words.len().max(other.words.len());
        let words = (0..n)
            .map(|i| self.word(i) | other.word(i))
            .collect::<Vec<_>>();
        Self::from_words(words)
    }

    pub fn intersection(&self, other: &Self) -> Self {
        let n = self.words.len().min(other.words.len());
        Self::from_words((0..n).map(|i| self.word(i) & other.word(i)).collect())
    }

    pub fn difference(&self, other: &Self) -> Self {
        Self::from_words(
            (0..self.words.len())
                .map(|i| self.word(i) & !other.word(i))
                .collect(),
        )
    }

    pub fn is_subset(&self, other: &Self) -> bool {
        (0..self.words.len()).all(|i| self.word(i) & !other.word(i) == 0)
    }

    pub fn intersects(&self, other: &Self) -> bool {
        let n = self.words.len().min(other.words.len());
        (0..n).any(|i| self.word(i) & other.word(i) != 0)
    }

    fn word(&self, i: usize) -> u64 {
        self.words.get(i).copied().unwrap_or(0)
    }

    fn from_words(words: Vec<u64>) -> Self {
        let mut s = Self {
            words,
            kind: PhantomData,
        };
        s.trim();
        s
    }

    /// Keeps the representation canonical (no trailing zero words), so that derived
    /// equality and hashing agree with set equality.
    fn trim(&mut self) {
        while self.words.last() == Some(&0) {
            self.words.pop();
        }
    }

    fn slot(id: u32) -> (usize, u64) {
        ((id / 64) as usize, 1u64 << (id % 64))
    }

    fn id_at(word_index: usize, bit: u32) -> u32 {
        // word_index < MAX_ID / 64 + 1 by construction, so this cannot truncate.
        u32::try_from(word_index).unwrap_or(u32::MAX / 64) * 64 + bit
    }
}

impl<K> Default for IdSet<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K> Clone for IdSet<K> {
    fn clone(&self) -> Self {
        Self {
            words: self.words.clone(),
            kind: PhantomData,
        }
    }
}

impl<K> PartialEq for IdSet<K> {
    fn eq(&self, other: &Self) -> bool {
        self.words == other.words
    }
}
impl<K> Eq for IdSet<K> {}

impl<K> Hash for IdSet<K> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.words.hash(state);
    }
}

/// Ordered by their ids read as sorted sequences, so `{0,1} < {0,2} < {1}`.
impl<K> Ord for IdSet<K> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.iter().cmp(other.iter())
    }
}
impl<K> PartialOrd for IdSet<K> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl<K> FromIterator<u32> for IdSet<K> {
    fn from_iter<I: IntoIterator<Item = u32>>(iter: I) -> Self {
        let mut s = Self::new();
        for id in iter {
            s.insert(id);
        }
        s
    }
}

impl<K> Extend<u32> for IdSet<K> {
    fn extend<I: IntoIterator<Item = u32>>(&mut self, iter: I) {
        for id in iter {
            self.insert(id);
        }
    }
}

/// cpulist syntax as the kernel prints it: ascending, every run of consecutive ids
/// (two included, `0-1`) as a range, comma separated, the empty set as "".
impl<K> fmt::Display for IdSet<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        let mut ids = self.iter().peekable();
        while let Some(start) = ids.next() {
            let mut end = start;
            while ids.peek() == Some(&(end + 1)) {
                end += 1;
                ids.next();
            }
            if !first {
                f.write_str(",")?;
            }
            first = false;
            if start == end {
                write!(f, "{start}")?;
            } else {
                write!(f, "{start}-{end}")?;
            }
        }
        Ok(())
    }
}

impl<K> fmt::Debug for IdSet<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{{{self}}}")
    }
}

/// Parses what the kernel writes to `cpuset.cpus` and `*_allowed_list`: whitespace
/// (including the trailing newline) is ignored, an empty string is the empty set, and a
/// stride form `0-7:2` is not accepted because the kernel never prints it.
impl<K> FromStr for IdSet<K> {
    type Err = ParseIdSetError;

    fn from_str(input: &str) -> Result<Self, Self::Err> {
        let trimmed = input.trim();
        let mut set = Self::new();
        if trimmed.is_empty() {
            return Ok(set);
        }
        let quoted = |text: &str| crate::text::clip(text, QUOTED);
        let malformed = |piece: &str| ParseIdSetError::Malformed {
            input: quoted(input),
            piece: quoted(piece),
        };
        let number = |s: &str, piece: &str| -> Result<u32, ParseIdSetError> {
            let n: u64 = s.trim().parse().map_err(|_| malformed(piece))?;
            if n > u64::from(MAX_ID) {
                return Err(ParseIdSetError::TooLarge {
                    input: quoted(input),
                    id: n,
                });
            }
            u32::try_from(n).map_err(|_| malformed(piece))
        };
        for piece in trimmed.split(',') {
            match piece.split_once('-') {
                Some((a, b)) => {
                    let (lo, hi) = (number(a, piece)?, number(b, piece)?);
                    if lo > hi {
                        return Err(ParseIdSetError::Backwards {
                            input: quoted(input),
                            piece: quoted(piece),
                        });
                    }
                    set.extend(lo..=hi);
                }
                None => {
                    set.insert(number(piece, piece)?);
                }
            }
        }
        Ok(set)
    }
}

impl<K> serde::Serialize for IdSet<K> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de, K> serde::Deserialize<'de> for IdSet<K> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = String::deserialize(deserializer)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn prints_like_the_kernel() {
        let s: CpuSet = [0, 1, 2, 3, 8, 10, 11].into_iter().collect();
        assert_eq!(s.to_string(), "0-3,8,10-11");
        assert_eq!(CpuSet::new().to_string(), "");
        let pair: CpuSet = [4, 5].into_iter().collect();
        assert_eq!(pair.to_string(), "4-5");
    }

    #[test]
    fn parses_kernel_output_with_newline() {
        let s: CpuSet = "0-2,7\n".parse().unwrap();
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![0, 1, 2, 7]);
        assert!("".parse::<CpuSet>().unwrap().is_empty());
    }

    #[test]
    fn rejects_bad_lists_naming_the_piece() {
        assert_eq!(
            "0-3,x".parse::<CpuSet>(),
            Err(ParseIdSetError::Malformed {
                input: "0-3,x".into(),
                piece: "x".into()
            })
        );
        assert!(matches!(
            "5-2".parse::<CpuSet>(),
            Err(ParseIdSetError::Backwards { .. })
        ));
        assert!(matches!(
            "0-4000000000".parse::<CpuSet>(),
            Err(ParseIdSetError::TooLarge {
                id: 4_000_000_000,
                ..
            })
        ));
        assert!(matches!(
            "1,,2".parse::<CpuSet>(),
            Err(ParseIdSetError::Malformed { .. })
        ));
    }

    #[test]
    fn set_algebra() {
        let a: CpuSet = "0-7".parse().unwrap();
        let b: CpuSet = "4-11".parse().unwrap();
        assert_eq!(a.intersection(&b).to_string(), "4-7");
        assert_eq!(a.union(&b).to_string(), "0-11");
        assert_eq!(a.difference(&b).to_string(), "0-3");
        assert!(a.intersection(&b).is_subset(&a));
        assert!(!a.is_subset(&b));
        assert!(a.intersects(&b));
        // Canonical form: removing the high ids leaves a set equal to a fresh one.
        let mut c: CpuSet = "1,200".parse().unwrap();
        c.remove(200);
        assert_eq!(c, "1".parse().unwrap());
    }

    proptest! {
        #[test]
        fn display_then_parse_is_identity(ids in proptest::collection::vec(0u32..2048, 0..64)) {
            let s: CpuSet = ids.iter().copied().collect();
            let back: CpuSet = s.to_string().parse().unwrap();
            prop_assert_eq!(&back, &s);
            prop_assert_eq!(back.len(), ids.iter().collect::<std::collections::BTreeSet<_>>().len());
        }
    }
}
