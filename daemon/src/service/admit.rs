//! Who may hold a connection to a listener: a cap on the listener, a cap per peer (a uid on
//! the Unix socket, an address on TCP), room kept for privileged peers (root on the Unix
//! socket, clients with a certificate on TCP), and connections closed to make room when
//! they have proved nothing yet.
//!
//! Each listener had one cap of 256 connections and closed a connection only once it had
//! been idle for 60 s: anyone who could connect (the metrics port, the TLS port before any
//! certificate) and kept 256 idle connections open turned every authenticated client and
//! every scrape away. A [`Table`] per listener (or per stage of one: TLS handshakes apart
//! from established connections) now decides each new connection: admitted with a
//! [`Slot`], admitted after closing another connection that may be closed ([`Evict`]), or
//! refused with a [`Refusal`] that says which limit was hit and which setting raises it.
//! Refusals are logged through a [`RefusalLog`], one line per interval with a count.

use std::collections::HashMap;
use std::fmt;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

/// Who opened a connection, as far as the listener can tell before any request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Peer {
    /// The Unix socket's peer, from SO_PEERCRED (the kernel's word, not the client's).
    Uid(u32),
    /// A TCP peer's address.
    Addr(IpAddr),
}

impl fmt::Display for Peer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Uid(uid) => write!(f, "uid {uid}"),
            Self::Addr(addr) => write!(f, "address {addr}"),
        }
    }
}

/// Which connections a full table may close to let a new one in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Evict {
    /// None: a new connection past a limit is refused.
    Never,
    /// A connection that has sent nothing yet, or nothing for at least this long. Zero:
    /// any connection (TLS handshakes, which prove nothing until they end).
    Quiet(Duration),
}

/// A listener's limits.
#[derive(Debug, Clone)]
pub struct Rules {
    /// The listener in words, for refusals ("the Unix socket").
    pub listener: &'static str,
    /// Connections held at once.
    pub cap: usize,
    /// The setting that raises `cap`, or a word on why none does.
    pub cap_setting: &'static str,
    /// Connections one unprivileged peer holds at once.
    pub per_peer: usize,
    pub per_peer_setting: &'static str,
    /// Of `cap`, the connections only privileged peers may take.
    pub reserved: usize,
    /// Who the reserve is for, in words ("root").
    pub reserved_for: &'static str,
    pub evict: Evict,
}

/// Why a connection was not let in.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error(
        "{peer} holds {limit} connections to {listener}, as many as one peer may ({setting}); close idle ones"
    )]
    Peer {
        peer: Peer,
        limit: usize,
        listener: &'static str,
        setting: &'static str,
    },
    #[error("{listener} holds {limit} connections, as many as it may{kept} ({setting})")]
    Full {
        limit: usize,
        listener: &'static str,
        setting: &'static str,
        /// What of the cap is kept for privileged peers, in words (empty when nothing).
        kept: String,
    },
}

/// One admitted connection's activity, shared between its stream and its table.
#[derive(Debug)]
struct Activity {
    /// Milliseconds since the table's epoch at which the connection last delivered bytes,
    /// plus one; 0 while it has delivered none.
    last_read: AtomicU64,
    /// Cancelled when the table closes the connection to make room.
    close: CancellationToken,
}

#[derive(Debug)]
struct Entry {
    peer: Peer,
    privileged: bool,
    opened_ms: u64,
    activity: Arc<Activity>,
}

#[derive(Debug, Default)]
struct Inner {
    next: u64,
    entries: HashMap<u64, Entry>,
    per_peer: HashMap<Peer, usize>,
}

impl Inner {
    fn remove(&mut self, id: u64) -> Option<Entry> {
        let entry = self.entries.remove(&id)?;
        if let Some(n) = self.per_peer.get_mut(&entry.peer) {
            *n -= 1;
            if *n == 0 {
                self.per_peer.remove(&entry.peer);
            }
        }
        Some(entry)
    }
}

