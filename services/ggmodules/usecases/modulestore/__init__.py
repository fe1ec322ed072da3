"""ModuleStore's use cases: one module per operation (write, tool_call, bind, handover), each a function
over the unit-of-work port (port.py) that storage implements (storage/modulestore/unit.py).

Why here, `ggmodules.usecases.modulestore`: `ggmodules.modulestore` is the generated protobuf package
(`ggmodules.modulestore.v1`), and a use case is neither a handler (server: validation, request ids,
statuses) nor storage (SQL). The server calls a use case inside one transaction (ModuleStoreRepository
.mutate); the use case calls the unit and core, and encodes its events with wire (wire/modulestore_events.py)
so storage never imports wire. Reads that decide nothing stay on the repository.

A Write, top to bottom: server/modulestore/servicer.py (Write) → storage/modulestore/repository.py
(mutate: the one transaction path) → usecases/modulestore/write.py → storage/modulestore/unit.py (load,
persist, append) → core/modules/write.py (apply).
"""
