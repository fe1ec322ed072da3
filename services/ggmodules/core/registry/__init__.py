"""Registry domain: profiles, FSM definitions, binding plans. Pure Python: no grpc, no SQL, no protobuf."""
