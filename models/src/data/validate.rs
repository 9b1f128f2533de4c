//! Validation of a data file's lines: the header's consistency, each record against the
//! header, one provenance and one family per workload, duplicates, and complete runs. Every
//! problem is returned with the line it is on.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use super::{DATA_FORMAT_VERSION, Dataset, Line, MachineHeader, Problem, Provenance, RunRecord};
use crate::resources::ClassResources;

/// (workload, run) -> (its first line, placement -> the record kept).
type Runs = BTreeMap<(String, u32), (usize, HashMap<String, Kept>)>;

pub(super) fn validate(lines: Vec<(usize, Line)>) -> Result<Dataset, (usize, Problem)> {
    let mut lines = lines.into_iter();
    let Some((header_line, first)) = lines.next() else {
        return Err((0, Problem::Empty));
    };
    let Line::Machine(header) = first else {
        return Err((header_line, Problem::MissingHeader));
    };
    check_header(&header).map_err(|p| (header_line, p))?;
    let known: HashSet<&str> = header.placements.iter().map(|p| p.id.as_str()).collect();

    let mut provenance = None;
    let mut families: HashMap<String, String> = HashMap::new();
    // (workload, run) -> (first line, placement -> the kept record)
    let mut runs: Runs = BTreeMap::new();
    let mut records: Vec<RunRecord> = Vec::new();
    let mut superseded = 0;
    let mut resources: Option<(usize, ClassResources)> = None;
    // Runs any of whose records is marked partial.
    let mut partial: BTreeSet<(String, u32)> = BTreeSet::new();
    for (line, parsed) in lines {
        let record = match parsed {
            Line::Machine(_) => {
                return Err((
                    line,
                    Problem::DuplicateHeader {
                        first_line: header_line,
                    },
                ));
            }
            Line::Resources(r) => {
                if let Some((first_line, _)) = resources {
                    return Err((line, Problem::DuplicateResources { first_line }));
                }
                check_resources(&header, &r).map_err(|p| (line, p))?;
                resources = Some((line, r));
                continue;
            }
            Line::Run(r) => r,
        };
        check_record(&header, &known, &record).map_err(|p| (line, p))?;
        one_provenance(&mut provenance, &record).map_err(|p| (line, p))?;
        one_family(&mut families, &record).map_err(|p| (line, p))?;
        let (_, seen) = runs
            .entry((record.workload.clone(), record.run))
            .or_insert_with(|| (line, HashMap::new()));
        if record.partial {
            partial.insert((record.workload.clone(), record.run));
        }
        let usable = record.unusable.is_none();
        match seen.get_mut(&record.placement) {
            None => {
                seen.insert(
                    record.placement.clone(),
                    Kept {
                        line,
                        index: records.len(),
                        usable,
                    },
                );
                records.push(record);
            }
            Some(kept) if kept.usable && usable => {
                return Err((
                    line,
                    Problem::DuplicateMeasurement {
                        workload: record.workload.clone(),
                        run: record.run,
                        placement: record.placement.clone(),
                        first_line: kept.line,
                    },
                ));
            }
            // An unusable attempt after a usable one adds nothing.
            Some(kept) if kept.usable => superseded += 1,
            Some(kept) => {
                kept.line = line;
                kept.usable = usable;
                records[kept.index] = record;
                superseded += 1;
            }
        }
    }
    let Some(provenance) = provenance else {
        return Err((header_line, Problem::NoRuns));
    };
    if let Some(incomplete) = first_incomplete(&header, &runs, &partial) {
        return Err(incomplete);
    }
    Ok(Dataset {
        header,
        resources: resources.map(|(_, r)| r),
        records,
        provenance,
        superseded,
        partial,
    })
}

/// One provenance per file: the first record's.
fn one_provenance(provenance: &mut Option<Provenance>, record: &RunRecord) -> Result<(), Problem> {
    match *provenance {
        None => *provenance = Some(record.provenance),
        Some(expected) if expected != record.provenance => {
            return Err(Problem::MixedProvenance {
                expected,
                found: record.provenance,
            });
        }
        Some(_) => {}
    }
    Ok(())
}

/// One family per workload: the first given.
fn one_family(families: &mut HashMap<String, String>, record: &RunRecord) -> Result<(), Problem> {
    match families.get(&record.workload) {
        Some(first) if *first != record.family => Err(Problem::FamilyConflict {
            workload: record.workload.clone(),
            first: first.clone(),
            found: record.family.clone(),
        }),
        Some(_) => Ok(()),
        None => {
            families.insert(record.workload.clone(), record.family.clone());
            Ok(())
        }
    }
}

/// The incomplete run that appears first in the file, with its first line; a partial run
/// (production data) is incomplete by nature.
fn first_incomplete(
    header: &MachineHeader,
    runs: &Runs,
    partial: &BTreeSet<(String, u32)>,
) -> Option<(usize, Problem)> {
    let ((workload, run), (first_line, seen)) = runs
        .iter()
        .filter(|(key, (_, seen))| seen.len() < header.placements.len() && !partial.contains(*key))
        .min_by_key(|(_, (first_line, _))| *first_line)?;
    let missing = header
        .placements
        .iter()
        .filter(|p| !seen.contains_key(&p.id))
        .map(|p| p.id.clone())
        .collect();
    Some((
        *first_line,
        Problem::MissingPlacements {
            workload: workload.clone(),
            run: *run,
            missing,
        },
    ))
}

