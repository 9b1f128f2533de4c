//! Whether this process runs on real hardware or in a virtual machine: training data and
//! the daemon's production data say so, because timings in a guest say nothing about the
//! host class (docs/design.md, "What runs where").

use std::path::Path;
use std::process::Command;

/// DMI vendors that mean a hypervisor, matched case-insensitively as prefixes.
const VM_VENDORS: &[&str] = &[
    "qemu",
    "kvm",
    "vmware",
    "microsoft corporation",
    "xen",
    "innotek",
    "oracle corporation",
    "amazon ec2",
    "google",
    "bochs",
    "parallels",
    "openstack",
    "digitalocean",
    "hetzner",
];

/// What the checks found, so that whoever labels data can say why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Detection {
    /// Whether a hypervisor was found.
    pub virtual_machine: bool,
    /// The first evidence of a hypervisor, or why the host counts as real hardware.
    pub evidence: String,
}

/// Looks at `/proc/cpuinfo`, `/sys/class/dmi/id/sys_vendor` and `systemd-detect-virt`.
/// Any one of them finding a hypervisor is enough: a guest may hide some of the others.
pub fn detect() -> Detection {
    detect_with(
        Path::new("/proc/cpuinfo"),
        Path::new("/sys/class/dmi/id/sys_vendor"),
        true,
    )
}

/// The same on other files (tests); `run_systemd` says whether to ask `systemd-detect-virt`.
pub fn detect_with(cpuinfo: &Path, sys_vendor: &Path, run_systemd: bool) -> Detection {
    let vm = |evidence: String| Detection {
        virtual_machine: true,
        evidence,
    };
    if let Ok(text) = std::fs::read_to_string(cpuinfo) {
        if cpuinfo_has_hypervisor_flag(&text) {
            return vm(format!("the hypervisor flag in {}", cpuinfo.display()));
        }
    }
    if let Ok(vendor) = std::fs::read_to_string(sys_vendor) {
        let vendor = vendor.trim().to_lowercase();
        if VM_VENDORS.iter().any(|v| vendor.starts_with(v)) {
            return vm(format!(
                "system vendor {vendor:?} in {}",
                sys_vendor.display()
            ));
        }
    }
    if run_systemd {
        // Absent on minimal hosts; its failure is not evidence either way.
        // `--vm`: a container on real hardware (docker, lxc) is not a virtual machine.
        if let Ok(out) = Command::new("systemd-detect-virt").arg("--vm").output() {
            let what = String::from_utf8_lossy(&out.stdout).trim().to_owned();
            if out.status.success() && !what.is_empty() && what != "none" {
                return vm(format!("systemd-detect-virt says {what}"));
            }
        }
    }
    Detection {
        virtual_machine: false,
        evidence: "no hypervisor flag, vendor or systemd-detect-virt finding".into(),
    }
}

fn cpuinfo_has_hypervisor_flag(text: &str) -> bool {
    text.lines()
        .filter(|l| l.starts_with("flags"))
        .filter_map(|l| l.split_once(':'))
        .any(|(_, flags)| flags.split_whitespace().any(|f| f == "hypervisor"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cpuinfo_flag_or_the_vendor_means_a_vm() {
        let dir = tempfile::tempdir().unwrap();
        let cpuinfo = dir.path().join("cpuinfo");
        let vendor = dir.path().join("sys_vendor");
        std::fs::write(&cpuinfo, "flags\t\t: fpu vme hypervisor lahf_lm\n").unwrap();
        std::fs::write(&vendor, "Dell Inc.\n").unwrap();
        let d = detect_with(&cpuinfo, &vendor, false);
        assert!(d.virtual_machine);

        std::fs::write(&cpuinfo, "flags\t\t: fpu vme lahf_lm\n").unwrap();
        assert!(!detect_with(&cpuinfo, &vendor, false).virtual_machine);

        std::fs::write(&vendor, "QEMU\n").unwrap();
        let d = detect_with(&cpuinfo, &vendor, false);
        assert!(d.virtual_machine);
        assert!(d.evidence.contains("qemu"), "{}", d.evidence);
    }
}
