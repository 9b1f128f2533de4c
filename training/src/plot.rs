//! Predicted against actual performance per workload, drawn like the thesis's figures
//! 2.4-2.12: placement on x, performance relative to the baseline on y, one line for the
//! actual values and one per predictor. Plain SVG written by hand: no fonts or system
//! libraries needed, and any browser shows it. [`policies`] draws the policy replay.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use ndarray::ArrayView1;
use placed_models::{Evaluation, Provenance};

pub mod policies;

/// A plot that could not be written.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    /// Creating the directory or writing a file failed.
    #[error("cannot write plot {path}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// What the OS said.
        source: std::io::Error,
    },
}

const WIDTH: f64 = 780.0;
const HEIGHT: f64 = 400.0;
const LEFT: f64 = 60.0;
const RIGHT: f64 = 250.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 50.0;

struct Series<'a> {
    name: &'static str,
    colour: &'static str,
    dash: &'static str,
    values: ArrayView1<'a, f64>,
}

/// One workload run's figure.
pub fn workload_svg(e: &Evaluation, row: usize) -> String {
    let series = series_of(e, row);
    let frame = Frame::new(&series, e.placements.len());
    let r = &e.rows[row];
    let mut svg = open_svg(
        WIDTH,
        HEIGHT,
        &format!("{} ({})", r.workload, r.family),
        e.provenance,
    );
    axes(&mut svg, &frame, e);
    for (i, s) in series.iter().enumerate() {
        line(&mut svg, &frame, s, i);
    }
    svg.push_str("</svg>\n");
    svg
}

/// The actual values and one line per predictor.
fn series_of(e: &Evaluation, row: usize) -> Vec<Series<'_>> {
    let mut series = vec![
        Series {
            name: "Actual",
            colour: "#000000",
            dash: "",
            values: e.actual.row(row),
        },
        Series {
            name: "Predicted: perf measurements",
            colour: "#1f77b4",
            dash: "",
            values: e.forest.values.row(row),
        },
        Series {
            name: "Predicted: category mean",
            colour: "#2ca02c",
            dash: "2,3",
            values: e.category_mean.values.row(row),
        },
    ];
    if let Some(c) = &e.counter_baseline {
        series.push(Series {
            name: "Predicted: counters",
            colour: "#d62728",
            dash: "6,3",
            values: c.values.row(row),
        });
    }
    series
}

/// The plot area and its scales.
struct Frame {
    placements: usize,
    y_max: f64,
    step: f64,
    w: f64,
    h: f64,
}

