#!/usr/bin/env python3
"""An orchestrator's session with placed through Python grpcio (gRPC C-core), unmodified:
no channel option, no authority override. Run by tests/e2e/python.rs against the real
daemon, in two phases around a restart; prints what it does, exits non-zero on the first
check that fails.

    session.py phase1 SOCKET WORKDIR
    session.py phase2 SOCKET WORKDIR
"""
import json
import os
import sys
import threading

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from placed.v1 import placed_pb2 as pb
from placed.v1 import placed_pb2_grpc

SERVICE = "placed.v1.PlacedService"
# Bounds so that a broken daemon fails the test instead of hanging it; nothing waits on them.
PATIENCE = 60


def say(*words):
    print(*words, flush=True)


def check(cond, what):
    if not cond:
        raise SystemExit(f"FAILED: {what}")
    say("  ok:", what)


def expect_error(code, call, what, needle=None):
    try:
        call()
    except grpc.RpcError as e:
        say(f"  {what}: {e.code().name}: {e.details()}")
        check(e.code() == code, f"{what} is {code.name}")
        if needle is not None:
            check(needle in e.details(), f"{what} says {needle!r}")
        return
    raise SystemExit(f"FAILED: {what} succeeded")


def first_event(stream):
    """The first message of a stream; errors as the stream reports them."""
    return next(iter(stream))


class Watcher:
    """A Watch stream read in the background, events collected in order."""

    def __init__(self, stub, resume, container=""):
        self.call = stub.Watch(pb.WatchRequest(container=container, resume_after_sequence=resume))
        self.events = []
        self.cond = threading.Condition()
        self.error = None
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        try:
            for e in self.call:
                with self.cond:
                    self.events.append(e)
                    self.cond.notify_all()
        except grpc.RpcError as e:
            with self.cond:
                self.error = e
                self.cond.notify_all()

    def wait_for(self, what, pick):
        with self.cond:
            ok = self.cond.wait_for(
                lambda: self.error is not None or any(pick(e) for e in self.events), PATIENCE
            )
        if self.error is not None and self.error.code() != grpc.StatusCode.CANCELLED:
            raise SystemExit(f"FAILED: watch ended while waiting for {what}: {self.error}")
        check(ok, f"event: {what}")
        return [e for e in self.events if pick(e)][0]

    def stop(self):
        self.call.cancel()


def reflection_listing(channel, version):
    """ListServices through reflection `version`; v1 and v1alpha messages are identical on
    the wire, so the v1alpha stubs grpcio-reflection ships serve for both."""
    method = f"/grpc.reflection.{version}.ServerReflection/ServerReflectionInfo"
    call = channel.stream_stream(
        method,
        request_serializer=reflection_pb2.ServerReflectionRequest.SerializeToString,
        response_deserializer=reflection_pb2.ServerReflectionResponse.FromString,
    )
    requests = [
        reflection_pb2.ServerReflectionRequest(list_services=""),
        reflection_pb2.ServerReflectionRequest(file_containing_symbol=SERVICE),
    ]
    answers = list(call(iter(requests), timeout=10))
    names = sorted(s.name for s in answers[0].list_services_response.service)
    files = answers[1].file_descriptor_response.file_descriptor_proto
    return names, len(files)


def all_containers(stub, page_size):
    token, pages, seen = "", 0, []
    while True:
        page = stub.ListContainers(pb.ListContainersRequest(page_size=page_size, page_token=token))
        pages += 1
        check(len(page.containers) <= page_size, f"page {pages} holds at most {page_size}")
        seen += [c.id for c in page.containers]
        token = page.next_page_token
        if not token:
            return seen, pages


def toggle(stub, container, n, watcher):
    """Changes a container's metric n times, each time waiting for the lifecycle event the
    change produces (so that no two changes merge into one event)."""
    for _ in range(n):
        seen = sum(e.container == container for e in watcher.events)
        current = stub.GetContainer(pb.GetContainerRequest(container=container)).container
        metric = (
            pb.MetricSpec(command=pb.CommandMetric(argv=["true"]))
            if current.metric.WhichOneof("source") == "pushed"
            else pb.MetricSpec(pushed=pb.PushedMetric())
        )
        stub.Manage(pb.ManageRequest(container=container, metric=metric))
        watcher.wait_for(f"change {seen + 1} of {container}", lambda e, seen=seen: sum(
            x.container == container for x in watcher.events) > seen)


