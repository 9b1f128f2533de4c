//! Moving the pages of a set of processes with worker threads (the fast and throttled
//! modes): the method of Lepers et al. that thesis section 2.5.2 builds on.
//!
//! Each process's mappings with pages outside the target nodes are cut into chunks; worker
//! threads take chunks from a shared queue and for each one ask `move_pages(2)` where its
//! pages are, move those outside the target (MPOL_MF_MOVE_ALL, so that shared pages move
//! too), and ask again about pages whose status is not their destination (a transparent
//! huge page moves whole on its first address and reports EBUSY for the others). Small processes go whole through
//! `migrate_pages(2)`, one call each. A process that exits meanwhile (ESRCH) is counted
//! and skipped; processes that join meanwhile are picked up in a further round.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::sys::{self, MPOL_MF_MOVE, MPOL_MF_MOVE_ALL};
use super::{HoldPoint, Proc};
use crate::cgroup;
use placed_core::cpuset::NodeSet;

/// Rounds of "list the processes, move the new ones" before giving up on a container whose
/// processes keep appearing (a fork bomb, a busy pre-fork server).
const MAX_ROUNDS: usize = 4;

/// How to move.
#[derive(Debug, Clone)]
pub struct MoveOptions {
    /// Worker threads (at least 1).
    pub workers: usize,
    /// Bandwidth cap in bytes per second, for the throttled mode.
    pub rate: Option<u64>,
    /// Pages per `move_pages` call (4 KiB pages: 1024 = 4 MiB), rounded up to whole
    /// transparent huge pages (512).
    pub chunk_pages: usize,
    /// A process with at most this much memory to move goes whole through one
    /// `migrate_pages(2)` call (the kernel's bulk path, one worker per process) instead of
    /// `move_pages(2)` chunks shared by all workers. `None`: one chunk's worth.
    pub whole_process_bytes: Option<u64>,
    /// Tests only: wait after the first chunk while the hold point's file exists.
    pub hold: Option<HoldPoint>,
}

impl Default for MoveOptions {
    fn default() -> Self {
        Self {
            workers: 4,
            rate: None,
            chunk_pages: 1024,
            whole_process_bytes: None,
            hold: None,
        }
    }
}

/// What the workers did.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct MoveStats {
    pub bytes_moved: u64,
    pub pages_moved: u64,
    /// Pages outside the target that stayed there, by reason (`EBUSY`: pinned or under
    /// I/O, `EACCES`: shared and not movable by us, `ENOMEM`: target node full, ...).
    pub pages_failed: BTreeMap<String, u64>,
    pub processes: usize,
    /// Processes that exited while we moved them.
    pub processes_exited: usize,
    /// Processes that joined after the first round, moved in a later one.
    pub processes_appeared: usize,
    pub rounds: usize,
    #[serde(serialize_with = "super::secs")]
    pub duration: Duration,
    /// Whether we fell back to MPOL_MF_MOVE (no CAP_SYS_NICE): shared pages then stay.
    pub shared_pages_skipped: bool,
}

/// A unit of work.
#[derive(Debug, Clone)]
enum Item {
    /// `pages` pages of `page_size` bytes from `start` in `pid`.
    Range {
        pid: u32,
        start: u64,
        pages: usize,
        page_size: u64,
    },
    /// All of a small process through `migrate_pages(2)`: `from` are the nodes its pages
    /// outside the target are on, `bytes` how much that is.
    Whole { pid: u32, from: NodeSet, bytes: u64 },
}

impl Item {
    fn pid(&self) -> u32 {
        match self {
            Item::Range { pid, .. } | Item::Whole { pid, .. } => *pid,
        }
    }
}

/// The target node of a page on `node`: the node of `to` whose position is the rank of
/// `node` among the nodes not in `to`, modulo `to`'s size (the kernel's `node_remap`
/// applied to "every node outside the target"), so that pages of two old nodes go to two
/// new ones.
pub fn destination(node: u32, to: &NodeSet) -> Option<u32> {
    let below_in_to = to.iter().take_while(|&t| t < node).count();
    let rank = usize::try_from(node).ok()? - below_in_to;
    to.iter().nth(rank % to.len().max(1))
}

