"""placed.v1, generated from proto/proto/placed/v1/placed.proto by clients/python/generate."""
