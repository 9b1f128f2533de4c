#!/usr/bin/env python3
"""Connect to placed on its Unix socket, check health, list the containers, stream Watch.

    pip install ./clients/python[tools]
    python3 clients/python/examples/quickstart.py [/run/placed/placed.sock]

Reconnects after a dropped stream without losing events: it resumes after the last
sequence number it received (the daemon keeps its last grpc.watch_history events).
"""
import sys
import time

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from placed.v1 import placed_pb2 as pb
from placed.v1 import placed_pb2_grpc

socket = sys.argv[1] if len(sys.argv) > 1 else "/run/placed/placed.sock"
# No channel option is needed: the daemon accepts the :authority gRPC C-core derives from
# the socket path (docs/api.md).
channel = grpc.insecure_channel(f"unix:{socket}")

health = health_pb2_grpc.HealthStub(channel).Check(
    health_pb2.HealthCheckRequest(service="placed.v1.PlacedService"), timeout=5
)
print("health:", health_pb2.HealthCheckResponse.ServingStatus.Name(health.status))

placed = placed_pb2_grpc.PlacedServiceStub(channel)
token, resume = "", 0
while True:
    page = placed.ListContainers(pb.ListContainersRequest(page_size=100, page_token=token))
    if not token:
        # Watching from the first page's sequence misses no change made after the listing.
        resume = page.event_sequence
    for c in page.containers:
        print(f"{c.name:20} {pb.ContainerState.Name(c.state):28} {c.placement_id or '-'}")
    token = page.next_page_token
    if not token:
        break

while True:
    try:
        for event in placed.Watch(pb.WatchRequest(resume_after_sequence=resume)):
            resume = event.sequence
            print(event.sequence, event.container, pb.EventKind.Name(event.kind), event.message)
        break
    except grpc.RpcError as e:
        if e.code() == grpc.StatusCode.OUT_OF_RANGE:
            sys.exit(f"events were lost ({e.details()}); list the containers again")
        if e.code() not in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.ABORTED):
            raise
        print(f"watch interrupted ({e.code().name}); resuming after {resume}", file=sys.stderr)
        time.sleep(1)