/// Moves every page of the processes that `list` returns onto `to`.
pub fn move_memory(
    proc: &Proc,
    list: &dyn Fn() -> Result<Vec<u32>, cgroup::Error>,
    to: &NodeSet,
    opts: &MoveOptions,
    cancel: &AtomicBool,
) -> Result<MoveStats, super::Error> {
    let started = Instant::now();
    let shared = Shared::new(opts.rate);
    let mut done: BTreeSet<u32> = BTreeSet::new();
    let mut stats = MoveStats::default();
    let mut pids = list()?;
    for round in 0..MAX_ROUNDS {
        let new: Vec<u32> = pids.iter().copied().filter(|p| !done.contains(p)).collect();
        if new.is_empty() || cancel.load(Ordering::Relaxed) {
            break;
        }
        stats.rounds = round + 1;
        if round > 0 {
            stats.processes_appeared += new.len();
            tracing::debug!(count = new.len(), "processes appeared during migration");
        }
        let items = plan_items(proc, &new, to, opts, &shared)?;
        run(&items, to, opts, &shared, cancel);
        done.extend(new);
        pids = match list() {
            Ok(p) => p,
            // The container stopped: whatever we moved is moved.
            Err(cgroup::Error::Vanished { .. }) => break,
            Err(e) => return Err(e.into()),
        };
    }
    stats.processes = done.len();
    stats.processes_exited = lock(&shared.exited).len();
    stats.pages_moved = shared.pages_moved.load(Ordering::Relaxed);
    stats.bytes_moved = shared.bytes_moved.load(Ordering::Relaxed);
    stats.pages_failed = lock(&shared.failed).clone();
    stats.shared_pages_skipped = shared.no_move_all.load(Ordering::Relaxed);
    stats.duration = started.elapsed();
    Ok(stats)
}

/// Cuts the processes' memory outside `to` into work items.
fn plan_items(
    proc: &Proc,
    pids: &[u32],
    to: &NodeSet,
    opts: &MoveOptions,
    shared: &Shared,
) -> Result<Vec<Item>, super::Error> {
    // Whole transparent huge pages in every mode (see `chunks`): a huge page split between
    // two chunks is wanted by two workers at once, and the one migrating it finds the
    // other's reference and gives up, leaving 2 MiB behind.
    let whole = opts.chunk_pages.max(1).div_ceil(THP_PAGES) * THP_PAGES;
    let chunk_pages = match opts.rate {
        // About 20 chunks a second under a cap, so the pace is smooth.
        Some(rate) => {
            let per_twentieth = usize::try_from(rate / 4096 / 20).unwrap_or(usize::MAX);
            per_twentieth.clamp(THP_PAGES, whole) / THP_PAGES * THP_PAGES
        }
        None => whole,
    };
    let mut items = Vec::new();
    for &pid in pids {
        let Some(vmas) = proc.vmas(pid)? else {
            lock(&shared.exited).insert(pid);
            continue;
        };
        let outside: Vec<_> = vmas
            .iter()
            .filter(|v| v.pages.keys().any(|n| !to.contains(*n)))
            .collect();
        let bytes: u64 = outside.iter().map(|v| v.bytes().outside(to)).sum();
        if bytes == 0 {
            continue;
        }
        // One migrate_pages call beats many move_pages calls when there is little to move.
        let whole_limit = opts
            .whole_process_bytes
            .unwrap_or(chunk_pages as u64 * 4096);
        let small = bytes <= whole_limit && outside.iter().all(|v| v.page_size == 4096);
        if small {
            let from: NodeSet = outside
                .iter()
                .flat_map(|v| v.pages.keys().copied())
                .filter(|n| !to.contains(*n))
                .collect();
            items.push(Item::Whole { pid, from, bytes });
            continue;
        }
        for v in outside {
            chunks(pid, v, chunk_pages, &mut items);
        }
    }
    Ok(items)
}

/// 4 KiB pages in a transparent huge page (2 MiB on x86-64).
const THP_PAGES: usize = 512;

