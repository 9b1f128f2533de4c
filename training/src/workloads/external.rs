//! External workloads: any command, described in a TOML file (docs/training.md,
//! "Workloads"), with the metric its rate is read from.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use super::Error;

/// Placeholders a command may use.
pub const PLACEHOLDERS: &[&str] = &["threads", "scratch", "port"];

/// How long a server may take to answer its readiness check, by default.
const DEFAULT_READY_TIMEOUT_S: f64 = 30.0;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    workload: Vec<Definition>,
}

/// One external workload as the file describes it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Definition {
    pub name: String,
    pub family: String,
    pub unit: String,
    /// Programs that must be on `PATH` for the workload to be available.
    #[serde(default)]
    pub requires: Vec<String>,
    /// The shortest observation window that gives a steady reading, in seconds.
    #[serde(default)]
    pub min_window_s: Option<f64>,
    /// Commands run to completion first, in the workload's cgroups (e.g. `initdb`).
    #[serde(default)]
    pub setup: Vec<Vec<String>>,
    /// A server started after `setup`, in the same cgroups, and kept running.
    #[serde(default)]
    pub server: Option<Server>,
    /// Commands run to completion once the server is ready (e.g. `pgbench -i`).
    #[serde(default)]
    pub prepare: Vec<Vec<String>>,
    /// The workload itself: runs until stopped.
    pub command: Vec<String>,
    /// Where its rate is read.
    pub metric: Metric,
    /// Bound on each setup and prepare command, in seconds.
    #[serde(default = "default_setup_timeout")]
    pub setup_timeout_s: f64,
}

fn default_setup_timeout() -> f64 {
    300.0
}

fn default_ready_timeout() -> f64 {
    DEFAULT_READY_TIMEOUT_S
}

/// A server the workload's command talks to.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Server {
    pub command: Vec<String>,
    /// A command that succeeds once the server accepts work; retried every 100 ms.
    pub ready: Vec<String>,
    #[serde(default = "default_ready_timeout")]
    pub ready_timeout_s: f64,
}

/// Where the rate comes from.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "source", rename_all = "snake_case", deny_unknown_fields)]
pub enum Metric {
    /// A regular expression over the command's output lines (split at `\n` or `\r`);
    /// its first capture group is the number (no group: the number is 1).
    Output {
        regex: String,
        #[serde(default)]
        mode: Mode,
        #[serde(default)]
        stream: Stream,
    },
    /// A Prometheus text endpoint.
    Prometheus { url: String, selector: String },
    /// A command that prints one number when run.
    Command {
        argv: Vec<String>,
        #[serde(default)]
        counter: bool,
    },
}

/// What a matched number means, and which streams are read: the daemon's pattern
/// metrics take the same words.
pub use placed_host::observe::{Mode, Stream};

impl Definition {
    /// The minimum window, if any.
    pub fn min_window(&self) -> Option<Duration> {
        self.min_window_s
            .filter(|s| s.is_finite() && *s > 0.0)
            .map(Duration::from_secs_f64)
    }