/// One listener's connections.
#[derive(Debug)]
pub struct Table {
    rules: Rules,
    epoch: Instant,
    inner: Mutex<Inner>,
}

impl Table {
    pub fn new(rules: Rules) -> Arc<Self> {
        Arc::new(Self {
            rules,
            epoch: Instant::now(),
            inner: Mutex::default(),
        })
    }

    pub fn rules(&self) -> &Rules {
        &self.rules
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock leaves counts that are still counts.
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX - 1)
    }

    /// Connections held now.
    pub fn len(&self) -> usize {
        self.lock().entries.len()
    }

    /// Whether the table holds no connection.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Lets a connection from `peer` in, closing one that may be closed if a limit is
    /// reached, or says which limit refuses it. A privileged peer has no per-peer limit
    /// and may take the reserved room.
    pub fn admit(self: &Arc<Self>, peer: Peer, privileged: bool) -> Result<Slot, Refusal> {
        let now = self.now_ms();
        let mut inner = self.lock();
        let r = &self.rules;
        if !privileged && inner.per_peer.get(&peer).copied().unwrap_or(0) >= r.per_peer {
            let victim = self.victim(&inner, now, Some(peer)).ok_or(Refusal::Peer {
                peer,
                limit: r.per_peer,
                listener: r.listener,
                setting: r.per_peer_setting,
            })?;
            self.evict(&mut inner, victim);
        }
        let limit = if privileged {
            r.cap
        } else {
            r.cap.saturating_sub(r.reserved)
        };
        while inner.entries.len() >= limit {
            let Some(victim) = self.victim(&inner, now, None) else {
                let kept = match (r.reserved, privileged) {
                    (0, _) => String::new(),
                    (n, false) => {
                        format!(" for {} ({n} more are kept for {})", peer, r.reserved_for)
                    }
                    (n, true) => format!(", the {n} kept for {} included", r.reserved_for),
                };
                return Err(Refusal::Full {
                    limit,
                    listener: r.listener,
                    setting: r.cap_setting,
                    kept,
                });
            };
            self.evict(&mut inner, victim);
        }
        let id = inner.next;
        inner.next += 1;
        let activity = Arc::new(Activity {
            last_read: AtomicU64::new(0),
            close: CancellationToken::new(),
        });
        inner.entries.insert(
            id,
            Entry {
                peer,
                privileged,
                opened_ms: now,
                activity: activity.clone(),
            },
        );
        *inner.per_peer.entry(peer).or_default() += 1;
        super::reclaim::RECLAIM.opened();
        Ok(Slot {
            table: self.clone(),
            id,
            activity,
        })
    }

    /// The connection to close for a new one: of `peer` when given, else of any peer;
    /// among those [`Evict`] allows, one of the peer holding most, the quietest of them.
    fn victim(&self, inner: &Inner, now: u64, peer: Option<Peer>) -> Option<u64> {
        let Evict::Quiet(quiet) = self.rules.evict else {
            return None;
        };
        let quiet = u64::try_from(quiet.as_millis()).unwrap_or(u64::MAX);
        inner
            .entries
            .iter()
            .filter(|(_, e)| !e.privileged && peer.is_none_or(|p| p == e.peer))
            .filter_map(|(id, e)| {
                let last = e.activity.last_read.load(Ordering::Relaxed);
                let silent_for = now.saturating_sub(last.saturating_sub(1).max(e.opened_ms));
                (last == 0 || silent_for >= quiet).then(|| {
                    let held = inner.per_peer.get(&e.peer).copied().unwrap_or(0);
                    ((held, silent_for, std::cmp::Reverse(*id)), *id)
                })
            })
            .max_by_key(|(key, _)| *key)
            .map(|(_, id)| id)
    }

    fn evict(&self, inner: &mut Inner, id: u64) {
        if let Some(entry) = inner.remove(id) {
            super::reclaim::RECLAIM.closed();
            tracing::debug!(
                listener = self.rules.listener,
                peer = %entry.peer,
                "connection closed to make room for a new one: it had sent nothing, or nothing for a while"
            );
            entry.activity.close.cancel();
        }
    }

    fn release(&self, id: u64) {
        let removed = self.lock().remove(id).is_some();
        if removed {
            super::reclaim::RECLAIM.closed();
        }
    }
}

