//! `placectl capacity`: free, held and reserved PUs per NUMA node and package, who holds
//! each allocation unit, and per size the important placements that fit on the free units
//! now.

use placed_proto::v1 as pb;
use serde_json::{Value, json};

use super::{Action, Call, Client, Failure, Format, Reply, Typed};
use crate::cli::StatusError;
use crate::cli::table::Table;

#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// Sizes (vCPUs) to list the placements that fit for, comma-separated or repeated;
    /// default: 1, 2, 4, ... up to the machine's PUs.
    #[arg(long, value_name = "N", value_delimiter = ',')]
    vcpus: Vec<u32>,
}

impl Typed for Args {
    fn validate(self) -> Result<Action, Failure> {
        if self.vcpus.contains(&0) {
            return Err(crate::cli::UsageError("--vcpus: every size is at least 1".into()).into());
        }
        Action::daemon(pb::GetCapacityRequest { vcpus: self.vcpus })
    }
}

impl Call for pb::GetCapacityRequest {
    fn call<'a>(&'a self, c: &'a mut Client, format: Format) -> Reply<'a> {
        Box::pin(async move {
            let mut r = c
                .get_capacity(self.clone())
                .await
                .map_err(StatusError)?
                .into_inner();
            if self.vcpus.is_empty() {
                let sizes = default_sizes(&r);
                r = c
                    .get_capacity(pb::GetCapacityRequest { vcpus: sizes })
                    .await
                    .map_err(StatusError)?
                    .into_inner();
            }
            format.print(|| capacity_json(&r), || render_capacity(&r))
        })
    }
}

/// 1, 2, 4, ... up to the machine's PUs.
fn default_sizes(r: &pb::GetCapacityResponse) -> Vec<u32> {
    let pus: u32 = r
        .nodes
        .iter()
        .map(|n| n.free_pus + n.held_pus + n.reserved_pus)
        .sum();
    std::iter::successors(Some(1u32), |s| s.checked_mul(2))
        .take_while(|&s| s <= pus.max(1))
        .collect()
}

fn tally_table(what: &str, ts: &[pb::CapacityTally]) -> String {
    let mut t = Table::new([what, "FREE", "HELD", "RESERVED"])
        .right(1)
        .right(2)
        .right(3);
    for n in ts {
        t.row([
            n.index.to_string(),
            n.free_pus.to_string(),
            n.held_pus.to_string(),
            n.reserved_pus.to_string(),
        ]);
    }
    t.render("")
}

pub fn render_capacity(r: &pb::GetCapacityResponse) -> String {
    let mut text = String::from("PUs per NUMA node\n");
    text.push_str(&tally_table("NODE", &r.nodes));
    text.push_str("\nPUs per package\n");
    text.push_str(&tally_table("PACKAGE", &r.packages));
    text.push_str("\nAllocation units\n");
    let mut t = Table::new(["UNIT", "CPUS", "MEMS", "PACKAGE", "HELD BY", "RESERVED BY"]).right(0);
    for u in &r.units {
        t.row([
            u.unit.to_string(),
            u.cpus.clone(),
            u.mems.clone(),
            u.package.to_string(),
            if u.held_by.is_empty() {
                "-".into()
            } else {
                u.held_by.join(",")
            },
            if u.reserved_by.is_empty() {
                "-".into()
            } else {
                u.reserved_by.clone()
            },
        ]);
    }
    text.push_str(&t.render(""));
    if !r.fits.is_empty() {
        text.push_str("\nImportant placements that fit now\n");
        let mut t = Table::new(["VCPUS", "PLACEMENTS"]).right(0);
        for f in &r.fits {
            t.row([
                f.vcpus.to_string(),
                match (f.placement_ids.is_empty(), f.note.is_empty()) {
                    (false, _) => f.placement_ids.join(" "),
                    (true, false) => format!("none: {}", f.note),
                    (true, true) => "none: the free units hold none".into(),
                },
            ]);
        }
        text.push_str(&t.render(""));
    }
    text
}

pub fn capacity_json(r: &pb::GetCapacityResponse) -> Value {
    let tally = |ts: &[pb::CapacityTally]| -> Vec<Value> {
        ts.iter()
            .map(|n| json!({"index": n.index, "free_pus": n.free_pus, "held_pus": n.held_pus, "reserved_pus": n.reserved_pus}))
            .collect()
    };
    json!({
        "schema": "placed.capacity/v1",
        "nodes": tally(&r.nodes),
        "packages": tally(&r.packages),
        "units": r.units.iter().map(|u| json!({
            "unit": u.unit, "cpus": u.cpus, "mems": u.mems, "package": u.package,
            "held_by": u.held_by,
            "reserved_by": if u.reserved_by.is_empty() { Value::Null } else { json!(u.reserved_by) },
        })).collect::<Vec<_>>(),
        "fits": r.fits.iter().map(|f| json!({
            "vcpus": f.vcpus, "placements": f.placement_ids,
            "note": if f.note.is_empty() { Value::Null } else { json!(f.note) },
        })).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn capacity() -> pb::GetCapacityResponse {
        pb::GetCapacityResponse {
            units: vec![
                pb::UnitUse {
                    unit: 0,
                    cpus: "0-3".into(),
                    mems: "0".into(),
                    held_by: vec!["/batch/web".into()],
                    ..Default::default()
                },
                pb::UnitUse {
                    unit: 1,
                    cpus: "4-7".into(),
                    mems: "0".into(),
                    reserved_by: "r-1".into(),
                    ..Default::default()
                },
                pb::UnitUse {
                    unit: 2,
                    cpus: "8-11".into(),
                    mems: "1".into(),
                    package: 1,
                    ..Default::default()
                },
            ],
            nodes: vec![
                pb::CapacityTally {
                    index: 0,
                    free_pus: 0,
                    held_pus: 4,
                    reserved_pus: 4,
                },
                pb::CapacityTally {
                    index: 1,
                    free_pus: 4,
                    held_pus: 0,
                    reserved_pus: 0,
                },
            ],
            packages: vec![],
            fits: vec![
                pb::PlacementsThatFit {
                    vcpus: 4,
                    placement_ids: vec!["n1".into()],
                    note: String::new(),
                },
                pb::PlacementsThatFit {
                    vcpus: 8,
                    placement_ids: vec![],
                    note: String::new(),
                },
            ],
        }
    }

    #[test]
    fn capacity_shows_who_has_each_unit_and_what_fits() {
        let text = render_capacity(&capacity());
        for words in ["/batch/web", "r-1", "n1", "none: the free units hold none"] {
            assert!(text.contains(words), "{words:?} in {text}");
        }
        let j = capacity_json(&capacity());
        assert_eq!(j["schema"], "placed.capacity/v1");
        assert_eq!(j["nodes"][0]["reserved_pus"], 4);
        assert_eq!(j["units"][1]["reserved_by"], "r-1");
        assert!(j["units"][2]["reserved_by"].is_null());
        assert_eq!(j["fits"][0]["placements"], json!(["n1"]));
        // 12 PUs in all: sizes up to 8.
        assert_eq!(default_sizes(&capacity()), vec![1, 2, 4, 8]);
    }
}
