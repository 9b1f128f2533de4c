//! Loading a topology through hwloc, from the host, an XML file or a synthetic string, into
//! plain data that the rest of the machine model works on.
//!
//! One code path for the three sources (docs/design.md, "Machine model"): they differ only in how the hwloc
//! builder is pointed at its input, so every test on the XML corpus exercises the loader the
//! daemon runs on the host. Nothing past [`load`] sees hwloc types.

use std::path::PathBuf;

use hwlocality::Topology as HwlocTopology;
use hwlocality::object::TopologyObject;
use hwlocality::object::distance::DistancesKind;
use hwlocality::object::types::{CacheType, ObjectType};
use hwlocality::topology::builder::{BuildFlags, TopologyBuilder};

use crate::cpuset::{CpuSet, NodeSet};

mod xml_check;
use xml_check::check_xml;

/// Where a topology comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TopologySource {
    /// The machine this process runs on.
    Host,
    /// An hwloc XML export, format v1 (hwloc 1.x) or v2.
    XmlFile(PathBuf),
    /// An hwloc synthetic description such as `pack:4 numa:1 l3:1 core:12 pu:2`.
    Synthetic(String),
}

impl std::fmt::Display for TopologySource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Host => f.write_str("this host"),
            Self::XmlFile(p) => write!(f, "XML file {}", p.display()),
            Self::Synthetic(s) => write!(f, "synthetic topology {s:?}"),
        }
    }
}

/// A topology that could not be loaded. All of these are bad input except [`Self::Host`].
#[derive(Debug, thiserror::Error)]
pub enum TopologyError {
    #[error("cannot read topology file {path}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} is not well-formed XML: {detail}")]
    MalformedXml { path: PathBuf, detail: String },
    #[error(
        "{path} is hwloc XML format {version}, which hwloc {supported} cannot import; export it again with hwloc 2.x (`lstopo --of xml`), or take the file from hwloc's v2.x branch"
    )]
    UnsupportedXmlVersion {
        path: PathBuf,
        version: String,
        supported: &'static str,
    },
    #[error("{path} is not an hwloc topology: {detail}")]
    NotATopology { path: PathBuf, detail: String },
    #[error("hwloc rejected {path}: {detail}")]
    XmlRejected { path: PathBuf, detail: String },
    #[error("invalid synthetic topology {description:?}: {detail}")]
    InvalidSynthetic { description: String, detail: String },
    #[error("cannot discover this host's topology with hwloc: {detail}")]
    Host { detail: String },
    #[error("{source_name} has no usable PU (every PU is offline or disallowed)")]
    NoUsablePu { source_name: String },
}

/// A NUMA node as hwloc reports it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct NumaNode {
    pub os_index: u32,
    /// The usable PUs local to this node. Empty for CPU-less nodes (HBM, CXL, GPU memory)
    /// when hwloc attaches them above the PUs' own node, or when all their PUs are offline.
    pub cpus: CpuSet,
    /// hwloc's subtype: `DRAM`, `MCDRAM`, `HBM`, `GPUMemory`, `NVM`, `SPM`, `CXL-DRAM`...
    pub subtype: Option<String>,
    pub memory_bytes: u64,
    pub allowed: bool,
}

/// One level of hwloc's object tree (package, die, group, caches, core), with each object's
/// usable PUs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawLevel {
    /// `Package`, `Die`, `Group`, `L1d`, `L1i`, `L2`, `L3`, `Core`...
    pub name: String,
    pub kind: LevelKind,
    /// Cache size in bytes, where hwloc knows it (same for all objects of a level in practice).
    pub cache_bytes: Option<u64>,
    /// One entry per object at this depth, restricted to the usable PUs (maybe empty).
    pub objects: Vec<CpuSet>,
}

/// What a level of the hierarchy is, for naming concerns and choosing defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LevelKind {
    Core,
    L1,
    L2,
    L3,
    L4,
    L5,
    Die,
    Package,
    Group,
    Numa,
    /// Added by a machine file.
    Custom,
}

