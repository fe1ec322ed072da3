"""Transfer persistence: its journal (tables prefixed `tr_`) and the repository over it."""

from ggmodules.core.transfer.record import TransferRecord
from ggmodules.storage.transfer.repository import TransferRepository, TransferUnit

__all__ = ["TransferRecord", "TransferRepository", "TransferUnit"]
