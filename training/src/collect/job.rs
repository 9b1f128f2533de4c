//! What the collector runs: anything that starts in a cgroup and hands the observation
//! protocol a metric source. The training workloads are the real thing; `selftest` is a
//! tiny one that lets the collector be tested on its own.

use placed_host::observe::AnySource;

use crate::workloads::{Error, Launch, Running, Workload};

pub trait Job: std::fmt::Debug {
    fn name(&self) -> &str;
    fn family(&self) -> &str;
    fn unit(&self) -> &str;
    /// The shortest window that gives this workload a steady rate, if the protocol's may
    /// be too short.
    fn min_window(&self) -> Option<std::time::Duration> {
        None
    }
    fn start(&self, launch: &Launch<'_>) -> Result<Box<dyn Started>, Error>;
}

pub trait Started: std::fmt::Debug {
    fn source(&mut self) -> &mut AnySource;
    fn stop(self: Box<Self>) -> Result<(), Error>;
}

impl Job for Workload {
    fn name(&self) -> &str {
        &self.name
    }
    fn family(&self) -> &str {
        &self.family
    }
    fn unit(&self) -> &str {
        &self.unit
    }
    fn min_window(&self) -> Option<std::time::Duration> {
        self.min_window
    }
    fn start(&self, launch: &Launch<'_>) -> Result<Box<dyn Started>, Error> {
        Ok(Box::new(self.launch(launch)?))
    }
}

impl Started for Running {
    fn source(&mut self) -> &mut AnySource {
        Running::source(self)
    }
    fn stop(self: Box<Self>) -> Result<(), Error> {
        Running::stop(*self)
    }
}