/// A distance matrix between NUMA nodes, as the firmware (ACPI SLIT) or a user supplied it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Distances {
    /// hwloc's name for the matrix (`NUMALatency`) or "unnamed".
    pub name: String,
    /// Node os indices, the order of rows and columns.
    pub nodes: Vec<u32>,
    /// Row-major: `values[i * n + j]` is from `nodes[i]` to `nodes[j]`.
    pub values: Vec<u64>,
}

impl Distances {
    pub fn get(&self, from: u32, to: u32) -> Option<u64> {
        let i = self.nodes.iter().position(|&n| n == from)?;
        let j = self.nodes.iter().position(|&n| n == to)?;
        self.values.get(i * self.nodes.len() + j).copied()
    }
}

/// A kind of core on a hybrid processor.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct CpuKind {
    pub cpus: CpuSet,
    /// hwloc's efficiency rank: higher is faster (and hungrier).
    pub efficiency: Option<u32>,
}

/// Everything the machine model needs from hwloc, as plain data.
#[derive(Debug, Clone)]
pub struct Topology {
    /// What was loaded, for messages and the machine summary.
    pub source: String,
    /// All PUs hwloc knows of, online or not, allowed or not.
    pub complete_pus: CpuSet,
    /// Online and allowed PUs: the only ones a placement may use.
    pub usable_pus: CpuSet,
    pub offline_pus: CpuSet,
    pub disallowed_pus: CpuSet,
    pub numa_nodes: Vec<NumaNode>,
    /// Normal levels from the root down, without Machine and PU.
    pub levels: Vec<RawLevel>,
    pub distances: Option<Distances>,
    pub cpu_kinds: Vec<CpuKind>,
    /// The processor model, where hwloc reports it.
    pub cpu_model: Option<String>,
}

/// Stops hwloc from printing its multi-line banners ("hwloc has encountered an out-of-order
/// XML topology load...") to stderr: the load error that follows says the same in one line.
///
/// # Safety
///
/// Sets an environment variable, so no other thread may exist or read the environment
/// concurrently: call it first thing in `main`.
pub unsafe fn quiet_hwloc() {
    // SAFETY: the caller guarantees the process is single-threaded (see above).
    unsafe { std::env::set_var("HWLOC_HIDE_ERRORS", "2") };
}

/// Why hwloc refused, without the debug formatting of its error type.
fn hwloc_reason(e: &hwlocality::errors::RawHwlocError) -> String {
    match &e.errno {
        Some(errno) => format!("its objects are inconsistent ({} says: {errno})", e.api),
        None => format!("its objects are inconsistent ({} failed)", e.api),
    }
}

/// Loads a topology from any source.
pub fn load(source: &TopologySource) -> Result<Topology, TopologyError> {
    let builder = HwlocTopology::builder();
    let topology = match source {
        TopologySource::Host => {
            let host = |e: &dyn std::fmt::Display| TopologyError::Host {
                detail: e.to_string(),
            };
            flagged(builder)
                .map_err(|e| host(&e))?
                .build()
                .map_err(|e| host(&e))?
        }
        TopologySource::XmlFile(path) => {
            let text = std::fs::read_to_string(path).map_err(|source| TopologyError::Read {
                path: path.clone(),
                source,
            })?;
            check_xml(path, &text)?;
            let rejected = |e: &dyn std::fmt::Display| TopologyError::XmlRejected {
                path: path.clone(),
                detail: e.to_string(),
            };
            flagged(builder)
                .map_err(|e| rejected(&e))?
                .from_xml(&text)
                .map_err(|e| rejected(&e))?
                .build()
                .map_err(|e| rejected(&hwloc_reason(&e)))?
        }
        TopologySource::Synthetic(description) => {
            let invalid = |e: &dyn std::fmt::Display| TopologyError::InvalidSynthetic {
                description: description.clone(),
                detail: e.to_string(),
            };
            flagged(builder)
                .map_err(|e| invalid(&e))?
                .from_synthetic(description)
                .map_err(|e| invalid(&e))?
                .build()
                .map_err(|e| invalid(&e))?
        }
    };
    convert(&topology, source)
}

