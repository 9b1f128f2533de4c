use std::io::{Read, Seek};
use std::os::unix::fs::MetadataExt;
use std::sync::{Arc, Mutex};

use tracing_subscriber::layer::SubscriberExt;

use super::*;

/// `JOURNAL_STREAM`'s value for the file `f` is open on.
fn stream_of(f: &std::fs::File) -> String {
    let m = f.metadata().unwrap();
    format!("{}:{}", m.dev(), m.ino())
}

/// Logs one event per level through `layer(format, journal, file)` and returns what the
/// file holds.
fn log_all_levels(format: LogFormat, journal: bool, mut file: std::fs::File) -> String {
    let writer = Arc::new(Mutex::new(file.try_clone().unwrap()));
    let make = move || SharedFile(writer.clone());
    let subscriber = tracing_subscriber::registry()
        .with(EnvFilter::new("trace"))
        .with(layer(format, journal, make));
    tracing::subscriber::with_default(subscriber, || {
        tracing::error!(n = 1, "broken");
        tracing::warn!("odd");
        tracing::info!("fine");
        tracing::debug!("detail");
        tracing::trace!("noise");
    });
    let mut out = String::new();
    file.rewind().unwrap();
    file.read_to_string(&mut out).unwrap();
    out
}

struct SharedFile(Arc<Mutex<std::fs::File>>);

impl std::io::Write for SharedFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.0.lock().unwrap().flush()
    }
}

#[test]
fn priorities_follow_sd_daemon() {
    assert_eq!(priority(Level::ERROR), 3);
    assert_eq!(priority(Level::WARN), 4);
    assert_eq!(priority(Level::INFO), 6);
    assert_eq!(priority(Level::DEBUG), 7);
    assert_eq!(priority(Level::TRACE), 7);
}

#[test]
fn the_journal_is_recognised_by_device_and_inode_only() {
    let file = tempfile::tempfile().unwrap();
    let other = tempfile::tempfile().unwrap();
    let value = stream_of(&file);
    assert!(is_journal(Some(OsStr::new(&value)), &file));
    // Inherited from a parent whose stderr was the journal, but ours goes elsewhere.
    assert!(!is_journal(Some(OsStr::new(&value)), &other));
    assert!(!is_journal(None, &file));
    for garbage in ["", ":", "1", "a:b", "1:2:3"] {
        assert!(!is_journal(Some(OsStr::new(garbage)), &file), "{garbage:?}");
    }
}

/// The whole path as the daemon takes it: `JOURNAL_STREAM` set to the device and inode of
/// the file the log goes to, so each line carries its priority.
#[test]
fn text_lines_to_the_journal_carry_their_priority() {
    let file = tempfile::tempfile().unwrap();
    let journal = is_journal(Some(OsStr::new(&stream_of(&file))), &file);
    assert!(journal);
    let out = log_all_levels(LogFormat::Text, journal, file);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 5, "{out}");
    for (line, (prefix, text)) in lines.iter().zip([
        ("<3>", "broken"),
        ("<4>", "odd"),
        ("<6>", "fine"),
        ("<7>", "detail"),
        ("<7>", "noise"),
    ]) {
        assert!(
            line.starts_with(prefix),
            "{line:?} should start with {prefix}"
        );
        assert!(line.contains(text), "{line:?}");
    }
    // journald timestamps lines itself and shows the level from the priority.
    assert_eq!(lines[0], "<3>broken n=1");
}

#[test]
fn json_lines_to_the_journal_are_prefixed_json() {
    let file = tempfile::tempfile().unwrap();
    let out = log_all_levels(LogFormat::Json, true, file);
    let first = out.lines().next().unwrap();
    let json = first.strip_prefix("<3>").expect("an error prefix");
    let v: serde_json::Value = serde_json::from_str(json).unwrap();
    assert_eq!(v["level"], "ERROR");
    assert_eq!(v["message"], "broken");
    assert_eq!(v["n"], 1);
}

#[test]
fn without_the_journal_nothing_is_prefixed() {
    for format in [LogFormat::Text, LogFormat::Json] {
        let out = log_all_levels(format, false, tempfile::tempfile().unwrap());
        assert_eq!(out.lines().count(), 5, "{out}");
        assert!(out.lines().all(|l| !l.starts_with('<')), "{out}");
    }
    let json = log_all_levels(LogFormat::Json, false, tempfile::tempfile().unwrap());
    for line in json.lines() {
        serde_json::from_str::<serde_json::Value>(line).unwrap();
    }
}

#[test]
fn bad_levels_are_named() {
    let e = parse_level("info,placed=loud").unwrap_err().to_string();
    assert!(e.contains("daemon.log_level = \"info,placed=loud\""), "{e}");
    parse_level("warn,placed=debug").unwrap();
}
