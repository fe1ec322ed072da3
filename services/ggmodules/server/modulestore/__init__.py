"""The ModuleStore gRPC service."""
