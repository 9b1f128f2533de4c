//! How a simulated workload's performance depends on the resources of a placement, in the
//! ways thesis §2.4 describes real ones doing: steps and piecewise shapes, SMT-preferring
//! and SMT-hating, working sets that fit in the L3 caches of some node counts,
//! latency-bound workloads preferring one node, bandwidth-bound ones preferring many.
//!
//! A workload is a handful of hidden traits; performance is a product of one factor per
//! effect. Nothing here claims to model real hardware: it makes data with the shapes the
//! models must learn, and every record made from it is marked simulated.

use rand::Rng;

use super::machine::SimPlacement;

/// The archetypes families are drawn from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Archetype {
    /// Compute-bound: placement barely matters.
    Compute,
    /// Suffers when vCPUs share a core (contended pipelines, private caches).
    SmtHating,
    /// Gains from sharing a core (cooperative cache sharing).
    SmtPreferring,
    /// Memory-bandwidth-bound: faster on more nodes until demand is met, then flat.
    Bandwidth,
    /// Communication-latency-bound: fastest on one node, slower across nodes and packages.
    Latency,
    /// Working set fits in the L3 caches of enough nodes: a step up at that count.
    CacheFit,
    /// Bandwidth-bound and SMT-hating.
    BandwidthSmtHating,
    /// Latency-bound but with a working set that fits in more caches: piecewise.
    LatencyCache,
}

impl Archetype {
    pub(crate) const ALL: [Self; 8] = [
        Self::Compute,
        Self::SmtHating,
        Self::SmtPreferring,
        Self::Bandwidth,
        Self::Latency,
        Self::CacheFit,
        Self::BandwidthSmtHating,
        Self::LatencyCache,
    ];

    /// Short name used in family and workload names.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Compute => "compute",
            Self::SmtHating => "smt-hating",
            Self::SmtPreferring => "smt-preferring",
            Self::Bandwidth => "bandwidth",
            Self::Latency => "latency",
            Self::CacheFit => "cache-fit",
            Self::BandwidthSmtHating => "bandwidth-smt-hating",
            Self::LatencyCache => "latency-cache",
        }
    }
}

/// Hidden traits of one workload.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Traits {
    /// Relative speed change when the finest shared level is fully shared (-0.45..0.25).
    smt: f64,
    /// Fraction of time stalled on memory when bandwidth is plentiful (0..0.9).
    memory: f64,
    /// Bandwidth demand, in nodes' worth.
    demand: f64,
    /// Slowdown per unit of remote fraction `1 - 1/nodes`.
    latency: f64,
    /// Slowdown per unit of cross-package fraction `1 - 1/packages`.
    package: f64,
    /// L3 caches the working set needs (infinite: never fits).
    working_set: f64,
    /// Speed-up once it fits.
    cache_gain: f64,
    /// How much a poorer interconnect lowers usable bandwidth and raises latency.
    interconnect: f64,
    /// Instructions per cycle when nothing stalls: differs between workloads, so counters
    /// in one placement say little about relative performance in another.
    base_ipc: f64,
}

/// The span of resources on the machine, so traits land where placements differ.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Span {
    max_nodes: f64,
    min_l3: f64,
    max_l3: f64,
}

impl Span {
    pub(crate) fn of(placements: &[SimPlacement]) -> Self {
        let fold = |f: fn(&SimPlacement) -> f64, init: f64, pick: fn(f64, f64) -> f64| {
            placements.iter().map(f).fold(init, pick)
        };
        Self {
            max_nodes: fold(|p| p.nodes, 1.0, f64::max),
            min_l3: fold(|p| p.l3, f64::INFINITY, f64::min),
            max_l3: fold(|p| p.l3, 1.0, f64::max),
        }
    }
}

fn between<R: Rng>(rng: &mut R, low: f64, high: f64) -> f64 {
    low + (high - low) * rng.r#gen::<f64>()
}