/// Cuts a mapping into ranges of at most `chunk_pages` pages whose boundaries are
/// multiples of the chunk size in the address space.
///
/// Why aligned: a transparent huge page shows as 4 KiB pages in `numa_maps` and moves
/// whole on the first of its addresses that `move_pages(2)` is given. A chunk boundary
/// inside one would have the first chunk move all 2 MiB while it is charged to the
/// throttle and counted for its own few pages, and the next find the rest "already
/// there": the throttled mode ran about ten times over its cap that way. With chunks of
/// whole, aligned huge pages (the throttled mode's are multiples of 512 pages; the fast
/// mode's 1024 by default) every huge page lies in one chunk.
fn chunks(pid: u32, v: &super::Vma, chunk_pages: usize, items: &mut Vec<Item>) {
    let page_size = v.page_size.max(1);
    let chunk_bytes = (chunk_pages.max(1) as u64).saturating_mul(page_size);
    let mut start = v.start;
    while start < v.end {
        let boundary = (start / chunk_bytes)
            .saturating_add(1)
            .saturating_mul(chunk_bytes);
        let end = boundary.min(v.end);
        let pages = usize::try_from((end - start).div_ceil(page_size)).unwrap_or(usize::MAX);
        items.push(Item::Range {
            pid,
            start,
            pages,
            page_size,
        });
        start = end;
    }
}

/// State the workers share.
struct Shared {
    next: AtomicUsize,
    bytes_moved: AtomicU64,
    pages_moved: AtomicU64,
    failed: Mutex<BTreeMap<String, u64>>,
    exited: Mutex<BTreeSet<u32>>,
    /// Set once MPOL_MF_MOVE_ALL was refused (EPERM: no CAP_SYS_NICE).
    no_move_all: AtomicBool,
    throttle: Option<Throttle>,
    /// Whether a worker has announced the hold point (tests only).
    held: AtomicBool,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // The data (counters, sets) stays consistent even if a worker panicked mid-update.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Shared {
    fn new(rate: Option<u64>) -> Self {
        Self {
            next: AtomicUsize::new(0),
            bytes_moved: AtomicU64::new(0),
            pages_moved: AtomicU64::new(0),
            failed: Mutex::default(),
            exited: Mutex::default(),
            no_move_all: AtomicBool::new(false),
            throttle: rate.map(Throttle::new),
            held: AtomicBool::new(false),
        }
    }

    fn fail(&self, why: String, pages: u64) {
        if pages > 0 {
            *lock(&self.failed).entry(why).or_default() += pages;
        }
    }

    fn moved(&self, pages: u64, bytes: u64) {
        self.pages_moved.fetch_add(pages, Ordering::Relaxed);
        self.bytes_moved.fetch_add(bytes, Ordering::Relaxed);
    }

    fn exited(&self, pid: u32) -> bool {
        lock(&self.exited).contains(&pid)
    }
}

/// A pace of `rate` bytes per second, shared by the workers: each asks before moving and
/// sleeps until the bytes granted so far are due.
struct Throttle {
    rate: u64,
    start: Instant,
    granted: Mutex<u64>,
}

impl Throttle {
    fn new(rate: u64) -> Self {
        Self {
            rate: rate.max(1),
            start: Instant::now(),
            granted: Mutex::new(0),
        }
    }

    fn acquire(&self, bytes: u64) {
        let due = {
            let mut g = lock(&self.granted);
            *g += bytes;
            Duration::from_secs_f64(*g as f64 / self.rate as f64)
        };
        if let Some(wait) = due.checked_sub(self.start.elapsed()) {
            std::thread::sleep(wait);
        }
    }
}

fn run(items: &[Item], to: &NodeSet, opts: &MoveOptions, shared: &Shared, cancel: &AtomicBool) {
    shared.next.store(0, Ordering::Relaxed);
    std::thread::scope(|s| {
        for _ in 0..opts.workers.max(1).min(items.len().max(1)) {
            s.spawn(|| {
                loop {
                    let i = shared.next.fetch_add(1, Ordering::Relaxed);
                    let Some(item) = items.get(i) else { break };
                    if cancel.load(Ordering::Relaxed) {
                        break;
                    }
                    if shared.exited(item.pid()) {
                        continue;
                    }
                    match item {
                        Item::Range {
                            pid,
                            start,
                            pages,
                            page_size,
                        } => move_range(*pid, *start, *pages, *page_size, to, shared),
                        Item::Whole { pid, from, bytes } => {
                            move_whole(*pid, from, *bytes, to, shared)
                        }
                    }
                    if let Some(hold) = &opts.hold {
                        hold.wait(&shared.held, cancel);
                    }
                }
            });
        }
    });
}

