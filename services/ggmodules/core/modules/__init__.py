"""The ModuleStore domain: per-kind state and operations, copy rules, prompt rendering and tools.

Pure Python: no grpc, no SQL. The storage layer persists what these functions return; the servicer
converts to and from the contracts.
"""