impl Traits {
    /// A family's traits. Each archetype has one intensity, drawn per family, that sets its
    /// main effect; its other traits vary by `variation` around fixed values. The thesis
    /// found real workloads falling into a few categories of similar vectors (§2.4.1);
    /// independent random traits would make vectors no two observations could pin down.
    pub(crate) fn family<R: Rng>(
        archetype: Archetype,
        span: Span,
        variation: f64,
        rng: &mut R,
    ) -> Self {
        let s = rng.r#gen::<f64>();
        let mut vary = |v: f64| v * (1.0 + between(rng, -variation, variation));
        let mut t = Self {
            smt: vary(-0.05),
            memory: vary(0.05),
            demand: 1.0,
            latency: vary(0.02),
            package: 0.0,
            working_set: f64::INFINITY,
            cache_gain: 0.0,
            interconnect: vary(0.1),
            base_ipc: 0.0,
        };
        // Spreading over more nodes helps until demand is met, so demand is above one node.
        let demand = (span.max_nodes * (0.5 + 0.5 * s)).max(1.5);
        // Between the smallest and the largest L3 total, so it fits in some placements only.
        let working_set = if span.max_l3 > span.min_l3 {
            span.min_l3 + 0.5 + (span.max_l3 - span.min_l3 - 0.5) * s
        } else {
            span.max_l3
        };
        match archetype {
            Archetype::Compute => t.smt = -0.03 - 0.07 * s,
            Archetype::SmtHating => t.smt = -(0.2 + 0.25 * s),
            Archetype::SmtPreferring => t.smt = 0.08 + 0.17 * s,
            Archetype::Bandwidth => {
                t.memory = 0.5 + 0.35 * s;
                t.demand = demand;
                t.interconnect = vary(0.3);
            }
            Archetype::Latency => {
                t.latency = 0.25 + 0.5 * s;
                t.package = vary(0.1) + 0.2 * s;
                t.interconnect = vary(0.3);
            }
            Archetype::CacheFit => {
                t.memory = vary(0.3);
                t.demand = 2.0;
                t.working_set = working_set;
                t.cache_gain = vary(0.5);
            }
            Archetype::BandwidthSmtHating => {
                t.memory = 0.4 + 0.3 * s;
                t.demand = demand;
                t.smt = -(0.2 + 0.15 * s);
            }
            Archetype::LatencyCache => {
                t.latency = vary(0.3);
                t.working_set = working_set;
                t.cache_gain = 0.3 + 0.3 * s;
            }
        }
        t.base_ipc = between(rng, 0.8, 2.5);
        t
    }

    /// A workload of the family: every trait moved by up to `spread` of itself, so siblings
    /// behave alike but not identically.
    pub(crate) fn sibling<R: Rng>(&self, spread: f64, rng: &mut R) -> Self {
        let mut jitter = |v: f64| v * (1.0 + between(rng, -spread, spread));
        Self {
            smt: jitter(self.smt),
            memory: jitter(self.memory).min(0.95),
            demand: jitter(self.demand),
            latency: jitter(self.latency),
            package: jitter(self.package),
            working_set: jitter(self.working_set),
            cache_gain: jitter(self.cache_gain),
            interconnect: jitter(self.interconnect).min(0.9),
            base_ipc: jitter(self.base_ipc),
        }
    }

    /// Memory-stall fraction once the working set's fit is known.
    fn effective_memory(&self, fits: bool) -> f64 {
        if fits { self.memory * 0.3 } else { self.memory }
    }

    /// Noise-free performance in `p`, in arbitrary units (only ratios matter).
    pub(crate) fn performance(&self, p: &SimPlacement, max_share: f64) -> f64 {
        let shared = if max_share > 1.0 {
            (p.share - 1.0) / (max_share - 1.0)
        } else {
            0.0
        };
        let smt = 1.0 + self.smt * shared;
        let fits = p.l3 >= self.working_set;
        let cache = if fits { 1.0 + self.cache_gain } else { 1.0 };
        let poorer_links = 1.0 - p.interconnect;
        let usable_bandwidth = p.nodes * (1.0 - self.interconnect * poorer_links);
        let memory = self.effective_memory(fits);
        let bandwidth = 1.0 - memory + memory * (self.demand / usable_bandwidth).max(1.0);
        let latency = 1.0
            + self.latency * (1.0 - 1.0 / p.nodes) * (1.0 + self.interconnect * poorer_links)
            + self.package * (1.0 - 1.0 / p.packages);
        smt * cache / (bandwidth * latency)
    }

    /// Generic counters in `p`: what a PMU would show. IPC follows performance scaled by a
    /// per-workload constant; cache misses and memory stalls reveal memory intensity but
    /// not latency sensitivity or where the working set would fit.
    pub(crate) fn counters(&self, p: &SimPlacement, relative: f64) -> [(&'static str, f64); 3] {
        let fits = p.l3 >= self.working_set;
        let memory = self.effective_memory(fits);
        [
            ("ipc", self.base_ipc * relative),
            ("llc_misses_per_kilo_instruction", 30.0 * memory),
            ("memory_stall_fraction", memory),
        ]
    }
}
