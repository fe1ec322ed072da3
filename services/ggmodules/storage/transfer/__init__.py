"""Transfer persistence: its journal (tables prefixed `tr_`) and the repository over it."""

from ggmodules.storage.transfer.repository import TransferRecord, TransferRepository, TransferUnit

__all__ = ["TransferRecord", "TransferRepository", "TransferUnit"]
