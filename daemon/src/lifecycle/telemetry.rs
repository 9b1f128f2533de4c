//! The telemetry room: what the daemon tells the outside as it works, the numbered events
//! `Watch` streams carry and the Prometheus metrics.

use std::sync::Arc;

use crate::state::Lifecycle;
use crate::telemetry::{Metrics, StateLabel};

use super::events::{Event, Events};

#[derive(Debug)]
pub(crate) struct Telemetry {
    pub events: Events,
    pub metrics: Arc<Metrics>,
}

impl Telemetry {
    pub fn new(events: Events, metrics: Arc<Metrics>) -> Self {
        Self { events, metrics }
    }

    pub fn send(&self, event: Event) {
        self.events.send(event);
    }

    /// Sets the per-state gauge from `counts` (every state, zeros included).
    pub fn set_counts(&self, counts: &[(Lifecycle, usize)]) {
        for (state, n) in counts {
            self.metrics
                .containers
                .get_or_create(&StateLabel {
                    state: state.name().into(),
                })
                .set(i64::try_from(*n).unwrap_or(i64::MAX));
        }
    }
}
