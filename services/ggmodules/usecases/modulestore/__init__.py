"""ModuleStore's use cases: one module per operation (write, tool_call, bind, handover), each a function
over the unit-of-work port (port.py) that storage implements (storage/modulestore/unit.py).

Why here, `ggmodules.usecases.modulestore`: `ggmodules.modulestore` is the generated protobuf package
(`ggmodules.modulestore.v1`), and a use case is neither a handler (server: validation, request ids,
statuses) nor storage (SQL). The server calls a use case inside one transaction (ModuleStoreRepository
.mutate, or .batched.mutate for writes); the use case calls the unit and core, and encodes its events
with wire (wire/modulestore_events.py), so storage never imports wire. Reads that decide nothing stay on
the repository.

A Write, top to bottom: server/modulestore/servicer.py (write) → storage/modulestore/group_commit.py
(mutate: the transaction, shared with concurrent writes) → storage/modulestore/unit.py (apply_once: request
id, then the use case on the unit of work) → usecases/modulestore/write.py → core/modules/write.py (apply),
the unit loading, persisting and appending for the use case.
"""
