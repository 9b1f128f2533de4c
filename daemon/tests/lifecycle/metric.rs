//! The operator's rules for the metric sources an API caller names, at `Manage`: a pattern
//! metric's program is a command (refused while command metrics are off), and its file must
//! lie under `observe.pattern_files`. An allowed one is kept on the record and on disk.

use placed::lifecycle::{DaemonError, ManageRequest};
use placed_core::fault::Fault;
use placed_host::observe::{Mode, PatternInput, SourceSpec, Stream};

use crate::scenario::{Scenario, cg};

fn pattern(input: PatternInput) -> SourceSpec {
    SourceSpec::Pattern {
        regex: r"ops (\d+)".into(),
        mode: Mode::Total,
        input,
    }
}

fn request(metric: SourceSpec) -> ManageRequest {
    ManageRequest {
        container: cg("c"),
        vcpus: Some(2),
        policy: None,
        metric: Some(metric),
        on_override: None,
        ..ManageRequest::default()
    }
}

#[tokio::test(start_paused = true)]
async fn pattern_metrics_keep_to_the_command_and_file_rules() {
    let logs = tempfile::tempdir().unwrap();
    let mut s = Scenario::new();
    s.config.observe.pattern_files = vec![logs.path().to_owned()];
    s.container("c", "", "");
    let d = s.start().await;

    let program = pattern(PatternInput::Program {
        argv: vec!["sh".into(), "-c".into(), "echo ops 1".into()],
        stream: Stream::Both,
    });
    let e = d.daemon.manage(request(program)).await.unwrap_err();
    assert!(matches!(e, DaemonError::CommandMetricsOff), "{e}");

    let outside = pattern(PatternInput::File {
        path: "/etc/shadow".into(),
    });
    let e = d.daemon.manage(request(outside)).await.unwrap_err();
    assert_eq!(e.fault(), Fault::HostConfig, "{e}");
    let cause = placed_core::text::error_line(&e);
    assert!(
        cause.contains("\"/etc/shadow\"") && cause.contains("observe.pattern_files lists"),
        "{cause}"
    );
    let relative = pattern(PatternInput::File {
        path: "logs/app.log".into(),
    });
    let e = d.daemon.manage(request(relative)).await.unwrap_err();
    assert_eq!(e.fault(), Fault::InvalidInput, "{e}");

    let allowed = pattern(PatternInput::File {
        path: logs.path().join("app.log"),
    });
    let view = d.daemon.manage(request(allowed.clone())).await.unwrap();
    assert_eq!(view.record.metric.as_ref(), Some(&allowed));
    assert_eq!(
        d.on_disk("c").and_then(|r| r.metric),
        Some(allowed),
        "kept in the state file"
    );
}