def phase1(channel, stub, work):
    say("== health")
    health = health_pb2_grpc.HealthStub(channel)
    for service in ["", SERVICE]:
        r = health.Check(health_pb2.HealthCheckRequest(service=service), timeout=10)
        check(r.status == health_pb2.HealthCheckResponse.SERVING, f"health {service!r} SERVING")

    say("== reflection")
    for version in ["v1", "v1alpha"]:
        names, files = reflection_listing(channel, version)
        say(f"  {version}: {names}; {files} descriptors for {SERVICE}")
        for name in [
            SERVICE,
            "grpc.health.v1.Health",
            "grpc.reflection.v1.ServerReflection",
            "grpc.reflection.v1alpha.ServerReflection",
        ]:
            check(name in names, f"reflection {version} lists {name}")
        check(files >= 1, f"reflection {version} serves the descriptor of {SERVICE}")

    say("== GetMachine")
    m = stub.GetMachine(pb.GetMachineRequest()).machine
    say(f"  {m.fingerprint}: {len(m.units)} units, concerns "
        + ", ".join(f"{c.name} ({pb.ConcernScope.Name(c.scope)})" for c in m.concerns))
    check(m.fingerprint.startswith("mc1-") and len(m.units) >= 1, "a machine class and units")
    check(all(c.scope != pb.CONCERN_SCOPE_UNSPECIFIED for c in m.concerns), "concern scopes set")

    say("== ListContainers, a page at a time")
    everything, _ = all_containers(stub, 1000)
    paged, pages = all_containers(stub, 2)
    say(f"  {len(everything)} containers in {pages} pages of 2: {paged}")
    check(len(everything) >= 5, "at least the five test containers")
    check(paged == everything == sorted(everything), "pages join to the whole list, by id")
    check(pages == (len(everything) + 1) // 2, "no empty or missing page")
    listing = stub.ListContainers(pb.ListContainersRequest(page_size=2147483647))
    check(len(listing.containers) == len(everything), "a huge page_size is served (coerced)")
    placements = stub.ListPlacements(pb.ListPlacementsRequest(vcpus=1, page_size=1))
    check(placements.total_size >= 1 and len(placements.placements) == 1, "ListPlacements pages")

    c1 = work["c1"]
    say("== Manage with a sh -c command metric")
    argv = ["sh", "-c", work["script"]]
    r = stub.Manage(pb.ManageRequest(container=c1, metric=pb.MetricSpec(
        command=pb.CommandMetric(argv=argv))))
    check(list(r.container.metric.command.argv) == argv, f"argv stored unchanged: {argv}")
    got = stub.GetContainer(pb.GetContainerRequest(container=c1)).container
    check(list(got.metric.command.argv) == argv, "GetContainer shows the same argv")

    say("== a Prometheus selector with a space")
    selector = 'testload_ops_total{mode="cpu", job!="batch"}'
    r = stub.Manage(pb.ManageRequest(container=work["c2"], metric=pb.MetricSpec(
        prometheus=pb.PrometheusMetric(url="http://127.0.0.1:9/metrics", selector=selector))))
    check(r.container.metric.prometheus.selector == selector, f"selector kept whole: {selector}")
    expect_error(grpc.StatusCode.INVALID_ARGUMENT, lambda: stub.Manage(pb.ManageRequest(
        container=work["c2"], metric=pb.MetricSpec(prometheus=pb.PrometheusMetric(
            url="http://127.0.0.1:9/metrics", selector='ops{mode="cpu" job!="batch"}')))),
        "a selector missing a comma", "expected , or }")

    say("== the override policy of a container")
    r = stub.Manage(pb.ManageRequest(container=work["c2"], on_override=pb.ON_OVERRIDE_LEAVE))
    check(r.container.on_override == pb.ON_OVERRIDE_LEAVE, "on_override stored")
    check(r.container.effective_on_override == pb.ON_OVERRIDE_LEAVE, "and in force")
    check(not r.container.HasField("cpuset_override"), "no override seen")
    expect_error(grpc.StatusCode.INVALID_ARGUMENT, lambda: stub.Manage(pb.ManageRequest(
        container=work["c2"], on_override=99)), "an unknown override policy", "99")

    say("== Watch, resumed after a reconnect")
    start = stub.ListContainers(pb.ListContainersRequest()).event_sequence
    c3 = work["c3"]
    steady = Watcher(stub, start)
    flaky = Watcher(stub, start)
    toggle(stub, c3, 2, steady)
    first = flaky.wait_for("an event for the reconnecting watcher", lambda e: e.container == c3)
    flaky.stop()
    say(f"  the reconnecting watcher left after sequence {first.sequence}")
    toggle(stub, c3, 4, steady)
    last = steady.events[-1].sequence
    before = [e.sequence for e in flaky.events if e.sequence <= first.sequence]
    again = Watcher(stub, first.sequence)
    again.wait_for(f"sequence {last} after resuming", lambda e: e.sequence >= last)
    after = [e.sequence for e in again.events if e.sequence <= last]
    steady_seqs = [e.sequence for e in steady.events if e.sequence <= last]
    say(f"  steady watcher: {steady_seqs}")
    say(f"  reconnecting watcher: {before} + {after}")
    check(before + after == steady_seqs, "the resumed stream lost and repeated nothing")
    check(all(b == a + 1 for a, b in zip(steady_seqs, steady_seqs[1:])), "sequences without gaps")
    again.stop()

    say("== bad requests")
    expect_error(grpc.StatusCode.INVALID_ARGUMENT, lambda: stub.Manage(pb.ManageRequest(
        container=c1, policy=pb.Policy(kind=99))), "an unknown policy kind", "99")
    expect_error(grpc.StatusCode.INVALID_ARGUMENT, lambda: stub.Place(pb.PlaceRequest(
        container=c1, migration=42)), "an unknown migration mode", "42")
    expect_error(grpc.StatusCode.INVALID_ARGUMENT, lambda: stub.Manage(pb.ManageRequest(
        container=c1, metric=pb.MetricSpec(perf=pb.PerfMetric(counter=7)))),
        "an unknown perf counter", "7")
    expect_error(grpc.StatusCode.INVALID_ARGUMENT, lambda: stub.ListContainers(
        pb.ListContainersRequest(page_token="c2VxdWVuY2U")), "a page token never issued",
        "not issued by this daemon")
    token = stub.ListContainers(pb.ListContainersRequest(page_size=1)).next_page_token
    check(token != "", "a one-entry page has a next page token")
    expect_error(grpc.StatusCode.INVALID_ARGUMENT, lambda: stub.ListPlacements(
        pb.ListPlacementsRequest(vcpus=1, page_token=token)),
        "a ListContainers token given to ListPlacements", "not issued by this daemon")
    expect_error(grpc.StatusCode.INVALID_ARGUMENT, lambda: stub.ListContainers(
        pb.ListContainersRequest(page_size=-5)), "a negative page size", "negative")
    # The daemon keeps grpc.watch_history = 16 events here: push the start out of them.
    latest = stub.ListContainers(pb.ListContainersRequest()).event_sequence
    while latest - start <= 17:
        toggle(stub, c3, 1, steady)
        latest = stub.ListContainers(pb.ListContainersRequest()).event_sequence
    steady.stop()
    expect_error(grpc.StatusCode.OUT_OF_RANGE, lambda: first_event(stub.Watch(
        pb.WatchRequest(resume_after_sequence=start), timeout=10)),
        "a resume point older than the events kept", "no longer kept")
    expect_error(grpc.StatusCode.OUT_OF_RANGE, lambda: first_event(stub.Watch(
        pb.WatchRequest(resume_after_sequence=latest + 1000), timeout=10)),
        "a resume point never issued", "never issued")
    # For phase 2: the command metric reads a value file that does not exist yet, so the
    # restarted daemon's first measurement of c1 fails; the test restarts it now.
    with open(os.path.join(work["dir"], "phase1.json"), "w") as f:
        json.dump({"old_sequence": latest}, f)


def phase2(channel, stub, work):
    c1 = work["c1"]
    with open(os.path.join(work["dir"], "phase1.json")) as f:
        old = json.load(f)["old_sequence"]
    say("== after a restart")
    expect_error(grpc.StatusCode.OUT_OF_RANGE, lambda: first_event(stub.Watch(
        pb.WatchRequest(resume_after_sequence=old), timeout=10)),
        "a resume point from before the restart", "no longer kept")
    say("== the sh -c command metric measures")
    # The restarted daemon watches c1 (a crafted model-policy record, predicted baseline 42)
    # and measures it at once; with no value file yet the command fails and the measurement
    # is skipped. Its marker file says the command ran, so the failure has happened.
    watcher = Watcher(stub, 0, c1)
    runs = work["runs"]
    while not os.path.exists(runs):
        threading.Event().wait(0.1)
    with open(work["value"], "w") as f:
        f.write("50\n")
    # Manage with nothing changed wakes c1's task: it measures again. ABORTED while the
    # first measurement still holds the container.
    argv = ["sh", "-c", work["script"]]
    for _ in range(PATIENCE * 10):
        try:
            stub.Manage(pb.ManageRequest(container=c1, metric=pb.MetricSpec(
                command=pb.CommandMetric(argv=argv))))
            break
        except grpc.RpcError as e:
            if e.code() != grpc.StatusCode.ABORTED:
                raise
            threading.Event().wait(0.1)
    e = watcher.wait_for("c1 measured", lambda e: "observed" in e.message)
    say(f"  #{e.sequence} {pb.EventKind.Name(e.kind)}: {e.message}")
    check(e.message.startswith("observed 100.000 [100.000, 100.000] against 35.700-48.300"),
          "the shell computed 2 x 50: the command's words arrived as sent")
    watcher.stop()


def main():
    phase, socket, workdir = sys.argv[1:4]
    with open(os.path.join(workdir, "work.json")) as f:
        work = json.load(f)
    work["dir"] = workdir
    # The target as the grpcio docs write it; nothing else is set on the channel.
    channel = grpc.insecure_channel(f"unix:{socket}")
    stub = placed_pb2_grpc.PlacedServiceStub(channel)
    {"phase1": phase1, "phase2": phase2}[phase](channel, stub, work)
    say(f"{phase}: all checks passed")


if __name__ == "__main__":
    main()
