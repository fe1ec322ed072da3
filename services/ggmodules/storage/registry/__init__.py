"""Registry persistence: its tables (prefixed `reg_`) and the repository over them."""

from ggmodules.storage.idempotency import RequestKey
from ggmodules.storage.registry.repository import InstanceRecord, RegistryRepository, RegistryUnit, RunRecord

__all__ = ["InstanceRecord", "RegistryRepository", "RegistryUnit", "RequestKey", "RunRecord"]
