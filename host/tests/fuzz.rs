//! Fuzz targets for placed-host's parsers of outside input: Prometheus text and selectors,
//! `/proc/<pid>/maps` and `numa_maps`, `/proc/<pid>/status`, mountinfo, cgroup quotas,
//! cgroup paths and container references, and the pattern metrics' line splitter and
//! regex-to-number parser over program output. Bounded and seeded for CI; see docs/testing.md
//! for the long mode.

use crate::harness as fuzz;

use placed_host::cgroup::{CgroupPath, Mounts, quota};
use placed_host::containers::Reference;
use placed_host::enact::parse_status;
use placed_host::migrate::numa_maps::{parse_maps, parse_numa_maps};
use placed_host::observe::prometheus::text::{Selector, parse};
use placed_host::observe::{LineMetric, LinePattern, Lines, Mode};
use proptest::prelude::*;

const SCRAPE: &str = r#"# HELP ops_total Operations done.
# TYPE ops_total counter
ops_total{job="api",path="/a,b}"} 1027 1395066363000
ops_total{job="batch"} 3
# TYPE queue_depth gauge
queue_depth 1.5e1
# TYPE latency_seconds histogram
latency_seconds_bucket{le="+Inf"} 9
latency_seconds_count 9
latency_seconds_sum NaN
weird{msg="say \"hi\"\n"} -Inf
# EOF
"#;