/// Disallowed PUs and nodes are kept in the tree so that the summary can say what was left
/// out and why; the usable set is computed from the allowed sets below.
fn flagged(builder: TopologyBuilder) -> Result<TopologyBuilder, String> {
    builder
        .with_flags(BuildFlags::INCLUDE_DISALLOWED)
        .map_err(|e| e.to_string())
}

fn cpus_of(set: &hwlocality::cpu::cpuset::CpuSet) -> CpuSet {
    set.iter_set()
        .filter_map(|i| u32::try_from(usize::from(i)).ok())
        .collect()
}

fn nodes_of(set: &hwlocality::memory::nodeset::NodeSet) -> NodeSet {
    set.iter_set()
        .filter_map(|i| u32::try_from(usize::from(i)).ok())
        .collect()
}

fn os_index(obj: &TopologyObject) -> Option<u32> {
    obj.os_index().and_then(|i| u32::try_from(i).ok())
}

fn convert(t: &HwlocTopology, source: &TopologySource) -> Result<Topology, TopologyError> {
    let complete_pus = cpus_of(&t.complete_cpuset());
    // With INCLUDE_DISALLOWED, the root cpuset holds the online PUs, allowed or not.
    let online = cpus_of(&t.cpuset());
    let allowed = cpus_of(&t.allowed_cpuset());
    let usable_pus = online.intersection(&allowed);
    if usable_pus.is_empty() {
        return Err(TopologyError::NoUsablePu {
            source_name: source.to_string(),
        });
    }
    let allowed_nodes = nodes_of(&t.allowed_nodeset());

    let numa_nodes = t
        .objects_with_type(ObjectType::NUMANode)
        .filter_map(|n| {
            let os_index = os_index(n)?;
            let cpus = n
                .cpuset()
                .map(|c| cpus_of(&c).intersection(&usable_pus))
                .unwrap_or_default();
            let memory_bytes = match n.attributes() {
                Some(hwlocality::object::attributes::ObjectAttributes::NUMANode(a)) => {
                    a.local_memory().map_or(0, |m| m.get())
                }
                _ => 0,
            };
            Some(NumaNode {
                os_index,
                cpus,
                subtype: n.subtype().map(|s| s.to_string_lossy().into_owned()),
                memory_bytes,
                allowed: allowed_nodes.contains(os_index),
            })
        })
        .collect::<Vec<_>>();

    let mut levels = Vec::new();
    for depth in 0..usize::from(t.depth()) {
        let objects: Vec<&TopologyObject> = t.objects_at_depth(depth).collect();
        let Some(first) = objects.first() else {
            continue;
        };
        let Some((name, kind)) = level_name(first) else {
            continue;
        };
        let cache_bytes = match first.attributes() {
            Some(hwlocality::object::attributes::ObjectAttributes::Cache(c)) => {
                c.size().map(|s| s.get())
            }
            _ => None,
        };
        levels.push(RawLevel {
            name,
            kind,
            cache_bytes,
            objects: objects
                .iter()
                .map(|o| {
                    o.cpuset()
                        .map(|c| cpus_of(&c).intersection(&usable_pus))
                        .unwrap_or_default()
                })
                .collect(),
        });
    }

    let cpu_kinds = match t.cpu_kinds() {
        Ok(kinds) => kinds
            .map(|k| CpuKind {
                cpus: cpus_of(&k.cpuset).intersection(&usable_pus),
                efficiency: k.efficiency.and_then(|e| u32::try_from(e).ok()),
            })
            .collect(),
        Err(_) => Vec::new(),
    };

    let cpu_model = t
        .objects_with_type(ObjectType::Package)
        .find_map(|p| p.info("CPUModel"))
        .map(|m| m.to_string_lossy().trim().to_owned());

    Ok(Topology {
        source: source.to_string(),
        offline_pus: complete_pus.difference(&online),
        disallowed_pus: online.difference(&allowed),
        complete_pus,
        usable_pus,
        numa_nodes,
        levels,
        distances: numa_distances(t),
        cpu_kinds,
        cpu_model,
    })
}

