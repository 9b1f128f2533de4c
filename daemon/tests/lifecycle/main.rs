//! The container lifecycle in-process on a fake host, as an ordinary user: the daemon's
//! library started on placed-host's fake kernel (a cgroup tree, `/proc` and `/sys` in a
//! temporary directory) with a synthetic machine, pushed metrics and tokio's paused clock.
//! Each module is one behaviour, most of them a table of cases; `scenario` builds them.
//!
//! Nothing here touches a real cgroup or process: the fake's pids are above the kernel's
//! `PID_MAX_LIMIT`. The end-to-end tests (tests/e2e, root) cover the same lifecycle on real
//! cgroups with real workloads.

mod scenario;

mod admission;
mod adopt;
mod backoff;
mod busy;
mod classes;
mod drift;
mod layout;
mod live;
mod metric;
mod nri;
mod production;
mod reconcile;
mod settings;
mod sharing;
mod sizes;
mod third;
mod unmanage;
mod vanish;
