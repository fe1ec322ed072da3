"""Registry persistence: its tables (prefixed `reg_`) and the repository over them."""

from ggmodules.core.registry.records import InstanceRecord, RunRecord
from ggmodules.storage.idempotency import RequestKey
from ggmodules.storage.registry.repository import RegistryRepository, RegistryUnit

__all__ = ["InstanceRecord", "RegistryRepository", "RegistryUnit", "RequestKey", "RunRecord"]