/// Names a level, or `None` for levels the model ignores (the Machine root, PUs, memory,
/// I/O and Misc objects).
fn level_name(obj: &TopologyObject) -> Option<(String, LevelKind)> {
    let ty = obj.object_type();
    let cache = |level: u8, kind: LevelKind| {
        let suffix = match obj.attributes() {
            Some(hwlocality::object::attributes::ObjectAttributes::Cache(c)) => {
                match c.cache_type() {
                    CacheType::Data => "d",
                    CacheType::Instruction => "i",
                    _ => "",
                }
            }
            _ => "",
        };
        Some((format!("L{level}{suffix}"), kind))
    };
    match ty {
        ObjectType::Core => Some(("Core".into(), LevelKind::Core)),
        ObjectType::L1Cache | ObjectType::L1ICache => cache(1, LevelKind::L1),
        ObjectType::L2Cache | ObjectType::L2ICache => cache(2, LevelKind::L2),
        ObjectType::L3Cache | ObjectType::L3ICache => cache(3, LevelKind::L3),
        ObjectType::L4Cache => cache(4, LevelKind::L4),
        ObjectType::L5Cache => cache(5, LevelKind::L5),
        ObjectType::Die => Some(("Die".into(), LevelKind::Die)),
        ObjectType::Package => Some(("Package".into(), LevelKind::Package)),
        ObjectType::Group => Some(("Group".into(), LevelKind::Group)),
        _ => None,
    }
}