    /// Every string with placeholders, with where it is, for checking.
    fn templates(&self) -> Vec<(String, &str)> {
        fn add<'a>(all: &mut Vec<(String, &'a str)>, field: &str, argv: &'a [String]) {
            all.extend(argv.iter().map(|a| (field.to_owned(), a.as_str())));
        }
        let mut all: Vec<(String, &str)> = Vec::new();
        add(&mut all, "command", &self.command);
        for (i, c) in self.setup.iter().enumerate() {
            add(&mut all, &format!("setup[{i}]"), c);
        }
        for (i, c) in self.prepare.iter().enumerate() {
            add(&mut all, &format!("prepare[{i}]"), c);
        }
        if let Some(server) = &self.server {
            add(&mut all, "server.command", &server.command);
            add(&mut all, "server.ready", &server.ready);
        }
        match &self.metric {
            Metric::Prometheus { url, .. } => all.push(("metric.url".into(), url.as_str())),
            Metric::Command { argv, .. } => add(&mut all, "metric.argv", argv),
            Metric::Output { .. } => {}
        }
        all
    }

    /// Checks everything the parser does not: names, placeholders, the regex, commands.
    fn check(&self) -> Result<(), String> {
        if self.name.trim().is_empty() || self.family.trim().is_empty() {
            return Err("name and family must not be empty".into());
        }
        let mut empty = vec![("command", self.command.is_empty())];
        empty.extend(self.setup.iter().map(|c| ("setup", c.is_empty())));
        empty.extend(self.prepare.iter().map(|c| ("prepare", c.is_empty())));
        if let Some(s) = &self.server {
            empty.push(("server.command", s.command.is_empty()));
            empty.push(("server.ready", s.ready.is_empty()));
        }
        if let Some((field, _)) = empty.iter().find(|(_, e)| *e) {
            return Err(format!("{field} is an empty command"));
        }
        for (field, template) in self.templates() {
            substitute(template, &Values::checking()).map_err(|e| format!("{field}: {e}"))?;
        }
        match &self.metric {
            Metric::Output { regex, mode, .. } => {
                placed_host::observe::LinePattern::new(regex, *mode)
                    .map_err(|e| format!("metric.regex: {e}"))?;
            }
            Metric::Command { argv, .. } if argv.is_empty() => {
                return Err("metric.argv is an empty command".into());
            }
            _ => {}
        }
        Ok(())
    }

    /// Why the workload cannot run on this host, if it cannot.
    pub fn unavailable(&self) -> Option<String> {
        let missing: Vec<&str> = self
            .requires
            .iter()
            .filter(|p| find_program(p).is_none())
            .map(String::as_str)
            .collect();
        (!missing.is_empty()).then(|| format!("not installed: {}", missing.join(", ")))
    }
}

