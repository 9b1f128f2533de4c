#!/usr/bin/env python3
"""An orchestrator's session with placed through Python grpcio (gRPC C-core), unmodified:
no channel option, no authority override. Run by tests/e2e/python.rs against the real
daemon, in two phases around a restart; prints what it does, exits non-zero on the first
check that fails.

    session.py phase1 SOCKET WORKDIR
    session.py phase2 SOCKET WORKDIR
    session.py admission1 SOCKET WORKDIR
    session.py admission2 SOCKET WORKDIR

The admission phases are a scheduler's: ask where a container should start, hold the
units, start it and claim the hold; they decode every error's google.rpc.Status from
`grpc-status-details-bin` with descriptors built here (no googleapis package needed).
"""
import json
import os
import sys
import threading

import grpc
from google.protobuf import any_pb2, descriptor_pb2, descriptor_pool, duration_pb2
from google.protobuf import message_factory
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


def _rpc_classes():
    """google.rpc.Status, ErrorInfo, BadRequest and RetryInfo, from descriptors built here
    in a pool of their own (so that an installed googleapis-common-protos never clashes)."""
    pool = descriptor_pool.DescriptorPool()
    for wkt in (any_pb2, duration_pb2):
        fdp = descriptor_pb2.FileDescriptorProto()
        wkt.DESCRIPTOR.CopyToProto(fdp)
        pool.Add(fdp)
    F = descriptor_pb2.FieldDescriptorProto
    f = descriptor_pb2.FileDescriptorProto(
        name="placed_test/google_rpc.proto", package="google.rpc", syntax="proto3",
        dependency=["google/protobuf/any.proto", "google/protobuf/duration.proto"])

    def field(msg, name, number, kind, label=F.LABEL_OPTIONAL, type_name=None):
        fd = msg.field.add(name=name, number=number, type=kind, label=label)
        if type_name:
            fd.type_name = type_name

    status = f.message_type.add(name="Status")
    field(status, "code", 1, F.TYPE_INT32)
    field(status, "message", 2, F.TYPE_STRING)
    field(status, "details", 3, F.TYPE_MESSAGE, F.LABEL_REPEATED, ".google.protobuf.Any")
    info = f.message_type.add(name="ErrorInfo")
    field(info, "reason", 1, F.TYPE_STRING)
    field(info, "domain", 2, F.TYPE_STRING)
    entry = info.nested_type.add(name="MetadataEntry")
    entry.options.map_entry = True
    field(entry, "key", 1, F.TYPE_STRING)
    field(entry, "value", 2, F.TYPE_STRING)
    field(info, "metadata", 3, F.TYPE_MESSAGE, F.LABEL_REPEATED,
          ".google.rpc.ErrorInfo.MetadataEntry")
    retry = f.message_type.add(name="RetryInfo")
    field(retry, "retry_delay", 1, F.TYPE_MESSAGE, type_name=".google.protobuf.Duration")
    bad = f.message_type.add(name="BadRequest")
    violation = bad.nested_type.add(name="FieldViolation")
    field(violation, "field", 1, F.TYPE_STRING)
    field(violation, "description", 2, F.TYPE_STRING)
    field(bad, "field_violations", 1, F.TYPE_MESSAGE, F.LABEL_REPEATED,
          ".google.rpc.BadRequest.FieldViolation")
    pool.Add(f)
    return {name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"google.rpc.{name}"))
            for name in ["Status", "ErrorInfo", "RetryInfo", "BadRequest"]}


RPC = _rpc_classes()


def details(e):
    """An error's google.rpc.Status details by type name (ErrorInfo, BadRequest, RetryInfo),
    decoded from its grpc-status-details-bin trailer; checks that the trailer agrees with
    the status."""
    raw = dict(e.trailing_metadata() or ()).get("grpc-status-details-bin")
    check(raw is not None, f"{e.code().name} carries grpc-status-details-bin")
    status = RPC["Status"].FromString(raw)
    check(status.code == e.code().value[0], "google.rpc.Status.code is the call's code")
    out = {}
    for d in status.details:
        name = d.type_url.rsplit("/", 1)[-1].removeprefix("google.rpc.")
        if name in RPC:
            out[name] = RPC[name].FromString(d.value)
    return out


