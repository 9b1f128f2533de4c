//! What the API asks about containers not started yet: where one should start (held for it
//! on request), several at once, the node's capacity, and the holds themselves.

use super::admission::{self, Admission, AdmitRequest, BatchMode};
use super::capacity::{self, Capacity};
use super::daemon::Daemon;
use super::error::DaemonError;
use crate::state::ReservationRecord;

impl Daemon {
    /// Where a new container should start; held for it when the request asks.
    pub async fn admit(&self, req: AdmitRequest) -> Result<Admission, DaemonError> {
        let admission = admission::admit(&self.core, &req)?;
        if admission.reservation.is_some() {
            self.core.persist().await?;
        }
        Ok(admission)
    }

    /// Where several new containers should start, packed together (the largest first);
    /// each answer in the order asked.
    pub async fn admit_batch(
        &self,
        requests: Vec<AdmitRequest>,
        mode: BatchMode,
    ) -> Result<Vec<Result<Admission, DaemonError>>, DaemonError> {
        let answers = admission::admit_batch(&self.core, &requests, mode);
        if answers
            .iter()
            .any(|a| a.as_ref().is_ok_and(|a| a.reservation.is_some()))
        {
            self.core.persist().await?;
        }
        Ok(answers)
    }

    /// Ends a hold before its time: its units are free again.
    pub async fn release(&self, id: &str) -> Result<ReservationRecord, DaemonError> {
        let r = self
            .core
            .reservations
            .take(id)
            .ok_or_else(|| DaemonError::UnknownReservation { id: id.to_owned() })?;
        super::expiry::release(&self.core, std::slice::from_ref(&r), "released").await;
        Ok(r)
    }

    /// The hold made for the runtime's container `runtime_id` (at NRI CreateContainer).
    pub fn reservation_for(&self, runtime_id: &str) -> Option<String> {
        self.core.reservations.for_container(runtime_id)
    }

    /// The holds in force.
    pub fn reservations(&self) -> Vec<ReservationRecord> {
        self.core.reservations.records()
    }

    /// Free, held and reserved units, and the placements of each of `sizes` that fit now.
    pub fn capacity(&self, sizes: &[usize]) -> Capacity {
        capacity::capacity(&self.core, sizes)
    }
}
