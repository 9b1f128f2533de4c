use super::*;

#[test]
fn text_unless_openmetrics_is_asked_for() {
    use Format::*;
    for (accept, want) in [
        (None, Text),
        (Some(""), Text),
        (Some("*/*"), Text),
        (Some("text/plain"), Text),
        (Some("text/plain;version=0.0.4"), Text),
        (Some("application/json"), Text),
        (Some("application/openmetrics-text"), OpenMetrics),
        // What Prometheus 2.x and 3.x send by default.
        (
            Some(
                "application/openmetrics-text;version=1.0.0;q=0.5,application/openmetrics-text;version=0.0.1;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2",
            ),
            OpenMetrics,
        ),
        // A scraper configured to prefer the classic format.
        (
            Some("text/plain;version=0.0.4;q=1,application/openmetrics-text;q=0.5"),
            Text,
        ),
        (Some("application/openmetrics-text;q=0"), Text),
    ] {
        assert_eq!(Format::negotiate(accept), want, "{accept:?}");
    }
}

#[test]
fn the_text_format_names_counters_by_their_samples_and_has_no_eof() {
    let om = "# HELP placed_predictions Predictions made.\n\
              # TYPE placed_predictions counter\n\
              placed_predictions_total 3\n\
              # HELP placed_build Build.\n\
              # TYPE placed_build info\n\
              placed_build_info{version=\"0.1.0\"} 1\n\
              # HELP placed_up_seconds Up.\n\
              # TYPE placed_up_seconds gauge\n\
              # UNIT placed_up_seconds seconds\n\
              placed_up_seconds 2.5\n\
              # EOF\n";
    assert_eq!(
        to_text(om),
        "# HELP placed_predictions_total Predictions made.\n\
         # TYPE placed_predictions_total counter\n\
         placed_predictions_total 3\n\
         # HELP placed_build_info Build.\n\
         # TYPE placed_build_info gauge\n\
         placed_build_info{version=\"0.1.0\"} 1\n\
         # HELP placed_up_seconds Up.\n\
         # TYPE placed_up_seconds gauge\n\
         placed_up_seconds 2.5\n"
    );
}

#[test]
fn the_daemon_metrics_render_in_both_formats() {
    let m = Metrics::default();
    m.predictions.inc();
    let om = m.render(Format::OpenMetrics);
    assert!(om.ends_with("# EOF\n"), "{om}");
    assert!(om.contains("# TYPE placed_predictions counter"), "{om}");
    let text = m.render(Format::Text);
    assert!(!text.contains("# EOF"), "{text}");
    assert!(
        text.contains("# TYPE placed_predictions_total counter"),
        "{text}"
    );
    assert!(text.contains("placed_predictions_total 1"), "{text}");
}

#[tokio::test]
async fn a_reload_moves_the_endpoint_and_a_failed_bind_keeps_it() {
    let metrics = Arc::new(Metrics::default());
    let mut e = Endpoint::new(metrics, CancellationToken::new());
    let first = MetricsConfig {
        enabled: true,
        listen: "127.0.0.1:0".parse().unwrap(),
    };
    e.reconfigure(&first).await.unwrap();
    assert_eq!(e.running.as_ref().map(|r| r.0), Some(first.listen));
    // A port someone else holds: refused, the endpoint stays.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let clash = MetricsConfig {
        enabled: true,
        listen: taken.local_addr().unwrap(),
    };
    let err = e.reconfigure(&clash).await.unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::AddrInUse);
    assert_eq!(e.running.as_ref().map(|r| r.0), Some(first.listen));
    e.reconfigure(&MetricsConfig {
        enabled: false,
        ..first
    })
    .await
    .unwrap();
    assert!(e.running.is_none());
}