def expect_details(code, call, what, reason, field=None, retry=None):
    """The call fails with `code`, its ErrorInfo (domain placed.io) has `reason`, its
    BadRequest names `field` when given, and RetryInfo is present exactly when `retry`."""
    try:
        call()
    except grpc.RpcError as e:
        say(f"  {what}: {e.code().name}: {e.details()}")
        check(e.code() == code, f"{what} is {code.name}")
        d = details(e)
        info = d.get("ErrorInfo")
        check(info is not None and info.domain == "placed.io", f"{what}: ErrorInfo of placed.io")
        reasons = reason if isinstance(reason, tuple) else (reason,)
        check(info.reason in reasons, f"{what}: reason {info.reason} is one of {reasons}")
        if field is not None:
            fields = [v.field for v in d["BadRequest"].field_violations] if "BadRequest" in d else []
            check(field in fields, f"{what}: BadRequest names {field} ({fields})")
        if retry is not None:
            check(("RetryInfo" in d) == retry, f"{what}: RetryInfo {'present' if retry else 'absent'}")
        return e, d
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


def seconds(s):
    return duration_pb2.Duration(seconds=s)


POLICY = pb.Policy(kind=pb.POLICY_KIND_SMART_AGGRESSIVE)
# No free unit: the admission's own check, or the policy finding none free.
NO_ROOM = ("NO_ROOM", "POLICY_CANNOT_DECIDE")


def held(stub):
    return sorted(r.id for r in stub.ListReservations(pb.ListReservationsRequest()).reservations)


def capacity_agrees(stub, what):
    """GetCapacity's holders are what ListContainers says each container holds, and its
    reservations what ListReservations holds."""
    cap = stub.GetCapacity(pb.GetCapacityRequest(vcpus=[1]))
    containers = stub.ListContainers(pb.ListContainersRequest(page_size=1000)).containers
    reservations = stub.ListReservations(pb.ListReservationsRequest()).reservations
    for u in cap.units:
        holders = sorted(c.id for c in containers if u.unit in c.units)
        check(sorted(u.held_by) == holders, f"{what}: unit {u.unit} held by {holders}")
        reserved = [r.id for r in reservations if u.unit in r.units]
        mine = [u.reserved_by] if u.reserved_by else []
        check(mine == reserved, f"{what}: unit {u.unit} reserved by {reserved}")
    pus = sum(n.free_pus + n.held_pus + n.reserved_pus for n in cap.nodes)
    check(pus == sum(n.free_pus + n.held_pus + n.reserved_pus for n in cap.packages),
          f"{what}: nodes and packages count the same {pus} PUs")
    return cap


