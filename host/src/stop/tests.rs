//! The stop mechanism against real signals sent to this test process.
//!
//! Every test that takes signals holds [`ONE_AT_A_TIME`]: a signal reaches every watch of
//! the process, so two at once would see each other's. The signals are raised on the
//! test's own thread, where the handler runs before `raise` returns; what the watch's
//! thread does with them is awaited through the stop's token or a channel, never slept
//! on.

use std::sync::Mutex;
use std::sync::mpsc;

use signal_hook::low_level::raise;

use super::*;

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Waits (on an event, not a clock) until `stop` is stopped.
fn wait(stop: &Stop) {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(stop.stopped());
}

/// A watch whose announcements arrive on the returned channel.
fn watch(stop: &Stop, hangup: OnHangup) -> (SignalWatch, mpsc::Receiver<Signal>) {
    let (tx, rx) = mpsc::channel();
    let w = SignalWatch::start(stop, hangup, move |s| {
        let _ = tx.send(s);
    })
    .unwrap();
    (w, rx)
}

#[test]
fn a_signal_stops_the_flag_and_the_token_and_is_named_once() {
    let _one = serial();
    let stop = Stop::new();
    let (w, announced) = watch(&stop, OnHangup::Stop);
    assert!(!stop.is_stopped());
    let flag = stop.flag();
    raise(SIGTERM).unwrap();
    wait(&stop);
    assert!(stop.token().is_cancelled(), "the token async work awaits");
    assert!(flag.load(Ordering::Acquire), "the flag blocking work polls");
    assert!(stop.is_stopped());
    assert_eq!(stop.signal(), Some(Signal::Terminate));
    assert_eq!(stop.signal().map(Signal::name), Some("SIGTERM"));
    // A second signal does not take over: the first one's stop goes on.
    raise(SIGINT).unwrap();
    assert_eq!(w.finish(), Some(Signal::Terminate));
    assert_eq!(announced.iter().collect::<Vec<_>>(), [Signal::Terminate]);
}

#[test]
fn sighup_stops_by_default_and_reloads_when_asked() {
    let _one = serial();
    let stop = Stop::new();
    let (tx, reloads) = mpsc::channel();
    let (w, _) = watch(
        &stop,
        OnHangup::Reload(Box::new(move || {
            let _ = tx.send(());
        })),
    );
    raise(SIGHUP).unwrap();
    raise(SIGHUP).unwrap();
    // Either both arrive or the kernel merged them into one; at least one reload happens.
    reloads.recv().unwrap();
    drop(w);
    assert!(!stop.is_stopped(), "a reload is not a stop");
    assert_eq!(stop.signal(), None);

    let (w, announced) = watch(&stop, OnHangup::Stop);
    raise(SIGHUP).unwrap();
    wait(&stop);
    assert_eq!(stop.signal(), Some(Signal::Hangup));
    drop(w);
    assert_eq!(announced.iter().collect::<Vec<_>>(), [Signal::Hangup]);
}

/// A signal that lands just before the work ends is still seen by `finish`: the watch
/// routes what is pending before its thread ends.
#[test]
fn a_signal_pending_at_finish_is_not_lost() {
    let _one = serial();
    let stop = Stop::new();
    let (w, _) = watch(&stop, OnHangup::Stop);
    raise(SIGINT).unwrap();
    assert_eq!(w.finish(), Some(Signal::Interrupt));
    assert!(stop.is_stopped());
}

#[test]
fn a_requested_stop_has_no_signal_and_keeps_its_cause() {
    let stop = Stop::new();
    let clone = stop.clone();
    stop.request();
    assert!(clone.is_stopped() && clone.token().is_cancelled());
    assert_eq!(clone.signal(), None);
    // A signal after the stop changes nothing: the stop was not its doing.
    assert!(!clone.stop(Some(Signal::Terminate)));
    assert_eq!(stop.signal(), None);
}

#[test]
fn signals_have_their_names_and_numbers() {
    for (s, name, n) in [
        (Signal::Interrupt, "SIGINT", libc::SIGINT),
        (Signal::Terminate, "SIGTERM", libc::SIGTERM),
        (Signal::Hangup, "SIGHUP", libc::SIGHUP),
    ] {
        assert_eq!(
            (s.name(), s.number(), s.to_string()),
            (name, n, name.to_owned())
        );
        assert_eq!(Signal::from_number(n), Some(s));
    }
    assert_eq!(Signal::from_number(libc::SIGUSR1), None);
}