pub(super) fn check_resources(header: &MachineHeader, r: &ClassResources) -> Result<(), Problem> {
    let ids: Vec<&str> = header.placements.iter().map(|p| p.id.as_str()).collect();
    Ok(r.check(&ids)?)
}

/// The record kept for one key while validating: where it came from and whether it is usable.
struct Kept {
    line: usize,
    index: usize,
    usable: bool,
}

/// The longest name or text a record may hold: every other problem quotes these, and a
/// message must stay a line.
pub const MAX_NAME: usize = 200;

fn check_names<'a>(
    names: impl IntoIterator<Item = (&'static str, &'a str)>,
) -> Result<(), Problem> {
    for (field, value) in names {
        let length = value.chars().count();
        if length > MAX_NAME {
            return Err(Problem::TooLong {
                field,
                start: crate::json_error::clip(value, 40),
                length,
            });
        }
    }
    Ok(())
}

fn check_header(header: &MachineHeader) -> Result<(), Problem> {
    if header.version != DATA_FORMAT_VERSION {
        return Err(Problem::UnsupportedVersion {
            found: header.version,
            supported: DATA_FORMAT_VERSION,
        });
    }
    let bad = |reason: String| Err(Problem::BadHeader { reason });
    let names = std::iter::once(("fingerprint", header.fingerprint.as_str()))
        .chain(header.concerns.iter().map(|c| ("concern", c.as_str())))
        .chain(
            header
                .placements
                .iter()
                .map(|p| ("placement id", p.id.as_str())),
        );
    check_names(names)?;
    if header.v == 0 {
        return bad("v must be at least 1".into());
    }
    // One placement is valid data (a one-node host); fitting refuses it, not reading.
    if header.placements.is_empty() {
        return bad("no placements".into());
    }
    let mut ids = BTreeSet::new();
    for p in &header.placements {
        if !ids.insert(p.id.as_str()) {
            return bad(format!("placement {:?} listed twice", p.id));
        }
        if p.scores.len() != header.concerns.len() {
            return bad(format!(
                "placement {:?} has {} scores for {} concerns",
                p.id,
                p.scores.len(),
                header.concerns.len()
            ));
        }
        if p.scores.iter().any(|s| !s.is_finite()) {
            return bad(format!(
                "placement {:?} has a score that is not a number",
                p.id
            ));
        }
    }
    Ok(())
}

fn check_record(
    header: &MachineHeader,
    known: &HashSet<&str>,
    record: &RunRecord,
) -> Result<(), Problem> {
    let names = [
        ("fingerprint", record.fingerprint.as_str()),
        ("workload", record.workload.as_str()),
        ("family", record.family.as_str()),
        ("placement", record.placement.as_str()),
        ("unit", record.performance.unit.as_str()),
    ]
    .into_iter()
    .chain(record.counters.keys().map(|k| ("counter", k.as_str())))
    .chain(record.unusable.iter().map(|u| ("unusable", u.as_str())))
    .chain(record.metric.iter().map(|m| ("metric", m.as_str())))
    .chain(record.host.iter().map(|h| ("host", h.as_str())))
    .chain(
        record
            .labels
            .iter()
            .flat_map(|(k, v)| [("label", k.as_str()), ("label value", v.as_str())]),
    );
    check_names(names)?;
    if record.fingerprint != header.fingerprint {
        return Err(Problem::MixedMachineClass {
            expected: header.fingerprint.clone(),
            found: record.fingerprint.clone(),
        });
    }
    if record.v != header.v {
        return Err(Problem::MixedV {
            expected: header.v,
            found: record.v,
        });
    }
    if !known.contains(record.placement.as_str()) {
        return Err(Problem::UnknownPlacement {
            id: record.placement.clone(),
        });
    }
    let invalid = |field: &str, value: f64, expected| Problem::InvalidValue {
        field: field.to_owned(),
        value,
        expected,
    };
    let perf = &record.performance;
    if record.unusable.is_some() {
        // Recorded so that a resumed collection does not measure it again; no value to check.
        return Ok(());
    }
    if !(perf.value.is_finite() && perf.value > 0.0) {
        return Err(invalid("performance.value", perf.value, "finite and > 0"));
    }
    if !(perf.spread.is_finite() && perf.spread >= 0.0) {
        return Err(invalid(
            "performance.spread",
            perf.spread,
            "finite and >= 0",
        ));
    }
    if perf.repetitions == 0 {
        return Err(invalid(
            "performance.repetitions",
            f64::from(perf.repetitions),
            ">= 1",
        ));
    }
    for (name, &value) in &record.counters {
        if !(value.is_finite() && value >= 0.0) {
            return Err(invalid(
                &format!("counters.{name}"),
                value,
                "finite and >= 0",
            ));
        }
    }
    Ok(())
}
