//! The checks hwloc skips on an XML file, done before hwloc reads it, each a one-line error
//! naming the file.

use std::path::Path;

use super::TopologyError;

/// Checks an XML file before hwloc sees it. hwloc 2.9 trusts the structure of its input:
/// an object without a `nodeset` attribute makes `hwloc_topology_load` dereference NULL
/// (seen here: SIGSEGV in `hwloc_bitmap_set`), and a v2 file without NUMA node makes it print
/// "aborting!" to stderr. So the checks hwloc skips are done here, where they can become a
/// one-line error naming the file.
pub(super) fn check_xml(path: &Path, text: &str) -> Result<(), TopologyError> {
    // hwloc writes a DOCTYPE line; roxmltree never fetches external entities, so allowing the
    // DTD is safe.
    let options = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..Default::default()
    };
    let doc = roxmltree::Document::parse_with_options(text, options).map_err(|e| {
        TopologyError::MalformedXml {
            path: path.to_owned(),
            // The parser quotes a mismatched tag name whole.
            detail: crate::text::clip(&e.to_string(), 200),
        }
    })?;
    let not_topology = |detail: String| TopologyError::NotATopology {
        path: path.to_owned(),
        detail,
    };
    let root = doc.root_element();
    if root.tag_name().name() != "topology" {
        return Err(not_topology(format!(
            "the root element is <{}>, not <topology>",
            crate::text::clip(root.tag_name().name(), 40)
        )));
    }
    // Format v1 files have no version attribute (and their DOCTYPE may still say hwloc2.dtd).
    let v2 = match root.attribute("version") {
        None => false,
        Some(v) if v.split('.').next() == Some("2") => true,
        Some(v) => {
            return Err(TopologyError::UnsupportedXmlVersion {
                path: path.to_owned(),
                version: crate::text::clip(v, 40),
                supported: "2.x (formats v1 and v2)",
            });
        }
    };
    let Some(top) = root.children().find(|n| n.has_tag_name("object")) else {
        return Err(not_topology("<topology> contains no <object>".into()));
    };
    match top.attribute("type") {
        Some("Machine") | Some("System") => {}
        other => {
            return Err(not_topology(format!(
                "the top object has type {:?}, not Machine",
                crate::text::clip(other.unwrap_or("(none)"), 40)
            )));
        }
    }
    for attr in [
        "cpuset",
        "complete_cpuset",
        "nodeset",
        "complete_nodeset",
        "allowed_cpuset",
        "allowed_nodeset",
    ] {
        if top.attribute(attr).is_none() {
            return Err(not_topology(format!(
                "the Machine object has no {attr} attribute"
            )));
        }
    }
    let numa = count_numa_checking_objects(&doc, top).map_err(&not_topology)?;
    if v2 && numa == 0 {
        return Err(not_topology("it has no NUMANode object".into()));
    }
    for m in doc
        .descendants()
        .filter(|n| n.has_tag_name("distances2") || n.has_tag_name("distances2hetero"))
    {
        let line = doc.text_pos_at(m.range().start).row;
        check_distances_kind(m.attribute("kind")).map_err(|why| {
            not_topology(format!(
                "the distance matrix at line {line} has kind {:?}: {why}",
                crate::text::clip(m.attribute("kind").unwrap_or(""), 40)
            ))
        })?;
    }
    Ok(())
}

/// Checks every object below the top one (its type, indexes and sets); returns how many
/// are NUMA nodes.
fn count_numa_checking_objects(
    doc: &roxmltree::Document,
    top: roxmltree::Node,
) -> Result<usize, String> {
    let mut numa = 0usize;
    for obj in top.descendants().filter(|n| n.has_tag_name("object")) {
        let line = doc.text_pos_at(obj.range().start).row;
        let Some(ty) = obj.attribute("type") else {
            return Err(format!("the <object> at line {line} has no type"));
        };
        // Every message below names the type; hwloc's are short, so only a bogus one is cut.
        let ty = crate::text::clip(ty, 40);
        let ty = ty.as_str();
        if ty == "NUMANode" {
            numa += 1;
        }
        check_indexes(&obj, ty, line)?;
        // hwloc 2.9 dereferences a missing complete set of an object that has the other
        // sets (lstopo dies of SIGSEGV on such a file too): every file hwloc writes has all
        // four or none.
        if let Some(has) = SETS.iter().find(|a| obj.attribute(**a).is_some()) {
            if let Some(missing) = SETS.iter().find(|a| obj.attribute(**a).is_none()) {
                return Err(format!(
                    "the {ty} object at line {line} has a {has} but no {missing}"
                ));
            }
        }
    }
    Ok(numa)
}