def admission1(channel, stub, work):
    c1 = work["c1"]
    say("== Admit, advice only")
    a = stub.Admit(pb.AdmitRequest(name="job", vcpus=1, policy=POLICY,
                                   labels={"team": "db"})).admission
    say(f"  {a.name}: {a.placement_id or 'unpinned'} cpus {a.cpus} mems {a.mems} units "
        f"{list(a.units)}; {a.reason}; prior {pb.PriorKind.Name(a.prior.kind)}")
    check(a.name == "job" and a.cpus != "" and list(a.units) == [0], "a placement on the unit")
    check(a.prior.kind == pb.PRIOR_KIND_NOTHING and a.predicted_relative == 0,
          "no prior, no prediction")
    check(not a.HasField("reservation") and held(stub) == [], "nothing held")
    capacity_agrees(stub, "advice")

    say("== two reservations race for the only unit")
    barrier = threading.Barrier(2)
    results = [None, None]

    def race(i):
        barrier.wait()
        try:
            results[i] = stub.Admit(pb.AdmitRequest(name=f"racer{i}", vcpus=1, policy=POLICY,
                                                    reserve=seconds(600),
                                                    labels={"team": "db"}))
        except grpc.RpcError as e:
            results[i] = e

    threads = [threading.Thread(target=race, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(PATIENCE)
    won = [r for r in results if isinstance(r, pb.AdmitResponse)]
    lost = [r for r in results if isinstance(r, grpc.RpcError)]
    check(len(won) == 1 and len(lost) == 1, "exactly one of two racing holds wins")
    e = lost[0]
    say(f"  the loser: {e.code().name}: {e.details()}")
    check(e.code() == grpc.StatusCode.FAILED_PRECONDITION, "the loser is FAILED_PRECONDITION")
    check(details(e)["ErrorInfo"].reason in NO_ROOM, f"the loser's reason is one of {NO_ROOM}")
    rid = won[0].admission.reservation.id
    check(held(stub) == [rid], f"the winner's hold {rid} is listed")
    cap = capacity_agrees(stub, "held")
    check(cap.units[0].reserved_by == rid, "capacity shows the hold on the unit")
    check(list(cap.fits[0].placement_ids) == [], "nothing fits while the unit is held")

    say("== a scheduler starts the container and claims the hold")
    expect_details(grpc.StatusCode.NOT_FOUND, lambda: stub.Manage(pb.ManageRequest(
        container=c1, reservation="r-none")), "a claim of a hold never made",
        "RESERVATION_NOT_FOUND")
    dry = stub.Manage(pb.ManageRequest(container=c1, reservation=rid, dry_run=True)).container
    check(held(stub) == [rid], "a dry-run claim holds on to the hold")
    check(dry.labels["team"] == "db", "the dry run shows the hold's labels")
    r = stub.Manage(pb.ManageRequest(container=c1, reservation=rid, labels={"tier": "1"}))
    check(dict(r.container.labels) == {"team": "db", "tier": "1"}, "the claim's labels merged")
    check(held(stub) == [], "the claim ends the hold")
    for _ in range(PATIENCE * 10):
        got = stub.GetContainer(pb.GetContainerRequest(container=c1)).container
        if list(got.units) == [0]:
            break
        threading.Event().wait(0.1)
    check(list(got.units) == [0], "the claimer holds the reserved unit")
    capacity_agrees(stub, "claimed")
    only = stub.ListContainers(pb.ListContainersRequest(label_selector="team=db")).containers
    check([c.id for c in only] == [c1], "a label selector lists the claimer alone")

    say("== batches, all or nothing and best effort")
    stub.Unmanage(pb.UnmanageRequest(container=c1))
    two = [pb.AdmitRequest(name=n, vcpus=1, policy=POLICY, reserve=seconds(600))
           for n in ("b1", "b2")]
    answers = stub.AdmitBatch(pb.AdmitBatchRequest(requests=two,
                                                   mode=pb.BATCH_MODE_ALL_OR_NOTHING)).answers
    reasons = sorted(a.error.reason for a in answers)
    say(f"  all or nothing: {reasons}")
    check(all(a.HasField("error") for a in answers), "no container of the batch is placed")
    check("BATCH_REFUSED" in reasons, "the one that fit says the batch was refused")
    check(held(stub) == [], "an all-or-nothing batch that fails holds nothing")
    answers = stub.AdmitBatch(pb.AdmitBatchRequest(requests=two,
                                                   mode=pb.BATCH_MODE_BEST_EFFORT)).answers
    placed = [a for a in answers if a.HasField("admission")]
    check(len(placed) == 1, "best effort places the one that fits")
    check(held(stub) == [placed[0].admission.reservation.id], "and holds it alone")
    released = stub.ReleaseReservation(pb.ReleaseReservationRequest(
        id=placed[0].admission.reservation.id)).reservation
    check(held(stub) == [] and list(released.units) == [0], "released, the unit is free")

    say("== a hold expires")
    start = stub.ListContainers(pb.ListContainersRequest()).event_sequence
    watcher = Watcher(stub, start)
    short = stub.Admit(pb.AdmitRequest(name="short", vcpus=1, policy=POLICY,
                                       reserve=seconds(1))).admission.reservation.id
    watcher.wait_for(f"{short} reserved", lambda e: e.kind == pb.EVENT_KIND_RESERVED
                     and e.container == short)
    watcher.wait_for(f"{short} released at its expiry", lambda e: e.kind == pb.EVENT_KIND_RELEASED
                     and e.container == short)
    check(short not in held(stub), "an expired hold is no longer listed")
    watcher.stop()
    expect_details(grpc.StatusCode.NOT_FOUND, lambda: stub.ReleaseReservation(
        pb.ReleaseReservationRequest(id=short)), "releasing an expired hold",
        "RESERVATION_NOT_FOUND")

    say("== errors and their details")
    expect_details(grpc.StatusCode.INVALID_ARGUMENT, lambda: stub.Admit(pb.AdmitRequest(
        vcpus=0)), "an admission of 0 vCPUs", "BAD_REQUEST", field="vcpus", retry=False)
    expect_details(grpc.StatusCode.INVALID_ARGUMENT, lambda: stub.Admit(pb.AdmitRequest(
        vcpus=1, reserve=seconds(7200))), "a hold of two hours", "BAD_REQUEST", field="reserve")
    expect_details(grpc.StatusCode.INVALID_ARGUMENT, lambda: stub.ListContainers(
        pb.ListContainersRequest(page_size=-1)), "a negative page size", "BAD_REQUEST",
        field="page_size")
    expect_details(grpc.StatusCode.INVALID_ARGUMENT, lambda: stub.ReportMetric(iter([
        pb.ReportMetricRequest(container="", value=1.0)])), "a sample naming no container",
        "BAD_REQUEST", field="container")
    expect_details(grpc.StatusCode.NOT_FOUND, lambda: stub.GetContainer(
        pb.GetContainerRequest(container="nothing-here")), "an unknown container",
        "CONTAINER_NOT_FOUND", retry=False)
    expect_details(grpc.StatusCode.OUT_OF_RANGE, lambda: first_event(stub.Watch(
        pb.WatchRequest(resume_after_sequence=2**62), timeout=10)),
        "a resume point never issued", "RESUME_POINT_NEVER_ISSUED")
    raw = channel.unary_unary("/placed.v1.PlacedService/Manage",
                              request_serializer=lambda b: b, response_deserializer=lambda b: b)
    expect_details(grpc.StatusCode.INVALID_ARGUMENT, lambda: raw(b"\x08\x05", timeout=10),
                   "a message that does not decode", "MALFORMED_REQUEST")

    say("== a hold that outlives a restart")
    live = stub.Admit(pb.AdmitRequest(name="survivor", vcpus=1, policy=POLICY,
                                      reserve=seconds(3600), labels={"team": "db"}))
    live = live.admission.reservation
    with open(os.path.join(work["dir"], "admission1.json"), "w") as f:
        json.dump({"id": live.id, "units": list(live.units),
                   "expires": live.expire_time.seconds}, f)


def admission2(channel, stub, work):
    with open(os.path.join(work["dir"], "admission1.json")) as f:
        old = json.load(f)
    say("== after a restart, the hold is still there")
    listed = stub.ListReservations(pb.ListReservationsRequest()).reservations
    check([r.id for r in listed] == [old["id"]], f"{old['id']} survived the restart")
    r = listed[0]
    check(list(r.units) == old["units"] and r.expire_time.seconds == old["expires"],
          "with its units and its expiry")
    check(r.labels["team"] == "db", "and its labels")
    cap = capacity_agrees(stub, "after the restart")
    check(cap.units[0].reserved_by == old["id"], "capacity shows it")
    expect_details(grpc.StatusCode.FAILED_PRECONDITION, lambda: stub.Admit(pb.AdmitRequest(
        vcpus=1, policy=POLICY, reserve=seconds(60))), "a hold of the held unit", NO_ROOM)
    stub.ReleaseReservation(pb.ReleaseReservationRequest(id=old["id"]))
    check(held(stub) == [], "released")
    expect_details(grpc.StatusCode.NOT_FOUND, lambda: stub.ReleaseReservation(
        pb.ReleaseReservationRequest(id=old["id"])), "releasing it twice",
        "RESERVATION_NOT_FOUND")


def main():
    phase, socket, workdir = sys.argv[1:4]
    with open(os.path.join(workdir, "work.json")) as f:
        work = json.load(f)
    work["dir"] = workdir
    # The target as the grpcio docs write it; nothing else is set on the channel.
    channel = grpc.insecure_channel(f"unix:{socket}")
    stub = placed_pb2_grpc.PlacedServiceStub(channel)
    phases = {"phase1": phase1, "phase2": phase2, "admission1": admission1,
              "admission2": admission2}
    phases[phase](channel, stub, work)
    say(f"{phase}: all checks passed")


if __name__ == "__main__":
    main()