fn errno_key(errno: i32) -> String {
    crate::kernel::fs::errno_name(&std::io::Error::from_raw_os_error(errno.abs()))
}

fn move_range(pid: u32, start: u64, pages: usize, page_size: u64, to: &NodeSet, shared: &Shared) {
    let Ok(page_size_usize) = usize::try_from(page_size) else {
        return;
    };
    let Ok(start) = usize::try_from(start) else {
        return;
    };
    let addrs: Vec<usize> = (0..pages).map(|k| start + k * page_size_usize).collect();
    let mut status = vec![0i32; pages];
    // Where are they? Absent pages answer -ENOENT, and are skipped.
    if let Err(e) = sys::move_pages(pid, &addrs, None, &mut status, 0) {
        return syscall_failed(pid, e, pages as u64, shared);
    }
    let mut sel = Vec::new();
    let mut dest = Vec::new();
    for (a, s) in addrs.iter().zip(&status) {
        if let Ok(node) = u32::try_from(*s) {
            if !to.contains(node) {
                if let Some(d) = destination(node, to).and_then(|d| i32::try_from(d).ok()) {
                    sel.push(*a);
                    dest.push(d);
                }
            }
        }
    }
    if sel.is_empty() {
        return;
    }
    if let Some(t) = &shared.throttle {
        t.acquire(sel.len() as u64 * page_size);
    }
    let mut st = vec![0i32; sel.len()];
    let mut flags = if shared.no_move_all.load(Ordering::Relaxed) {
        MPOL_MF_MOVE
    } else {
        MPOL_MF_MOVE_ALL
    };
    loop {
        match sys::move_pages(pid, &sel, Some(&dest), &mut st, flags) {
            Ok(_) => break,
            Err(e) if e.raw_os_error() == Some(libc::EPERM) && flags == MPOL_MF_MOVE_ALL => {
                tracing::warn!("no CAP_SYS_NICE: pages shared with other processes will stay");
                shared.no_move_all.store(true, Ordering::Relaxed);
                flags = MPOL_MF_MOVE;
            }
            Err(e) => return syscall_failed(pid, e, sel.len() as u64, shared),
        }
    }
    // A page whose status is its destination moved. Others may have moved all the same
    // (a huge page moves whole on its first address and reports EBUSY for the rest), so
    // ask again for those only.
    let mut moved = 0u64;
    let mut unsure: Vec<(usize, i32)> = Vec::new();
    for (i, (got, want)) in st.iter().zip(&dest).enumerate() {
        if got == want {
            moved += 1;
        } else {
            unsure.push((sel[i], *got));
        }
    }
    if !unsure.is_empty() {
        let addrs: Vec<usize> = unsure.iter().map(|(a, _)| *a).collect();
        let mut after = vec![0i32; addrs.len()];
        if let Err(e) = sys::move_pages(pid, &addrs, None, &mut after, 0) {
            shared.moved(moved, moved * page_size);
            return syscall_failed(pid, e, addrs.len() as u64, shared);
        }
        for (now, (_, tried)) in after.iter().zip(&unsure) {
            match u32::try_from(*now) {
                Ok(n) if to.contains(n) => moved += 1,
                // Freed or unmapped meanwhile: nothing left to move.
                _ if *now == -libc::ENOENT || *now == -libc::EFAULT => {}
                _ => shared.fail(
                    if *tried < 0 {
                        errno_key(*tried)
                    } else {
                        "not moved".to_owned()
                    },
                    1,
                ),
            }
        }
    }
    shared.moved(moved, moved * page_size);
}

fn move_whole(pid: u32, from: &NodeSet, bytes: u64, to: &NodeSet, shared: &Shared) {
    if let Some(t) = &shared.throttle {
        t.acquire(bytes);
    }
    match sys::migrate_pages(pid, from, to) {
        Ok(left) => {
            let pages = bytes / 4096;
            let moved = pages.saturating_sub(left as u64);
            shared.moved(moved, moved * 4096);
            shared.fail("not moved".to_owned(), pages - moved);
        }
        Err(e) => syscall_failed(pid, e, bytes / 4096, shared),
    }
}