/// The NUMA latency matrix. hwloc 2 names the firmware's `NUMALatency`; files converted from
/// hwloc 1.x carry several unnamed ones (user-supplied groupings next to the firmware's), and
/// the firmware's is the one in ACPI SLIT units, with 10 on the diagonal. So: the named
/// one, else one with a diagonal of 10, else the first; larger matrices win ties.
fn numa_distances(t: &HwlocTopology) -> Option<Distances> {
    let matrices = t.distances(None).ok()?;
    let mut best: Option<((bool, bool, usize), Distances)> = None;
    for m in matrices {
        if !m.kind().contains(DistancesKind::MEANS_LATENCY) {
            continue;
        }
        let mut nodes = Vec::with_capacity(m.num_objects());
        for obj in m.objects() {
            match obj {
                Some(o) if o.object_type() == ObjectType::NUMANode => match os_index(o) {
                    Some(i) => nodes.push(i),
                    None => break,
                },
                _ => break,
            }
        }
        let n = nodes.len();
        if n != m.num_objects() || n < 2 {
            continue;
        }
        let name = m.name().map(|n| n.to_string_lossy().into_owned());
        let values = m.distances().to_vec();
        let slit_diagonal = (0..n).all(|i| values.get(i * n + i) == Some(&10));
        let rank = (name.as_deref() == Some("NUMALatency"), slit_diagonal, n);
        if best.as_ref().is_none_or(|(r, _)| rank > *r) {
            best = Some((
                rank,
                Distances {
                    name: name.unwrap_or_else(|| "unnamed".into()),
                    nodes,
                    values,
                },
            ));
        }
    }
    best.map(|(_, d)| d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::path::Path;

    fn xml_file(content: &str) -> tempfile::NamedTempFile {
        let mut f = tempfile::Builder::new().suffix(".xml").tempfile().unwrap();
        f.write_all(content.as_bytes()).unwrap();
        f
    }

    fn load_xml(content: &str) -> Result<Topology, TopologyError> {
        let f = xml_file(content);
        load(&TopologySource::XmlFile(f.path().to_owned()))
    }

    #[test]
    fn synthetic_thesis_intel_machine() {
        let t = load(&TopologySource::Synthetic(
            "pack:4 numa:1 l3:1 core:12 pu:2".into(),
        ))
        .unwrap();
        assert_eq!(t.usable_pus.len(), 96);
        assert_eq!(t.numa_nodes.len(), 4);
        assert!(t.numa_nodes.iter().all(|n| n.cpus.len() == 24));
        let names: Vec<_> = t.levels.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(names, ["Package", "L3", "Core"]);
        assert!(t.distances.is_none());
    }

    #[test]
    fn missing_file_names_the_path() {
        let err = load(&TopologySource::XmlFile("/nonexistent/topo.xml".into())).unwrap_err();
        match err {
            TopologyError::Read { path, source } => {
                assert_eq!(path, Path::new("/nonexistent/topo.xml"));
                assert_eq!(source.kind(), std::io::ErrorKind::NotFound);
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn hwloc_3_format_is_refused_with_a_hint() {
        let err =
            load_xml(r#"<?xml version="1.0"?><topology version="3.0"></topology>"#).unwrap_err();
        assert!(
            matches!(&err, TopologyError::UnsupportedXmlVersion { version, .. } if version == "3.0"),
            "{err:?}"
        );
        assert!(err.to_string().contains("lstopo --of xml"));
    }

    #[test]
    fn malformed_xml_is_caught_before_hwloc() {
        let err = load_xml(r#"<topology version="2.0"><object"#).unwrap_err();
        assert!(matches!(err, TopologyError::MalformedXml { .. }), "{err:?}");
    }

    #[test]
    fn structures_that_crash_hwloc_are_refused() {
        // No nodeset on the Machine: hwloc 2.9 segfaults on this.
        let err = load_xml(
            r#"<topology version="2.0"><object type="Machine" os_index="0" cpuset="0x1"><object type="PU" os_index="0" cpuset="0x1"/></object></topology>"#,
        )
        .unwrap_err();
        assert!(matches!(err, TopologyError::NotATopology { .. }), "{err:?}");
        let err = load_xml(r#"<html></html>"#).unwrap_err();
        assert!(matches!(err, TopologyError::NotATopology { .. }), "{err:?}");
    }

    #[test]
    fn huge_negative_and_infinite_indexes_are_refused_before_hwloc() {
        let file = |pu_index: &str, pu_cpuset: &str| {
            format!(
                r#"<topology version="2.0"><object type="Machine" os_index="0" cpuset="0x1" complete_cpuset="0x1" allowed_cpuset="0x1" nodeset="0x1" complete_nodeset="0x1" allowed_nodeset="0x1"><object type="NUMANode" os_index="0" cpuset="0x1" complete_cpuset="0x1" nodeset="0x1" complete_nodeset="0x1" local_memory="1073741824"/><object type="PU" os_index="{pu_index}" cpuset="{pu_cpuset}" complete_cpuset="{pu_cpuset}" nodeset="0x1" complete_nodeset="0x1"/></object></topology>"#
            )
        };
        load_xml(&file("0", "0x1")).expect("the base file loads");
        let huge_set = format!("0x1{}", ",0x0".repeat(70_000));
        for (index, set, says) in [
            ("2147483648", "0x1", "os_index"),
            ("4294967295", "0x1", "os_index"),
            ("-1", "0x1", "os_index"),
            ("65536", "0x1", "os_index"),
            ("0", "0xf...f,0x1", "infinite"),
            ("0", huge_set.as_str(), "ids above"),
        ] {
            let err = load_xml(&file(index, set)).unwrap_err();
            assert!(
                matches!(&err, TopologyError::NotATopology { detail, .. } if detail.contains(says)),
                "{index}: {err}"
            );
        }
    }

    #[test]
    fn invalid_synthetic_string() {
        let err = load(&TopologySource::Synthetic("pack:2 gizmo:3".into())).unwrap_err();
        assert!(
            matches!(&err, TopologyError::InvalidSynthetic { description, .. } if description == "pack:2 gizmo:3"),
            "{err:?}"
        );
    }

    #[test]
    fn host_topology_loads() {
        let t = load(&TopologySource::Host).unwrap();
        assert!(!t.usable_pus.is_empty());
        assert!(!t.numa_nodes.is_empty());
        assert!(t.usable_pus.is_subset(&t.complete_pus));
    }
}
