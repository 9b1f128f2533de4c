//! The policy replay drawn like the thesis's figures 2.13-2.14, one figure per goal: above,
//! containers per machine per workload and policy; below, each workload's worst measured
//! performance relative to the goal (1.0 keeps it).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::{LEFT, PlotError, RIGHT, escape, open_svg, write_all};
use crate::policies::{Cell, Replay, Replayed};

const PANEL: f64 = 180.0;
const TOP: f64 = 50.0;
const GAP: f64 = 50.0;
const GROUP: f64 = 36.0;

fn colour(p: Replayed) -> &'static str {
    match p {
        Replayed::Model => "#1f77b4",
        Replayed::ModelLowerBound => "#9467bd",
        Replayed::ModelThird => "#17becf",
        Replayed::SmartAggressive => "#ff7f0e",
        Replayed::Conservative => "#7f7f7f",
        Replayed::OnePlacement => "#2ca02c",
    }
}

/// The worst run's performance over the goal, when measured.
fn worst_over_goal(c: &Cell) -> Option<f64> {
    c.runs
        .iter()
        .map(|r| r.performance.map(|p| p / c.goal))
        .collect::<Option<Vec<f64>>>()?
        .into_iter()
        .reduce(f64::min)
}

/// One goal's figure.
pub fn goal_svg(r: &Replay, goal: f64) -> String {
    let columns: Vec<Vec<&Cell>> = Replayed::ALL
        .iter()
        .map(|&p| r.cells_of(goal, p).collect())
        .collect();
    let workloads = columns[0].len().max(1);
    let plot_w = (GROUP * workloads as f64).max(400.0);
    let group = plot_w / workloads as f64;
    let bar = group / (Replayed::ALL.len() as f64 + 1.0);
    let width = LEFT + plot_w + RIGHT;
    let height = TOP + 2.0 * PANEL + GAP + 80.0;
    let mut svg = open_svg(
        width,
        height,
        &format!(
            "Policies at goal {:.0}% of the baseline ({})",
            100.0 * goal,
            r.baseline
        ),
        r.provenance,
    );
    let max_containers = columns
        .iter()
        .flatten()
        .map(|c| c.containers())
        .fold(1.0_f64, f64::max)
        .ceil();
    let max_ratio = columns
        .iter()
        .flatten()
        .filter_map(|c| worst_over_goal(c))
        .fold(1.2_f64, f64::max);
    let top_y = |v: f64| TOP + PANEL * (1.0 - v / max_containers);
    let low_top = TOP + PANEL + GAP;
    let low_y = |v: f64| low_top + PANEL * (1.0 - v / max_ratio);
    axes(&mut svg, plot_w, max_containers, max_ratio);
    for (pi, (policy, cells)) in Replayed::ALL.iter().zip(&columns).enumerate() {
        for (w, c) in cells.iter().enumerate() {
            let x = LEFT + group * w as f64 + bar * (pi as f64 + 0.5);
            let y = top_y(c.containers());
            let _ = writeln!(
                svg,
                r#"<rect x="{x:.1}" y="{y:.1}" width="{bar:.1}" height="{:.1}" fill="{}"><title>{} {}: {:.1}</title></rect>"#,
                TOP + PANEL - y,
                colour(*policy),
                escape(&c.workload),
                policy.name(),
                c.containers()
            );
            if let Some(ratio) = worst_over_goal(c) {
                let _ = writeln!(
                    svg,
                    r#"<circle cx="{:.1}" cy="{:.1}" r="3" fill="{}"><title>{} {}: {ratio:.3}</title></circle>"#,
                    x + bar / 2.0,
                    low_y(ratio),
                    colour(*policy),
                    escape(&c.workload),
                    policy.name()
                );
            }
        }
    }
    for (w, c) in columns[0].iter().enumerate() {
        let _ = writeln!(
            svg,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle"><title>{}</title>{w}</text>"#,
            LEFT + group * (w as f64 + 0.5),
            low_top + PANEL + 16.0,
            escape(&c.workload)
        );
    }
    let _ = writeln!(
        svg,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">Workload (hover for its name)</text>"#,
        LEFT + plot_w / 2.0,
        height - 12.0
    );
    legend(&mut svg, LEFT + plot_w + 12.0);
    svg.push_str("</svg>\n");
    svg
}

/// The two panels' frames and labels, their ticks, and the goal's line in the lower one.
fn axes(svg: &mut String, plot_w: f64, max_containers: f64, max_ratio: f64) {
    let top_y = |v: f64| TOP + PANEL * (1.0 - v / max_containers);
    let low_top = TOP + PANEL + GAP;
    let low_y = |v: f64| low_top + PANEL * (1.0 - v / max_ratio);
    for (y0, label) in [
        (TOP, "Containers per machine"),
        (low_top, "Worst perf / goal"),
    ] {
        let _ = writeln!(
            svg,
            r##"<rect x="{LEFT}" y="{y0}" width="{plot_w}" height="{PANEL}" fill="none" stroke="#000000"/><text x="16" y="{0:.1}" text-anchor="middle" transform="rotate(-90 16 {0:.1})">{label}</text>"##,
            y0 + PANEL / 2.0
        );
    }
    for tick in [0.0, max_containers / 2.0, max_containers] {
        let _ = writeln!(
            svg,
            r#"<text x="{}" y="{:.1}" text-anchor="end">{tick:.0}</text>"#,
            LEFT - 6.0,
            top_y(tick) + 4.0
        );
    }
    for tick in [0.0, 1.0, max_ratio] {
        let _ = writeln!(
            svg,
            r#"<text x="{}" y="{:.1}" text-anchor="end">{tick:.2}</text>"#,
            LEFT - 6.0,
            low_y(tick) + 4.0
        );
    }
    let _ = writeln!(
        svg,
        r##"<line x1="{LEFT}" y1="{0:.1}" x2="{1:.1}" y2="{0:.1}" stroke="#d62728" stroke-dasharray="4,3"/>"##,
        low_y(1.0),
        LEFT + plot_w
    );
}

/// One coloured key per policy, from `lx` rightwards of the plot.
fn legend(svg: &mut String, lx: f64) {
    for (i, policy) in Replayed::ALL.iter().enumerate() {
        let ly = TOP + 10.0 + 20.0 * i as f64;
        let _ = writeln!(
            svg,
            r#"<rect x="{lx}" y="{}" width="14" height="10" fill="{}"/><text x="{}" y="{}">{}</text>"#,
            ly - 5.0,
            colour(*policy),
            lx + 20.0,
            ly + 4.0,
            policy.name()
        );
    }
}

/// Writes one SVG per goal into `dir` (created if missing); returns the files.
pub fn write_plots(r: &Replay, dir: &Path) -> Result<Vec<PathBuf>, PlotError> {
    write_all(
        dir,
        r.goals.iter().map(|&goal| {
            (
                format!("policies-goal{:.0}.svg", 100.0 * goal),
                goal_svg(r, goal),
            )
        }),
    )
}
