"""gRPC servicers, one package per service."""