impl Frame {
    fn new(series: &[Series<'_>], placements: usize) -> Self {
        let top_value = series
            .iter()
            .flat_map(|s| s.values.iter().copied())
            .filter(|v| v.is_finite())
            .fold(1.0_f64, f64::max);
        // Ticks every 0.2 as in the thesis's figures, coarser when the range is large.
        let step = if top_value <= 2.0 {
            0.2
        } else if top_value <= 5.0 {
            0.5
        } else {
            1.0
        };
        Self {
            placements,
            y_max: (top_value * 1.05 / step).ceil() * step,
            step,
            w: WIDTH - LEFT - RIGHT,
            h: HEIGHT - TOP - BOTTOM,
        }
    }

    fn x(&self, p: usize) -> f64 {
        LEFT + self.w * (p as f64 + 0.5) / self.placements as f64
    }

    fn y(&self, v: f64) -> f64 {
        TOP + self.h * (1.0 - v / self.y_max)
    }
}

/// Grid lines, placement ticks (hovering shows the placement id), the box and the labels.
fn axes(svg: &mut String, f: &Frame, e: &Evaluation) {
    let mut tick = 0.0;
    while tick <= f.y_max + 1e-9 {
        let _ = writeln!(
            svg,
            r##"<line x1="{LEFT}" y1="{0:.1}" x2="{1:.1}" y2="{0:.1}" stroke="#dddddd"/><text x="{2}" y="{3:.1}" text-anchor="end">{tick:.1}</text>"##,
            f.y(tick),
            LEFT + f.w,
            LEFT - 6.0,
            f.y(tick) + 4.0
        );
        tick += f.step;
    }
    for (p, id) in e.placements.iter().enumerate() {
        let role = if p == e.baseline {
            " (baseline)"
        } else if p == e.probe {
            " (probe)"
        } else {
            ""
        };
        let _ = writeln!(
            svg,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle"><title>{}{role}</title>{p}</text>"#,
            f.x(p),
            TOP + f.h + 16.0,
            escape(id)
        );
    }
    let _ = writeln!(
        svg,
        r##"<rect x="{LEFT}" y="{TOP}" width="{}" height="{}" fill="none" stroke="#000000"/>"##,
        f.w, f.h
    );
    let _ = writeln!(
        svg,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">Placement (baseline {}, probe {})</text>"#,
        LEFT + f.w / 2.0,
        HEIGHT - 12.0,
        e.baseline,
        e.probe
    );
    let _ = writeln!(
        svg,
        r#"<text x="16" y="{:.1}" text-anchor="middle" transform="rotate(-90 16 {:.1})">Normalized Performance</text>"#,
        TOP + f.h / 2.0,
        TOP + f.h / 2.0
    );
}

/// One series as a line with points, and its legend entry (the `index`th).
fn line(svg: &mut String, f: &Frame, s: &Series<'_>, index: usize) {
    let points: Vec<String> = s
        .values
        .iter()
        .enumerate()
        .filter(|(_, v)| v.is_finite())
        .map(|(p, v)| format!("{:.1},{:.1}", f.x(p), f.y(*v)))
        .collect();
    let _ = writeln!(
        svg,
        r#"<polyline points="{}" fill="none" stroke="{}" stroke-width="2" stroke-dasharray="{}"/>"#,
        points.join(" "),
        s.colour,
        s.dash
    );
    for point in &points {
        if let Some((px, py)) = point.split_once(',') {
            let _ = writeln!(
                svg,
                r#"<circle cx="{px}" cy="{py}" r="3" fill="{}"/>"#,
                s.colour
            );
        }
    }
    let ly = TOP + 10.0 + 20.0 * index as f64;
    let lx = WIDTH - RIGHT + 12.0;
    let _ = writeln!(
        svg,
        r#"<line x1="{lx}" y1="{ly}" x2="{}" y2="{ly}" stroke="{}" stroke-width="2" stroke-dasharray="{}"/><text x="{}" y="{}">{}</text>"#,
        lx + 24.0,
        s.colour,
        s.dash,
        lx + 30.0,
        ly + 4.0,
        s.name
    );
}

/// Writes one SVG per workload run into `dir` (created if missing); returns the files.
pub fn write_plots(e: &Evaluation, dir: &Path) -> Result<Vec<PathBuf>, PlotError> {
    write_all(
        dir,
        e.rows.iter().enumerate().map(|(row, r)| {
            (
                format!("{}-run{}.svg", file_safe(&r.workload), r.run),
                workload_svg(e, row),
            )
        }),
    )
}

/// Writes each (file name, SVG) into `dir`, created if missing; returns the files.
fn write_all(
    dir: &Path,
    figures: impl IntoIterator<Item = (String, String)>,
) -> Result<Vec<PathBuf>, PlotError> {
    std::fs::create_dir_all(dir).map_err(|source| PlotError::Io {
        path: dir.to_owned(),
        source,
    })?;
    let mut written = Vec::new();
    for (name, svg) in figures {
        let path = dir.join(name);
        std::fs::write(&path, svg).map_err(|source| PlotError::Io {
            path: path.clone(),
            source,
        })?;
        written.push(path);
    }
    Ok(written)
}

/// What a figure's title adds for data that is not from real hardware: figures travel
/// without the report that announced it.
fn provenance_mark(p: Provenance) -> &'static str {
    match p {
        Provenance::Simulated => " (SIMULATED)",
        Provenance::VirtualMachine => " (SIMULATED: virtual machine, timings not representative)",
        Provenance::Real => "",
    }
}

/// The start of a figure: the document, a white background and the title, marked by
/// provenance. The caller closes it with `</svg>`.
fn open_svg(width: f64, height: f64, title: &str, provenance: Provenance) -> String {
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(svg, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        svg,
        r#"<text x="{LEFT}" y="22" font-size="14">{}{}</text>"#,
        escape(title),
        provenance_mark(provenance)
    );
    svg
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Workload names come from data files: keep them inside `dir` and portable.
fn file_safe(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_cannot_escape_the_plot_directory_or_break_the_svg() {
        assert_eq!(file_safe("../etc/passwd"), "___etc_passwd");
        assert_eq!(escape(r#"a<b>&"c""#), "a&lt;b&gt;&amp;&quot;c&quot;");
    }
}
