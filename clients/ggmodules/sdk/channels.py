"""What the sync and asyncio transports share: the services' stubs, and how each call begins."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ggmodules.modulestore.v1 import modulestore_service_pb2_grpc
from ggmodules.registry.v1 import registry_service_pb2_grpc
from ggmodules.sdk.config import ClientConfig
from ggmodules.sdk.credentials import Wallet, bearer
from ggmodules.sdk.plans import Plan
from ggmodules.sdk.retry import Attempts
from ggmodules.transfer.v1 import transfer_service_pb2_grpc

Headers = tuple[tuple[str, str], ...]


class Stubs:
    """Every service's stub over channels opened by `open_channel(address)` (sync or asyncio)."""

    def __init__(self, config: ClientConfig, open_channel: Callable[[str], Any]) -> None:
        self.channels = {"registry": open_channel(config.registry),
                         "modulestore": open_channel(config.modulestore),
                         "transfer": open_channel(config.transfer)}
        self._stubs: dict[str, Any] = {
            "registry": registry_service_pb2_grpc.RegistryServiceStub(self.channels["registry"]),
            "modulestore": modulestore_service_pb2_grpc.ModuleStoreServiceStub(self.channels["modulestore"]),
            "transfer": transfer_service_pb2_grpc.TransferServiceStub(self.channels["transfer"]),
        }

    def method(self, plan: Plan[Any]) -> Any:
        return getattr(self._stubs[plan.service], plan.method)


class TransportBase:
    def __init__(self, config: ClientConfig, wallet: Wallet | None = None) -> None:
        self._config = config
        # Shared by every transport derived from this one: agents opened through one are known to all.
        self.wallet = wallet or Wallet(config.operator_credential)

    @property
    def config(self) -> ClientConfig:
        return self._config

    def _begin(self, plan: Plan[Any]) -> tuple[Attempts, Headers]:
        """The call's retry budget (its deadline included) and the metadata every attempt sends."""
        config = self._config
        extra = (*config.metadata, *bearer(self.wallet.pick(plan.method, plan.request)))
        return Attempts(config.retry, config.timeout, retryable=plan.retryable), plan.headers(extra)
