"""Python client of the placed NUMA placement daemon: generated stubs for ``placed.v1``.

``placed.v1.placed_pb2`` holds the messages and enums, ``placed.v1.placed_pb2_grpc`` the
``PlacedServiceStub``. Connect with ``grpc.insecure_channel("unix:/run/placed/placed.sock")``:
no channel option is needed (see the package README).
"""
