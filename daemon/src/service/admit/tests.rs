use super::*;

fn rules(cap: usize, per_peer: usize, reserved: usize, evict: Evict) -> Rules {
    Rules {
        listener: "the test listener",
        cap,
        cap_setting: "test.cap",
        per_peer,
        per_peer_setting: "test.per_peer",
        reserved,
        reserved_for: "root",
        evict,
    }
}

const ROOT: Peer = Peer::Uid(0);
const ALICE: Peer = Peer::Uid(1000);
const BOB: Peer = Peer::Uid(1001);

/// One local user opening connections in a loop took every place on the Unix socket,
/// root's included: now each uid has its own limit, and root a reserve.
#[test]
fn one_peer_cannot_take_the_listener_and_root_keeps_its_reserve() {
    let t = Table::new(rules(8, 3, 2, Evict::Never));
    let alice: Vec<_> = (0..3).map(|_| t.admit(ALICE, false).unwrap()).collect();
    let refused = t.admit(ALICE, false).unwrap_err();
    assert_eq!(
        refused.to_string(),
        "uid 1000 holds 3 connections to the test listener, as many as one peer may (test.per_peer); close idle ones"
    );
    // Others still come in, up to the reserve.
    let bob: Vec<_> = (0..3).map(|_| t.admit(BOB, false).unwrap()).collect();
    let refused = t.admit(Peer::Uid(1002), false).unwrap_err();
    assert!(
        matches!(refused, Refusal::Full { limit: 6, .. }),
        "{refused}"
    );
    assert!(
        refused.to_string().contains("(2 more are kept for root)"),
        "{refused}"
    );
    // Root takes the reserve, and has no per-peer limit.
    let root: Vec<_> = (0..2).map(|_| t.admit(ROOT, true).unwrap()).collect();
    let refused = t.admit(ROOT, true).unwrap_err();
    assert!(
        refused.to_string().contains("the 2 kept for root included"),
        "{refused}"
    );
    assert_eq!(t.len(), 8);
    // Places come back as connections close.
    drop(alice);
    assert_eq!(t.len(), 5);
    t.admit(ALICE, false).unwrap();
    drop((bob, root));
}

/// TLS handshakes prove nothing until they end: a new one takes the place of the oldest of
/// the address holding most, so that a flood from one address mostly closes its own.
#[test]
fn when_full_the_oldest_of_the_busiest_peer_makes_room() {
    let t = Table::new(rules(4, 3, 0, Evict::Quiet(Duration::ZERO)));
    let a = |n: u8| Peer::Addr(IpAddr::from([127, 0, 1, n]));
    let flood: Vec<_> = (0..3).map(|_| t.admit(a(1), false).unwrap()).collect();
    // Past its own limit, the flood closes its own oldest.
    let newest = t.admit(a(1), false).unwrap();
    assert!(flood[0].is_closed());
    assert!(!flood[1].is_closed() && !flood[2].is_closed());
    let other = t.admit(a(2), false).unwrap();
    assert_eq!(t.len(), 4);
    // Full: a third address's connection closes the flood's oldest, not the other's.
    let third = t.admit(a(3), false).unwrap();
    assert!(flood[1].is_closed(), "the busiest peer's oldest was kept");
    assert!(!other.is_closed() && !newest.is_closed() && !third.is_closed());
    assert_eq!(t.len(), 4);
    // A closed connection's place is already counted out; dropping it changes nothing.
    drop(flood);
    assert_eq!(t.len(), 3);
}

/// On the metrics endpoint a connection is closed for a new one only once it has sent
/// nothing, or nothing for the quiet bound: a scrape that is talking keeps its place.
#[tokio::test(start_paused = true)]
async fn only_quiet_connections_make_room() {
    let t = Table::new(rules(2, 2, 0, Evict::Quiet(Duration::from_secs(5))));
    let peer = Peer::Addr(IpAddr::from([10, 0, 0, 1]));
    let scraping = t.admit(peer, false).unwrap();
    scraping.touch();
    let keepalive = t.admit(peer, false).unwrap();
    keepalive.touch();
    // Both spoke just now: a newcomer is refused.
    let refused = t.admit(Peer::Addr(IpAddr::from([10, 0, 0, 2])), false);
    assert!(matches!(refused, Err(Refusal::Full { .. })), "{refused:?}");
    // One goes on talking; the other falls quiet for the bound and makes room.
    tokio::time::advance(Duration::from_secs(5)).await;
    scraping.touch();
    let newcomer = t
        .admit(Peer::Addr(IpAddr::from([10, 0, 0, 2])), false)
        .unwrap();
    assert!(keepalive.is_closed());
    assert!(!scraping.is_closed() && !newcomer.is_closed());
}

#[tokio::test(start_paused = true)]
async fn refusals_are_logged_once_per_interval_with_a_count() {
    let log = RefusalLog::new("test");
    let start = Instant::now();
    assert_eq!(log.note(start), Note::Line { before: 0 });
    // The next refusals within the interval are counted; the first of them asks for a
    // line at the interval's end, the others only add to it.
    assert_eq!(
        log.note(start + Duration::from_secs(1)),
        Note::Counted {
            flush_at: Some(start + RefusalLog::INTERVAL)
        }
    );
    for s in 2..50 {
        assert_eq!(
            log.note(start + Duration::from_secs(s)),
            Note::Counted { flush_at: None }
        );
    }
    assert_eq!(log.flush(start + RefusalLog::INTERVAL), Some(49));
    assert_eq!(log.flush(start + RefusalLog::INTERVAL), None);
    // Quiet for an interval: the next refusal is a line of its own at once.
    let later = start + RefusalLog::INTERVAL * 2;
    assert_eq!(log.note(later), Note::Line { before: 0 });
    assert_eq!(
        log.note(later + Duration::from_secs(1)),
        Note::Counted {
            flush_at: Some(later + RefusalLog::INTERVAL)
        }
    );
    // Past the interval without a flush (none ran yet): the line carries the count.
    assert_eq!(
        log.note(later + RefusalLog::INTERVAL),
        Note::Line { before: 1 }
    );
}
