//! `placectl containers`: the containers the daemon manages, or with `--host` every
//! container of this host, found without the daemon.

use placed_host::enact::Host;
use placed_proto::v1 as pb;

use super::labels::SelectorArgs;
use super::{Action, Call, Client, Failure, Format, Local, Reply, Typed};
use crate::cli::{self, Exit, StatusError};

#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    #[arg(long, conflicts_with = "selector")]
    host: bool,
    #[command(flatten)]
    selector: SelectorArgs,
}

impl Typed for Args {
    fn validate(self) -> Result<Action, Failure> {
        if self.host {
            Action::local(OnHost)
        } else {
            Action::daemon(Managed {
                selector: self.selector.to_wire(),
            })
        }
    }
}

/// The daemon's list, of the containers whose labels match `selector`.
#[derive(Debug)]
struct Managed {
    selector: String,
}

impl Call for Managed {
    fn call<'a>(&'a self, c: &'a mut Client, format: Format) -> Reply<'a> {
        Box::pin(async move {
            let containers = all_containers(c, &self.selector).await?;
            format.print(
                || cli::daemon::containers_json(&containers),
                || cli::daemon::render_containers(&containers),
            )
        })
    }
}

/// Every managed container, page after page.
async fn all_containers(c: &mut Client, selector: &str) -> Result<Vec<pb::Container>, Failure> {
    let mut containers = Vec::new();
    let mut page_token = String::new();
    loop {
        let r = c
            .list_containers(pb::ListContainersRequest {
                page_size: 0,
                page_token,
                label_selector: selector.to_owned(),
            })
            .await
            .map_err(StatusError)?
            .into_inner();
        containers.extend(r.containers);
        if r.next_page_token.is_empty() {
            return Ok(containers);
        }
        page_token = r.next_page_token;
    }
}

/// This host's containers, as the host shows them.
#[derive(Debug)]
struct OnHost;

impl Local for OnHost {
    fn run(self: Box<Self>, format: Format) -> Result<Exit, Failure> {
        let list = Host::detect()?.list()?;
        format.print(
            || cli::containers_json(&list),
            || cli::render_containers(&list),
        )
    }
}