/// A program's path: as given when it contains a slash, else the first match on `PATH`.
pub fn find_program(program: &str) -> Option<PathBuf> {
    let executable = |p: &Path| {
        use std::os::unix::fs::PermissionsExt as _;
        p.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.contains('/') {
        let p = PathBuf::from(program);
        return executable(&p).then_some(p);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|p| executable(p))
}

/// What the placeholders stand for in one launch.
#[derive(Debug, Clone)]
pub struct Values {
    pub threads: usize,
    pub scratch: String,
    pub port: u16,
}

impl Values {
    fn checking() -> Self {
        Self {
            threads: 1,
            scratch: String::new(),
            port: 0,
        }
    }

    fn get(&self, name: &str) -> Option<String> {
        match name {
            "threads" => Some(self.threads.to_string()),
            "scratch" => Some(self.scratch.clone()),
            "port" => Some(self.port.to_string()),
            _ => None,
        }
    }
}

/// Replaces `{name}` placeholders; `{{` and `}}` stand for literal braces.
pub fn substitute(template: &str, values: &Values) -> Result<String, String> {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(i) = rest.find(['{', '}']) {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        if tail.starts_with("{{") || tail.starts_with("}}") {
            out.push_str(&tail[..1]);
            rest = &tail[2..];
            continue;
        }
        if tail.starts_with('}') {
            return Err(format!(
                "unmatched '}}' in {template:?} (write '}}}}' for a brace)"
            ));
        }
        let Some(end) = tail.find('}') else {
            return Err(format!(
                "unclosed '{{' in {template:?} (write '{{{{' for a brace)"
            ));
        };
        let name = &tail[1..end];
        let Some(value) = values.get(name) else {
            return Err(format!(
                "unknown placeholder {{{name}}} in {template:?}; known: {}",
                PLACEHOLDERS
                    .iter()
                    .map(|p| format!("{{{p}}}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        };
        out.push_str(&value);
        rest = &tail[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Substitutes every argument of `argv`.
pub fn substitute_all(argv: &[String], values: &Values) -> Vec<String> {
    // Checked at load time; a failure here cannot happen, but keep the text if it does.
    argv.iter()
        .map(|a| substitute(a, values).unwrap_or_else(|_| a.clone()))
        .collect()
}

/// Reads the definitions in `path`.
pub fn load(path: &Path) -> Result<Vec<Definition>, Error> {
    let bad = |detail: String| Error::Definition {
        file: path.to_owned(),
        detail,
    };
    let text = std::fs::read_to_string(path).map_err(|e| bad(e.to_string()))?;
    parse(&text).map_err(bad)
}

/// Parses definitions from TOML text.
pub fn parse(text: &str) -> Result<Vec<Definition>, String> {
    use placed_core::text::clip;
    let file: File =
        toml::from_str(text).map_err(|e| placed_core::text::parser_message(&e.to_string()))?;
    let mut seen = std::collections::HashSet::new();
    for def in &file.workload {
        def.check()
            .map_err(|e| format!("workload {:?}: {}", clip(&def.name, 100), clip(&e, 600)))?;
        if !seen.insert(def.name.as_str()) {
            return Err(format!(
                "workload {:?} is defined twice",
                clip(&def.name, 100)
            ));
        }
    }
    Ok(file.workload)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
[[workload]]
name = "loop"
family = "shell"
unit = "lines/s"
requires = ["sh"]
command = ["sh", "-c", "while :; do echo done {threads}; sleep 0.01; done"]
metric = { source = "output", regex = "done", mode = "increment" }
"#;

    #[test]
    fn the_shipped_debian_definitions_parse() {
        let defs = parse(include_str!("../../workloads/debian.toml")).unwrap();
        assert!(defs.len() >= 10, "{}", defs.len());
        let families: std::collections::HashSet<&str> =
            defs.iter().map(|d| d.family.as_str()).collect();
        for f in ["stress-ng-compute", "sysbench", "redis", "postgres"] {
            assert!(families.contains(f), "{f}");
        }
    }

    #[test]
    fn the_stress_ng_regex_takes_only_the_bogo_ops_column() {
        let defs = parse(include_str!("../../workloads/debian.toml")).unwrap();
        let matrix = defs.iter().find(|d| d.name == "stress-ng-matrix").unwrap();
        let Metric::Output { regex, mode, .. } = &matrix.metric else {
            panic!("{:?}", matrix.metric)
        };
        // Through the parser that reads the workload's output.
        let pattern = placed_host::observe::LinePattern::new(regex, *mode).unwrap();
        let summary = "stress-ng: metrc: [16993] matrix             3878      1.00      0.97      0.00      3877.68        4015.89";
        assert_eq!(pattern.number(summary), Some(3878.0));
        let method = "stress-ng: metrc: [16993] matrix            279492.52 add matrix ops per sec (geometic mean of 2 instances)";
        assert_eq!(pattern.number(method), None);
    }

    #[test]
    fn a_good_file_parses() {
        let defs = parse(GOOD).unwrap();
        assert_eq!(defs.len(), 1);
        assert_eq!(
            defs[0].metric,
            Metric::Output {
                regex: "done".into(),
                mode: Mode::Increment,
                stream: Stream::Both,
            }
        );
        assert_eq!(defs[0].unavailable(), None);
    }

    #[test]
    fn unknown_fields_are_refused_with_their_line() {
        let text = GOOD.replace("unit = ", "colour = \"red\"\nunit = ");
        let err = parse(&text).unwrap_err();
        assert!(err.contains("colour") && err.contains("line 5"), "{err}");
        let text = GOOD.replace("mode = \"increment\"", "mode = \"sometimes\"");
        let err = parse(&text).unwrap_err();
        assert!(err.contains("sometimes") && err.contains("line"), "{err}");
    }

    #[test]
    fn bad_placeholders_are_named() {
        let err = parse(&GOOD.replace("{threads}", "{cores}")).unwrap_err();
        assert!(err.contains("{cores}") && err.contains("command"), "{err}");
        assert!(err.contains("\"loop\""), "{err}");
        let err = parse(&GOOD.replace("{threads}", "{threads")).unwrap_err();
        assert!(err.contains("unclosed"), "{err}");
        let err = parse(&GOOD.replace("regex = \"done\"", "regex = \"(done\"")).unwrap_err();
        assert!(err.contains("metric.regex"), "{err}");
    }

    #[test]
    fn placeholders_substitute_and_braces_escape() {
        let v = Values {
            threads: 4,
            scratch: "/tmp/s".into(),
            port: 6379,
        };
        assert_eq!(
            substitute("-t{threads} {scratch}/x:{port} {{lit}}", &v).unwrap(),
            "-t4 /tmp/s/x:6379 {lit}"
        );
    }

    #[test]
    fn missing_programs_make_a_workload_unavailable() {
        let text = GOOD.replace(
            "requires = [\"sh\"]",
            "requires = [\"sh\", \"no-such-program-x\"]",
        );
        let defs = parse(&text).unwrap();
        assert_eq!(
            defs[0].unavailable().as_deref(),
            Some("not installed: no-such-program-x")
        );
    }
}
