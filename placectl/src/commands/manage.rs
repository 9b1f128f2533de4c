//! `placectl manage`: a container handed to the daemon, or how it manages it changed.

use placed_core::reconcile::OnOverride;
use placed_proto::v1 as pb;

use super::labels::LabelArgs;
use super::policy::PolicyArgs;
use super::{Action, Call, Client, Failure, Format, Reply, Typed};
use crate::cli::{self, StatusError};

#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    container: String,
    /// vCPUs; default: from the container's CPU quota, else its cpuset.
    #[arg(long)]
    vcpus: Option<u32>,
    #[command(flatten)]
    policy: PolicyArgs,
    /// How to observe it: `pushed`, `perf`, `ipc`, `prometheus URL SELECTOR` (the
    /// selector verbatim, spaces and quotes included), `command PROGRAM ARGS...`
    /// (split as a shell splits words: `command sh -c 'echo 42'`), or `pattern REGEX
    /// [--mode rate|total|increment] [--stream stdout|stderr|both] -- PROGRAM ARGS...`
    /// or `pattern REGEX [--mode ...] --file PATH` (the regex first, one word; its first
    /// group is the number).
    #[arg(long, value_name = "SPEC")]
    metric: Option<String>,
    /// What the daemon does when something else (systemd, the kubelet, docker update)
    /// changes the container's cpuset: write its placement back, adopt the new cpuset
    /// and stop moving it, or only report it. Default: the daemon's policy.on_override.
    #[arg(long, value_name = "WHAT", value_parser = ["reassert", "adopt", "leave"])]
    on_override: Option<String>,
    #[command(flatten)]
    labels: LabelArgs,
    /// Claim a reservation (placectl admit --reserve): the container starts on the reserved
    /// units, with the reservation's vCPUs, policy and labels unless given here.
    #[arg(long, value_name = "ID")]
    reservation: Option<String>,
    /// Answer the container as it would be, changing nothing.
    #[arg(long)]
    dry_run: bool,
}

impl Typed for Args {
    fn validate(self) -> Result<Action, Failure> {
        let policy = self.policy.to_pb()?;
        let metric = self.metric.map(|m| crate::metric::parse(&m)).transpose()?;
        let on_override = self
            .on_override
            .map(|o| o.parse::<OnOverride>())
            .transpose()?
            .map_or(
                pb::OnOverride::Unspecified,
                placed_proto::convert::on_override_to_pb,
            );
        Action::daemon(pb::ManageRequest {
            container: self.container,
            vcpus: self.vcpus.unwrap_or(0),
            policy,
            metric,
            on_override: on_override as i32,
            labels: self.labels.to_map()?,
            reservation: self.reservation.unwrap_or_default(),
            dry_run: self.dry_run,
        })
    }
}

impl Call for pb::ManageRequest {
    fn call<'a>(&'a self, c: &'a mut Client, format: Format) -> Reply<'a> {
        Box::pin(async move {
            let r = c
                .manage(self.clone())
                .await
                .map_err(StatusError)?
                .into_inner()
                .container
                .ok_or("the daemon answered Manage without the container")?;
            let dry_run = self.dry_run;
            format.print(
                || {
                    let mut j = cli::daemon::container_json(&r);
                    j["dry_run"] = dry_run.into();
                    j
                },
                || {
                    let table = cli::daemon::render_containers(std::slice::from_ref(&r));
                    if dry_run {
                        format!("{table}dry run: nothing was changed\n")
                    } else {
                        table
                    }
                },
            )
        })
    }

    fn waits_when_busy(&self) -> bool {
        true
    }
}