/// A distance matrix's `kind` as hwloc writes it: decimal, of the five flags of hwloc 2.9,
/// at most one of from-OS and from-user and one of latency and bandwidth. hwloc reads any
/// number and keeps it, and hwlocality then panics on reading an impossible kind.
fn check_distances_kind(kind: Option<&str>) -> Result<(), &'static str> {
    const FROM_OS: u32 = 1;
    const FROM_USER: u32 = 2;
    const LATENCY: u32 = 4;
    const BANDWIDTH: u32 = 8;
    const ALL: u32 = 31;
    let Some(kind) = kind else { return Ok(()) };
    let kind: u32 = kind
        .parse()
        .ok()
        .filter(|k| k & !ALL == 0)
        .ok_or("expected a decimal number of hwloc's distance flags (0 to 31)")?;
    let both = |a: u32, b: u32| kind & a != 0 && kind & b != 0;
    if both(FROM_OS, FROM_USER) {
        return Err("it says both from the OS and from the user");
    }
    if both(LATENCY, BANDWIDTH) {
        return Err("it says both latency and bandwidth");
    }
    Ok(())
}

/// The sets an object either has all of or none of.
const SETS: [&str; 4] = ["cpuset", "complete_cpuset", "nodeset", "complete_nodeset"];

/// The bitmap attributes of an object.
const BITMAPS: [&str; 6] = [
    "cpuset",
    "complete_cpuset",
    "allowed_cpuset",
    "nodeset",
    "complete_nodeset",
    "allowed_nodeset",
];

/// Indexes hwloc accepts but its bitmaps cannot be walked with: `hwloc_bitmap_next` returns
/// an `int`, so an `os_index` of 2^31 or more (or a negative one, which hwloc reads as
/// huge), or an infinite bitmap (`0xf...f,...`), made placectl panic while converting the
/// sets. Ids above [`crate::cpuset::MAX_ID`] are refused as everywhere else in placed.
fn check_indexes(obj: &roxmltree::Node, ty: &str, line: u32) -> Result<(), String> {
    let max = crate::cpuset::MAX_ID;
    // Only PUs and NUMA nodes are bits in the sets; a PCI device's os_index encodes its bus
    // address and is large on real machines.
    let in_sets = matches!(ty, "PU" | "NUMANode");
    if let Some(i) = obj.attribute("os_index").filter(|_| in_sets) {
        if !i.parse::<u32>().is_ok_and(|i| i <= max) {
            return Err(format!(
                "the {ty} object at line {line} has os_index {:?}: expected 0 to {max}",
                crate::text::clip(i, 40)
            ));
        }
    }
    // Each comma-separated word holds 32 bits.
    let max_words = usize::try_from(max / 32 + 1).unwrap_or(usize::MAX);
    for attr in BITMAPS {
        let Some(v) = obj.attribute(attr) else {
            continue;
        };
        if v.starts_with("0xf...f") {
            return Err(format!(
                "the {ty} object at line {line} has an infinite {attr}"
            ));
        }
        if !well_formed_bitmap(v) {
            return Err(format!(
                "the {ty} object at line {line} has a malformed {attr} {:?}: expected hwloc's 0x-prefixed hex words separated by commas",
                crate::text::clip(v, 40)
            ));
        }
        if v.split(',').count() > max_words {
            return Err(format!(
                "the {ty} object at line {line} has a {attr} with ids above {max}"
            ));
        }
    }
    Ok(())
}

/// hwloc's bitmap syntax as hwloc writes it: comma-separated words of `0x` and 1 to 8 hex
/// digits, an empty word standing for a zero one, the first word present. hwloc's own
/// parser (`hwloc_bitmap_sscanf`) asserts on a leading comma, which aborts the whole
/// process, and reads past the end of an empty value.
fn well_formed_bitmap(v: &str) -> bool {
    let word = |w: &str| {
        w.strip_prefix("0x")
            .is_some_and(|d| (1..=8).contains(&d.len()) && d.bytes().all(|b| b.is_ascii_hexdigit()))
    };
    let mut words = v.split(',');
    words.next().is_some_and(word) && words.all(|w| w.is_empty() || word(w))
}