fn syscall_failed(pid: u32, e: std::io::Error, pages: u64, shared: &Shared) {
    if e.raw_os_error() == Some(libc::ESRCH) {
        lock(&shared.exited).insert(pid);
        return;
    }
    tracing::warn!(pid, error = %e, "page migration call failed");
    shared.fail(errno_key(e.raw_os_error().unwrap_or(libc::EIO)), pages);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn destinations_spread_old_nodes_over_new_ones() {
        let to: NodeSet = "2-3".parse().unwrap();
        assert_eq!(destination(0, &to), Some(2));
        assert_eq!(destination(1, &to), Some(3));
        assert_eq!(destination(4, &to), Some(2));
        let one: NodeSet = "1".parse().unwrap();
        assert_eq!(destination(0, &one), Some(1));
        assert_eq!(destination(3, &one), Some(1));
        assert_eq!(destination(0, &NodeSet::new()), None);
    }

    #[test]
    fn chunks_are_aligned_so_that_huge_pages_are_never_split() {
        let proc_dir = tempfile::tempdir().unwrap();
        let pid = 42;
        let dir = proc_dir.path().join(pid.to_string());
        std::fs::create_dir(&dir).unwrap();
        // 5 MiB + 64 KiB from an address 64 KiB past a 2 MiB boundary, all on node 0.
        let (start, end) = (
            0x7f00_0001_0000_u64,
            0x7f00_0001_0000_u64 + (5 << 20) + (64 << 10),
        );
        std::fs::write(
            dir.join("maps"),
            format!("{start:x}-{end:x} rw-p 00000000 00:00 0\n"),
        )
        .unwrap();
        let pages = (end - start) / 4096;
        std::fs::write(
            dir.join("numa_maps"),
            format!(
                "{start:x} default anon={pages} dirty={pages} N0={pages} kernelpagesize_kB=4\n"
            ),
        )
        .unwrap();
        let proc = Proc::new(crate::kernel::Files::new(
            std::sync::Arc::new(crate::kernel::fs::RealFs),
            proc_dir.path().to_owned(),
            proc_dir.path().to_owned(),
        ));
        let to: NodeSet = "1".parse().unwrap();
        let cases = [
            (Some(4u64 << 20), 1024, 512),
            (Some(1 << 30), 1024, 1024),
            (None, 1024, 1024),
            // Smaller than a huge page, or not a multiple of one: whole huge pages still.
            (None, 256, 512),
            (None, 700, 1024),
            (Some(1 << 30), 256, 512),
        ];
        for (rate, chunk_pages, want) in cases {
            let opts = MoveOptions {
                rate,
                chunk_pages,
                ..MoveOptions::default()
            };
            let items = plan_items(&proc, &[pid], &to, &opts, &Shared::new(rate)).unwrap();
            let chunk = want as u64 * 4096;
            let mut next = start;
            for item in &items {
                let Item::Range {
                    start: s, pages: n, ..
                } = *item
                else {
                    panic!("{item:?}");
                };
                let e = s + n as u64 * 4096;
                assert_eq!(s, next, "contiguous");
                assert!(n <= want, "{rate:?}: {n} pages");
                // No chunk crosses a multiple of its size, and every cut between two
                // chunks is on a 2 MiB boundary: no huge page is split.
                assert_eq!(s / chunk, (e - 1) / chunk, "{rate:?}: {s:x}-{e:x}");
                assert!(s == start || s % (2 << 20) == 0, "{rate:?}: {s:x}");
                assert!(e == end || e % (2 << 20) == 0, "{rate:?}: {e:x}");
                next = e;
            }
            assert_eq!(next, end, "{rate:?}: the whole mapping");
        }
    }

    #[test]
    fn throttle_paces() {
        let t = Throttle::new(100 << 20);
        let start = Instant::now();
        t.acquire(10 << 20);
        // 10 MiB at 100 MiB/s is due after 100 ms.
        assert!(start.elapsed() >= Duration::from_millis(90));
    }
}