/// An admitted connection's place in its table, given back when dropped.
#[derive(Debug)]
pub struct Slot {
    table: Arc<Table>,
    id: u64,
    activity: Arc<Activity>,
}

impl Slot {
    /// The connection delivered bytes.
    pub fn touch(&self) {
        let now = self.table.now_ms().saturating_add(1);
        self.activity.last_read.store(now, Ordering::Relaxed);
    }

    /// Resolves when the table closes the connection to make room for another.
    pub fn closed(&self) -> WaitForCancellationFutureOwned {
        self.activity.close.clone().cancelled_owned()
    }

    pub fn is_closed(&self) -> bool {
        self.activity.close.is_cancelled()
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.table.release(self.id);
    }
}

/// Refusals on one listener, logged one line per interval: the first at once, then the
/// count of those since, so that a flood of refusals costs a line a minute, not one each
/// (5,244 lines in two minutes before).
#[derive(Debug)]
pub struct RefusalLog {
    listener: &'static str,
    interval: Duration,
    state: Mutex<LogState>,
}

#[derive(Debug, Default)]
struct LogState {
    /// When the last line was written.
    last_line: Option<Instant>,
    /// Refusals since that line.
    unlogged: u64,
    /// Whether a task is waiting to write the count at the end of the interval.
    flush_pending: bool,
}

/// What to log for one refusal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Note {
    /// Write a line now, with the refusals not written since the last one.
    Line { before: u64 },
    /// Counted; a line at the end of the interval will give the count.
    Counted { flush_at: Option<Instant> },
}

impl RefusalLog {
    /// How often a listener under a flood of refusals writes a line.
    pub const INTERVAL: Duration = Duration::from_secs(60);

    pub fn new(listener: &'static str) -> Arc<Self> {
        Arc::new(Self {
            listener,
            interval: Self::INTERVAL,
            state: Mutex::default(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, LogState> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Counts one refusal and says whether it is written now.
    pub fn note(&self, now: Instant) -> Note {
        let mut s = self.lock();
        match s.last_line {
            Some(at) if now.duration_since(at) < self.interval => {
                s.unlogged += 1;
                let flush_at = (!s.flush_pending).then(|| {
                    s.flush_pending = true;
                    at + self.interval
                });
                Note::Counted { flush_at }
            }
            _ => {
                let before = std::mem::take(&mut s.unlogged);
                s.last_line = Some(now);
                Note::Line { before }
            }
        }
    }

    /// The count to write at the end of an interval, if any refusal was left unwritten.
    pub fn flush(&self, now: Instant) -> Option<u64> {
        let mut s = self.lock();
        s.flush_pending = false;
        let n = std::mem::take(&mut s.unlogged);
        (n > 0).then(|| {
            s.last_line = Some(now);
            n
        })
    }

    /// Logs a refusal for `why`, or counts it.
    pub fn refused(self: &Arc<Self>, why: &Refusal) {
        match self.note(Instant::now()) {
            Note::Line { before } => tracing::warn!(
                listener = self.listener,
                refused_before = before,
                "connection refused: {why}; further refusals on this listener are counted and logged at most once a minute"
            ),
            Note::Counted { flush_at: None } => {}
            Note::Counted { flush_at: Some(at) } => {
                let log = self.clone();
                tokio::spawn(async move {
                    tokio::time::sleep_until(at).await;
                    if let Some(n) = log.flush(Instant::now()) {
                        tracing::warn!(
                            listener = log.listener,
                            refused = n,
                            "connections refused in the last minute: the listener's limits were reached (the first refusal's line says which)"
                        );
                    }
                });
            }
        }
    }
}

#[cfg(test)]
mod tests;