/// What `placed-testload` and the daemon's own endpoint expose.
const SCRAPE_DAEMON: &str = "# HELP placed_containers Managed containers.
# TYPE placed_containers gauge
placed_containers{state=\"watched\"} 2
# TYPE placed_moves counter
placed_moves_total{container=\"/docker/abc\",result=\"ok\"} 7
placed_moves_created{container=\"/docker/abc\",result=\"ok\"} 1.7e9
";

fn exposition_property(text: &str) -> Result<(), TestCaseError> {
    match parse(text) {
        Ok(e) => {
            for s in &e.samples {
                prop_assert!(!s.name.is_empty());
                let _ = e.type_of(&s.name);
            }
        }
        Err(e) => fuzz::check_error(&e)?,
    }
    Ok(())
}

#[test]
fn prometheus_text_mutated_from_scrapes() {
    let seeds = vec![SCRAPE.to_owned(), SCRAPE_DAEMON.to_owned()];
    fuzz::run("prometheus-text", 3_000, fuzz::mutated_text(seeds), |t| {
        exposition_property(&t)
    });
}

#[test]
fn prometheus_text_arbitrary() {
    fuzz::run("prometheus-text-arbitrary", 3_000, fuzz::text(256), |t| {
        exposition_property(&t)
    });
}

/// A selector prints as a selector that parses back to itself.
fn selector_property(text: &str) -> Result<(), TestCaseError> {
    match Selector::parse(text) {
        Ok(s) => {
            let printed = s.to_string();
            let back = Selector::parse(&printed)
                .map_err(|e| TestCaseError::fail(format!("{printed:?} does not parse: {e}")))?;
            prop_assert_eq!(back, s);
        }
        Err(e) => fuzz::check_error(&e)?,
    }
    Ok(())
}

#[test]
fn prometheus_selectors_mutated() {
    let seeds = [
        r#"ops_total{job="api", path!="/health"}"#,
        "testload_ops_total",
        r#"x{a="say \"hi\"\n",b!="\\"}"#,
    ];
    let seeds = seeds.iter().map(|s| (*s).to_owned()).collect();
    fuzz::run(
        "prometheus-selector",
        3_000,
        fuzz::mutated_text(seeds),
        |t| selector_property(&t),
    );
}

#[test]
fn prometheus_selectors_round_trip() {
    let name = "[a-zA-Z_:][a-zA-Z0-9_:]{0,8}";
    let matcher = (name, any::<String>(), any::<bool>());
    let selectors = (name, prop::collection::vec(matcher, 0..4));
    fuzz::run(
        "prometheus-selector-round-trip",
        2_000,
        selectors,
        |(metric, matchers)| {
            let mut text = format!("{metric}{{");
            for (label, value, equal) in &matchers {
                let escaped = value
                    .replace('\\', "\\\\")
                    .replace('"', "\\\"")
                    .replace('\n', "\\n");
                let op = if *equal { "=" } else { "!=" };
                text.push_str(&format!("{label}{op}\"{escaped}\","));
            }
            text.push('}');
            let s = Selector::parse(&text)
                .map_err(|e| TestCaseError::fail(format!("{text:?} does not parse: {e}")))?;
            let values: Vec<&str> = s.matchers.iter().map(|m| m.value.as_str()).collect();
            let written: Vec<&str> = matchers.iter().map(|(_, v, _)| v.as_str()).collect();
            prop_assert_eq!(values, written);
            selector_property(&text)
        },
    );
}

const MAPS: &str = "\
00400000-00452000 r-xp 00000000 08:02 173521      /usr/bin/dbus-daemon
00651000-00652000 r--p 00051000 08:02 173521      /usr/bin/dbus-daemon
00e03000-00e24000 rw-p 00000000 00:00 0           [heap]
7f2c4c000000-7f2c8c000000 rw-p 00000000 00:0e 12345   /anon_hugepage (deleted)
7ffd3a0f7000-7ffd3a118000 rw-p 00000000 00:00 0   [stack]
";

const NUMA_MAPS: &str = "\
00400000 default file=/usr/bin/dbus-daemon mapped=50 mapmax=2 N0=30 N1=20 kernelpagesize_kB=4
00651000 default file=/usr/bin/dbus-daemon anon=1 dirty=1 N1=1 kernelpagesize_kB=4
00e03000 default heap anon=20 dirty=20 active=0 N0=12 N1=8 kernelpagesize_kB=4
7f2c4c000000 bind:1 file=/anon_hugepage\\040(deleted) huge dirty=1 N1=1 kernelpagesize_kB=1048576
7ffd3a0f7000 default stack anon=3 dirty=3 N0=3 kernelpagesize_kB=4
";

/// Whatever the two files say, the result is mappings and byte counts, or a bounded error.
fn numa_maps_property(maps: &str, numa_maps: &str) -> Result<(), TestCaseError> {
    let ends = match parse_maps(maps) {
        Ok(ends) => ends,
        Err(e) => return fuzz::check_error(&e),
    };
    match parse_numa_maps(numa_maps, &ends) {
        Ok(vmas) => {
            let mut total = placed_host::migrate::NodeBytes::default();
            for vma in &vmas {
                total.add(&vma.bytes());
            }
            let _ = total.total();
        }
        Err(e) => fuzz::check_error(&e)?,
    }
    Ok(())
}

#[test]
fn numa_maps_mutated() {
    let both = (
        fuzz::mutated_text(vec![MAPS.to_owned()]),
        fuzz::mutated_text(vec![NUMA_MAPS.to_owned()]),
    );
    fuzz::run("numa-maps", 3_000, both, |(maps, numa_maps)| {
        numa_maps_property(MAPS, &numa_maps)?;
        numa_maps_property(&maps, NUMA_MAPS)
    });
}

#[test]
fn numa_maps_arbitrary() {
    fuzz::run("numa-maps-arbitrary", 2_000, fuzz::text(256), |t| {
        numa_maps_property(&t, &t)?;
        numa_maps_property(MAPS, &t)
    });
}

const STATUS: &str = "Name:\tsleep\nState:\tS (sleeping)\nTgid:\t4242\n\
Cpus_allowed:\tff\nCpus_allowed_list:\t0-7\nMems_allowed:\t00000000,00000003\n\
Mems_allowed_list:\t0-1\nvoluntary_ctxt_switches:\t1\n";

const MOUNTINFO: &str = "\
25 30 0:23 / /sys/fs/cgroup/unified rw,nosuid,nodev,noexec,relatime shared:8 - cgroup2 cgroup2 rw,nsdelegate
26 30 0:24 / /sys/fs/cgroup/cpuset rw,nosuid,nodev,noexec,relatime shared:9 - cgroup cgroup rw,cpuset
27 30 0:25 /docker /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory,clone_children
31 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw,errors=remount-ro
";

#[test]
fn proc_status_mutated() {
    fuzz::run(
        "proc-status",
        2_000,
        fuzz::mutated_text(vec![STATUS.to_owned()]),
        |t| {
            if let Some((cpus, mems)) = parse_status(&t) {
                prop_assert_eq!(
                    cpus.to_string().parse::<placed_core::cpuset::CpuSet>().ok(),
                    Some(cpus)
                );
                prop_assert!(mems.iter().all(|n| n <= placed_core::cpuset::MAX_ID));
            }
            Ok(())
        },
    );
}

#[test]
fn mountinfo_mutated() {
    fuzz::run(
        "mountinfo",
        2_000,
        fuzz::mutated_text(vec![MOUNTINFO.to_owned()]),
        |t| {
            match Mounts::parse(&t) {
                Ok(m) => prop_assert!(m.cgroups.iter().all(|c| c.mount_point.is_absolute())),
                Err(e) => fuzz::check_error(&e)?,
            }
            Ok(())
        },
    );
}

#[test]
fn cgroup_quotas_mutated() {
    let seeds = ["max 100000\n", "200000 100000\n", "-1\n", "150000\n"];
    let seeds = seeds.iter().map(|s| (*s).to_owned()).collect();
    let texts = (fuzz::mutated_text(seeds), fuzz::text(24));
    fuzz::run("cgroup-quota", 2_000, texts, |(a, b)| {
        let _ = quota::parse_cpu_max(&a);
        let _ = quota::parse_v1(&a, &b);
        let _ = quota::parse_v1(&b, "100000\n");
        Ok(())
    });
}

/// A cgroup path never names anything outside its mount, and prints as itself.
fn cgroup_path_property(text: &str) -> Result<(), TestCaseError> {
    match CgroupPath::parse(text) {
        Ok(p) => {
            let mount = std::path::Path::new("/sys/fs/cgroup/cpuset");
            let under = p.under(mount);
            prop_assert!(under.starts_with(mount));
            prop_assert!(under.components().all(|c| matches!(
                c,
                std::path::Component::RootDir | std::path::Component::Normal(_)
            )));
            prop_assert_eq!(CgroupPath::parse(&p.to_string()).ok(), Some(p));
        }
        Err(e) => fuzz::check_error(&e)?,
    }
    Ok(())
}

#[test]
fn cgroup_paths_and_container_references() {
    let seeds = [
        "/docker/0123456789abcdef",
        "/kubepods.slice/kubepods-burstable.slice/cri-containerd-abc.scope",
        "docker:web",
        "cgroup:/system.slice/x.service",
        "web",
        "../../etc",
    ];
    let seeds = seeds.iter().map(|s| (*s).to_owned()).collect();
    let texts = prop_oneof![fuzz::mutated_text(seeds), fuzz::text(128)];
    fuzz::run("cgroup-path-and-reference", 3_000, texts, |t| {
        cgroup_path_property(&t)?;
        if let Err(e) = Reference::parse(&t) {
            fuzz::check_error(&e)?;
        }
        Ok(())
    });
}

/// Found by `numa_maps_mutated`: a page count or page size whose bytes pass 2^64 overflowed
/// (a panic in debug builds, a wrong byte count in release ones).
#[test]
fn numa_maps_with_huge_page_counts_is_malformed_not_an_overflow() {
    let maps = "00400000-00452000 r-xp 00000000 08:02 1 /x\n";
    for numa_maps in [
        "00400000 default N0=18446744073709551615 kernelpagesize_kB=4\n",
        "00400000 default N0=1 kernelpagesize_kB=18446744073709551615\n",
        "00400000 default N0=4503599627370496 N1=4503599627370496 kernelpagesize_kB=4\n",
    ] {
        let ends = parse_maps(maps).expect("a maps line");
        let err = parse_numa_maps(numa_maps, &ends).expect_err("bytes past 2^64");
        assert!(
            err.to_string().starts_with("malformed numa_maps line"),
            "{err}"
        );
    }
}

/// Found by `prometheus_selectors_round_trip`: a selector printed its values with Rust's
/// `{:?}`, whose `\t`, `\r` and `\u{..}` escapes read back as other text.
#[test]
fn prometheus_selector_with_a_tab_prints_as_itself() {
    let s = Selector::parse("x{a=\"1\t2\r\u{c4a}\\\"\\n\"}").expect("a selector");
    assert_eq!(s.matchers[0].value, "1\t2\r\u{c4a}\"\n");
    assert_eq!(Selector::parse(&s.to_string()).expect("printed"), s);
}

/// Found by `cgroup_paths_and_container_references` and `numa_maps_mutated`: refusals
/// quoted their whole input, so a long one made an error message of any length.
#[test]
fn host_refusals_quote_long_input_cut() {
    let long = "A".repeat(100_000);
    let path = CgroupPath::parse(&format!("{long}/..")).expect_err("..");
    let reference = Reference::parse(&format!("docker:{long}/")).expect_err("a slash");
    let numa_maps = parse_numa_maps(&format!("{long}\n"), &Default::default()).expect_err("hex");
    let mounts = Mounts::parse(&long).expect_err("no separator");
    for line in [
        path.to_string(),
        reference.to_string(),
        numa_maps.to_string(),
        mounts.to_string(),
    ] {
        assert!(line.len() < 400, "{} bytes: {}", line.len(), &line[..200]);
    }
}

/// Found by `mountinfo_mutated`: a relative mount point was kept, and every cgroup path
/// built on it would have been relative to the daemon's working directory.
#[test]
fn mountinfo_with_a_relative_mount_point_is_malformed() {
    let line = "26 30 0:24 / sys/fs/cgroup/cpuset rw shared:9 - cgroup cgroup rw,cpuset\n";
    let err = Mounts::parse(line).expect_err("relative");
    assert_eq!(err.line_no, 1);
}

/// Output of the programs `placed-train` reads (sysbench, stress-ng, pgbench, redis).
const OUTPUT: &str = "[ 1s ] thds: 4 eps: 10391.56 lat (ms,95%): 0.39
[ 2s ] thds: 4 tps: 1203.12 qps: 24062.40 (r/w/o: 16843.68/4812.48/2406.24)
stress-ng: metrc: [16993] matrix             3878      1.00      0.97      0.00      3877.68        4015.89
progress: 1.0 s, 1523.9 tps, lat 0.655 ms stddev 0.210, 0 failed\rprogress: 2.0 s, 1610.2 tps\r
SET: rps=86453.8 (overall: 86453.8) avg_msec=0.287 (overall: 0.287)\r
ops NaN\nops inf\nops 1e999\nops -0\nops 1e308\nops 1e308\n";

/// The regexes of the shipped workload definitions, and a few edge forms.
const REGEXES: &[&str] = &[
    r"eps: ([0-9.]+)",
    r"tps: ([0-9.]+)",
    r"metrc: \[\d+\] \w+\s+(\d+)\s",
    r"rps=([0-9.]+)",
    r"ops (\S+)",
    "done",
    r"(?:x)?(\d*)",
    "",
];

/// Whatever the bytes, their lines are the same however they arrive in chunks, none is
/// empty or holds a line end, and every regex gives finite numbers or nothing.
fn lines_property(bytes: &[u8], cut: usize) -> Result<(), TestCaseError> {
    let split = |chunks: &[&[u8]]| {
        let mut lines = Lines::default();
        let mut out = Vec::new();
        for chunk in chunks {
            lines.push(chunk, |l| out.push(l.to_owned()));
        }
        lines.finish(|l| out.push(l.to_owned()));
        out
    };
    let cut = cut.min(bytes.len());
    let whole = split(&[bytes]);
    prop_assert_eq!(&whole, &split(&[&bytes[..cut], &bytes[cut..]]));
    for line in &whole {
        prop_assert!(
            !line.is_empty() && !line.contains(['\n', '\r']),
            "{:?}",
            line
        );
        prop_assert_eq!(line.trim_end(), line.as_str());
    }
    for regex in REGEXES {
        for mode in [Mode::Rate, Mode::Total, Mode::Increment] {
            let mut metric = LineMetric::new(
                LinePattern::new(regex, mode)
                    .map_err(|e| TestCaseError::fail(format!("{regex:?}: {e}")))?,
            );
            for line in &whole {
                if let Some(v) = metric.line(line) {
                    prop_assert!(v.is_finite(), "{regex:?} {mode:?} {line:?}: {v}");
                }
            }
        }
    }
    Ok(())
}

#[test]
fn pattern_lines_mutated_from_program_output() {
    fuzz::run(
        "pattern-lines",
        2_000,
        (
            fuzz::mutated(vec![OUTPUT.as_bytes().to_vec()]),
            any::<usize>(),
        ),
        |(bytes, cut)| lines_property(&bytes, cut % (bytes.len() + 1)),
    );
}

#[test]
fn pattern_lines_arbitrary_bytes() {
    fuzz::run(
        "pattern-lines-arbitrary",
        2_000,
        (fuzz::bytes(512), any::<usize>()),
        |(bytes, cut)| lines_property(&bytes, cut % (bytes.len() + 1)),
    );
}

/// Any regex compiles or is refused with a bounded message; one that compiles gives finite
/// numbers or nothing on real output and on its own text.
fn regex_property(regex: &str) -> Result<(), TestCaseError> {
    let pattern = match LinePattern::new(regex, Mode::Increment) {
        Ok(p) => p,
        Err(e) => return fuzz::check_error(&e),
    };
    let mut metric = LineMetric::new(pattern);
    for line in OUTPUT.lines().chain([regex]) {
        if let Some(v) = metric.line(line) {
            prop_assert!(v.is_finite(), "{regex:?} on {line:?}: {v}");
        }
    }
    Ok(())
}

#[test]
fn pattern_regexes_mutated() {
    let seeds = REGEXES.iter().map(|r| (*r).to_owned()).collect();
    fuzz::run("pattern-regex", 2_000, fuzz::mutated_text(seeds), |t| {
        regex_property(&t)
    });
}

#[test]
fn pattern_regexes_arbitrary() {
    fuzz::run("pattern-regex-arbitrary", 2_000, fuzz::text(128), |t| {
        regex_property(&t)
    });
}
