//! The runtime's lifecycle events and the mask a plugin subscribes with.
//!
//! In the protocol an event is a number from 1 to 11, and the mask a plugin returns from
//! Configure has bit `n - 1` set for each event `n` it wants. A mask of 0 does not mean
//! "nothing": the runtime reads it as "every event", so [`EventMask`] refuses to be sent
//! empty ([`EventMask::wire`]).

use std::fmt;

use crate::objects::{Container, Pod};

/// A pod or container lifecycle event, numbered as in the protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Event {
    RunPodSandbox = 1,
    StopPodSandbox = 2,
    RemovePodSandbox = 3,
    CreateContainer = 4,
    PostCreateContainer = 5,
    StartContainer = 6,
    PostStartContainer = 7,
    UpdateContainer = 8,
    PostUpdateContainer = 9,
    StopContainer = 10,
    RemoveContainer = 11,
}

impl Event {
    pub const ALL: [Event; 11] = [
        Self::RunPodSandbox,
        Self::StopPodSandbox,
        Self::RemovePodSandbox,
        Self::CreateContainer,
        Self::PostCreateContainer,
        Self::StartContainer,
        Self::PostStartContainer,
        Self::UpdateContainer,
        Self::PostUpdateContainer,
        Self::StopContainer,
        Self::RemoveContainer,
    ];

    /// The protocol's number.
    pub fn number(self) -> i32 {
        self as i32
    }

    pub fn from_number(n: i32) -> Option<Self> {
        Self::ALL.into_iter().find(|e| e.number() == n)
    }

    /// Its bit in a mask.
    pub const fn bit(self) -> i32 {
        1 << (self as i32 - 1)
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::RunPodSandbox => "RunPodSandbox",
            Self::StopPodSandbox => "StopPodSandbox",
            Self::RemovePodSandbox => "RemovePodSandbox",
            Self::CreateContainer => "CreateContainer",
            Self::PostCreateContainer => "PostCreateContainer",
            Self::StartContainer => "StartContainer",
            Self::PostStartContainer => "PostStartContainer",
            Self::UpdateContainer => "UpdateContainer",
            Self::PostUpdateContainer => "PostUpdateContainer",
            Self::StopContainer => "StopContainer",
            Self::RemoveContainer => "RemoveContainer",
        }
    }
}

impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A set of events.
#[derive(Clone, Copy, PartialEq, Eq, Default)]
pub struct EventMask(i32);

/// A mask of no events, which the protocol cannot express (0 means every event).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("an empty event mask would subscribe to every event (the protocol reads 0 as all)")]
pub struct EmptyMask;

impl EventMask {
    pub const EMPTY: Self = Self(0);

    /// What placed subscribes to: container creation (the initial placement), updates
    /// (the hold), stops (units freed early), and as state changes the start (the
    /// container runs: its pid is known), its removal and the pod's removal (units freed
    /// for good).
    pub const PLACED: Self = Self::EMPTY
        .with(Event::CreateContainer)
        .with(Event::PostStartContainer)
        .with(Event::UpdateContainer)
        .with(Event::StopContainer)
        .with(Event::RemoveContainer)
        .with(Event::RemovePodSandbox);

    pub const fn with(self, e: Event) -> Self {
        Self(self.0 | e.bit())
    }

    pub fn contains(self, e: Event) -> bool {
        self.0 & e.bit() != 0
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    pub fn iter(self) -> impl Iterator<Item = Event> {
        Event::ALL.into_iter().filter(move |e| self.contains(*e))
    }

    /// The mask as Configure answers it.
    pub fn wire(self) -> Result<i32, EmptyMask> {
        if self.is_empty() {
            Err(EmptyMask)
        } else {
            Ok(self.0)
        }
    }
}

impl FromIterator<Event> for EventMask {
    fn from_iter<I: IntoIterator<Item = Event>>(iter: I) -> Self {
        iter.into_iter().fold(Self::EMPTY, Self::with)
    }
}

impl fmt::Debug for EventMask {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.iter().map(Event::name)).finish()
    }
}

impl fmt::Display for EventMask {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<_> = self.iter().map(Event::name).collect();
        f.write_str(&names.join(","))
    }
}

/// An event that needs no answer but "seen" (every event but create, update and stop in
/// NRI v0.6), with what it concerns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateChange {
    pub event: Event,
    pub pod: Pod,
    /// `None` for pod events.
    pub container: Option<Container>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_are_the_event_number_minus_one() {
        assert_eq!(Event::RunPodSandbox.bit(), 1);
        assert_eq!(Event::CreateContainer.bit(), 1 << 3);
        assert_eq!(Event::RemoveContainer.bit(), 1 << 10);
        for e in Event::ALL {
            assert_eq!(Event::from_number(e.number()), Some(e));
        }
        assert_eq!(Event::from_number(0), None);
        assert_eq!(Event::from_number(12), None);
    }

    #[test]
    fn placed_subscribes_to_what_it_acts_on_only() {
        let m = EventMask::PLACED;
        // CreateContainer 4, PostStartContainer 7, UpdateContainer 8, StopContainer 10,
        // RemoveContainer 11, RemovePodSandbox 3.
        assert_eq!(
            m.wire(),
            Ok((1 << 3) | (1 << 6) | (1 << 7) | (1 << 9) | (1 << 10) | (1 << 2))
        );
        assert!(!m.contains(Event::RunPodSandbox));
        assert!(!m.contains(Event::PostUpdateContainer));
        assert_eq!(
            m.to_string(),
            "RemovePodSandbox,CreateContainer,PostStartContainer,UpdateContainer,StopContainer,RemoveContainer"
        );
        // Every bit is one of the protocol's events: the runtime refuses others.
        assert_eq!(m.wire().unwrap() & !((1 << 11) - 1), 0);
    }

    #[test]
    fn an_empty_mask_is_never_sent() {
        assert_eq!(EventMask::EMPTY.wire(), Err(EmptyMask));
        let m: EventMask = [Event::StopContainer].into_iter().collect();
        assert_eq!(m.wire(), Ok(1 << 9));
    }
}
