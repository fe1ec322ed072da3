"""Use cases: what a service does for one call, over ports its storage implements.

Layering: server → usecases → storage → wire → core. A use case decides (who may act, what changes, which
streams get which events); storage only loads, persists and appends; wire encodes; core computes.
"""
