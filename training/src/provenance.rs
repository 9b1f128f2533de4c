//! Whether this process runs on real hardware or in a virtual machine, as the provenance
//! training data carries ([`placed_host::virt`] looks).

use placed_models::Provenance;

/// What the checks found, so the collector can say why it labelled the data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Detection {
    pub provenance: Provenance,
    /// The first evidence of a hypervisor, or why the host counts as real hardware.
    pub evidence: String,
}

/// This host's provenance: [`placed_host::virt::detect`].
pub fn detect() -> Detection {
    let found = placed_host::virt::detect();
    Detection {
        provenance: if found.virtual_machine {
            Provenance::VirtualMachine
        } else {
            Provenance::Real
        },
        evidence: found.evidence,
    }
}
