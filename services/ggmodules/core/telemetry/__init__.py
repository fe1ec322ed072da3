"""Telemetry's domain: stream filters, cursor rules, retention and per-turn reports. No grpc, no SQL."""
