//! Placement before a container exists, through placectl against the real daemon on this
//! host: admit, with and without a hold, the holds listed and released, capacity, a claim
//! by `manage --reservation`, labels and their selectors, and dry runs that change nothing.
//! This VM has one allocation unit: a hold takes all of it.

use placed_core::exit::Exit;

use crate::cgroup_support::TestCgroup;
use crate::daemon_util::{Setup, TestDaemon};

fn find(j: &serde_json::Value, name: &str) -> serde_json::Value {
    j["containers"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["name"] == name).cloned())
        .unwrap_or_default()
}

fn reservation_ids(d: &TestDaemon) -> Vec<String> {
    let list = d.placectl(["reservations", "--json"]).ok().json();
    assert_eq!(list["schema"], "placed.reservations/v1", "{list}");
    list["reservations"]
        .as_array()
        .expect("reservations")
        .iter()
        .map(|r| r["id"].as_str().expect("an id").to_owned())
        .collect()
}

#[test]
fn placectl_admits_reserves_claims_and_releases() {
    let host = match crate::cgroup_support::host() {
        Ok(h) => h,
        Err(why) => {
            eprintln!("skipped, because {why}");
            return;
        }
    };
    let cpus = host.online_cpus().expect("online CPUs");
    let mems = host.memory_nodes().expect("memory nodes");
    let cg: TestCgroup = TestCgroup::new(&host, &cpus, &mems);
    cg.child("c1", &cpus, &mems);
    let dir = tempfile::tempdir().unwrap();
    let d = TestDaemon::start(dir.path(), &Setup::watching(&cg.path));
    d.wait_for("c1 watched", |j| find(j, "c1")["state"] == "watched");
    let policy = ["--policy", "smart-aggressive"];

    // Advice only: nothing held.
    let advice = d
        .placectl(
            ["admit", "--vcpus", "1", "--name", "job"]
                .into_iter()
                .chain(policy)
                .chain(["--json"]),
        )
        .ok()
        .json();
    assert_eq!(advice["schema"], "placed.admission/v1", "{advice}");
    assert_eq!(advice["name"], "job");
    assert_eq!(advice["units"], serde_json::json!([0]), "{advice}");
    assert_eq!(advice["prior"]["kind"], "nothing", "{advice}");
    assert!(advice["reservation"].is_null(), "{advice}");
    assert!(reservation_ids(&d).is_empty());
    let text = d
        .placectl(["admit", "--vcpus", "1"].into_iter().chain(policy))
        .ok()
        .stdout;
    assert!(
        text.contains("no prediction: it rests on nothing"),
        "{text}"
    );
    assert!(text.contains("nothing is held"), "{text}");

    // A hold: listed, shown in capacity, and the only unit is gone for the next one.
    let held = d
        .placectl(
            [
                "admit",
                "--vcpus",
                "1",
                "--reserve",
                "--ttl",
                "10m",
                "--label",
                "team=db",
            ]
            .into_iter()
            .chain(policy)
            .chain(["--json"]),
        )
        .ok()
        .json();
    let id = held["reservation"]["id"]
        .as_str()
        .expect("a reservation id")
        .to_owned();
    assert_eq!(held["reservation"]["labels"]["team"], "db", "{held}");
    assert_eq!(reservation_ids(&d), vec![id.clone()]);
    let capacity = d.placectl(["capacity", "--json"]).ok().json();
    assert_eq!(capacity["schema"], "placed.capacity/v1", "{capacity}");
    assert_eq!(
        capacity["units"][0]["reserved_by"],
        id.as_str(),
        "{capacity}"
    );
    assert_eq!(capacity["nodes"][0]["free_pus"], 0, "{capacity}");
    assert!(
        capacity["fits"][0]["placements"]
            .as_array()
            .is_some_and(Vec::is_empty),
        "nothing fits while the only unit is held: {capacity}"
    );
    let table = d.placectl(["capacity"]).ok().stdout;
    assert!(table.contains(&id), "{table}");
    let second = d.placectl(
        ["admit", "--vcpus", "1", "--reserve"]
            .into_iter()
            .chain(policy),
    );
    assert_ne!(
        second.code,
        Some(0),
        "a second hold of the only unit: {second:?}"
    );

    // A dry run of the claim changes nothing; the claim takes the hold's labels and units.
    let dry = d
        .placectl([
            "manage",
            "c1",
            "--reservation",
            &id,
            "--label",
            "tier=1",
            "--dry-run",
            "--json",
        ])
        .ok()
        .json();
    assert_eq!(dry["dry_run"], true, "{dry}");
    assert_eq!(reservation_ids(&d), vec![id.clone()]);
    d.placectl(["containers", "--selector", "team=db", "--json"])
        .ok()
        .json()["containers"]
        .as_array()
        .filter(|c| c.is_empty())
        .expect("no container has the label before the claim");
    let claimed = d
        .placectl([
            "manage",
            "c1",
            "--reservation",
            &id,
            "--label",
            "tier=1",
            "--json",
        ])
        .ok()
        .json();
    assert_eq!(claimed["labels"]["team"], "db", "{claimed}");
    assert_eq!(claimed["labels"]["tier"], "1", "{claimed}");
    assert!(reservation_ids(&d).is_empty(), "the claim ends the hold");
    d.wait_for("c1 on the reserved unit", |j| {
        find(j, "c1")["units"] == serde_json::json!([0])
    });
    let selected = d
        .placectl(["containers", "--selector", "team=db,tier", "--json"])
        .ok()
        .json();
    assert_eq!(selected["containers"][0]["name"], "c1", "{selected}");
    let other = d
        .placectl(["containers", "--selector", "team=web", "--json"])
        .ok()
        .json();
    assert_eq!(other["containers"], serde_json::json!([]), "{other}");

    // A place dry run moves nothing and says so.
    let place = d
        .placectl(["place", "c1", "--dry-run", "--json"])
        .ok()
        .json();
    assert_eq!(
        (place["dry_run"].clone(), place["moved"].clone()),
        (true.into(), false.into()),
        "{place}"
    );

    // The unit is back once c1 is handed back; a hold released is free again, and
    // releasing it twice is NOT_FOUND.
    d.placectl(["unmanage", "c1"]).ok();
    let held = d
        .placectl(
            ["admit", "--vcpus", "1", "--reserve", "--json"]
                .into_iter()
                .chain(policy),
        )
        .ok()
        .json();
    let id = held["reservation"]["id"]
        .as_str()
        .expect("an id")
        .to_owned();
    let released = d.placectl(["release", &id, "--json"]).ok().json();
    assert_eq!(released["reservation"]["id"], id.as_str(), "{released}");
    assert!(reservation_ids(&d).is_empty());
    d.placectl(["release", &id]).fails_with(Exit::NotFound, &id);
    d.placectl(["admit", "--vcpus", "0"])
        .fails_with(Exit::BadInput, "--vcpus must be at least 1");
    d.placectl(["manage", "c1", "--label", "nokey"])
        .fails_with(Exit::BadInput, "expected KEY=VALUE");
}
