"""Conversions between the domain and the wire messages (generated protobuf), shared by servicers and the
outbox, which stores events as the wire envelope Telemetry serves."""
