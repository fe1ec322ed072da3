"""Auth for tests (R50): one key pair and one service and operator credential per test session
(`CREDENTIALS`), handed to every service started here, and the `WALLET` a test's channels pick the credential
of each call from (`AUTO`)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from ggmodules.runtime.config import ServiceConfig
from ggmodules.runtime.credentials import Signer, new_signing_key, write_key_pair
from ggmodules.sdk.credentials import Wallet


class TestCredentials:
    """The session's key pair (files every service reads) and its service and operator credentials."""

    def __init__(self) -> None:
        self.directory = Path(tempfile.mkdtemp(prefix="ggm-auth-"))
        key = new_signing_key()
        self.signing_key_file = self.directory / "credentials.key"
        self.public_key_file = self.directory / "credentials.pub"
        write_key_pair(key, self.signing_key_file, self.public_key_file)
        self.signer = Signer(key)
        self.service = self.signer.service("tests")
        self.operator = self.signer.operator()
        self.service_token_file = self.directory / "service.jwt"
        self.service_token_file.write_text(self.service)

    def config_fields(self) -> dict[str, str]:
        return {"public_key_file": str(self.public_key_file), "signing_key_file": str(self.signing_key_file),
                "service_token_file": str(self.service_token_file)}

    def environment(self) -> dict[str, str]:
        """For service processes and for the SDK's `ClientConfig.from_env()` (plaintext: no CA)."""
        return {"GGMODULES_PUBLIC_KEY_FILE": str(self.public_key_file),
                "GGMODULES_SIGNING_KEY_FILE": str(self.signing_key_file),
                "GGMODULES_SERVICE_TOKEN_FILE": str(self.service_token_file),
                "GGMODULES_OPERATOR_CREDENTIAL": self.operator,
                "GGMODULES_TLS_CA_FILE": ""}


CREDENTIALS = TestCredentials()
os.environ.update(CREDENTIALS.environment())
INTERNAL_PREFIX = "/ggmodules.internal.v1."


class TestWallet(Wallet):
    """The SDK's wallet, plus the service credential for the internal services' RPCs. A test that binds or
    hands over agents itself (calling ModuleStore as Registry and Transfer do) gets those agents'
    credentials minted here, as Registry mints them for the agents it opens."""

    def credential_for(self, full_method: str, request: Any) -> str:
        if full_method.startswith(INTERNAL_PREFIX):
            name = full_method.rsplit("/", 1)[-1]
            if isinstance(request, bytes):
                return CREDENTIALS.service
            if name == "BindInstance":
                self.add_agent(request.run_id, request.agent_id,
                               CREDENTIALS.signer.agent(request.run_id, request.agent_id))
            elif name == "Handover":
                self.add_agent(request.run_id, request.successor_agent_id,
                               CREDENTIALS.signer.agent(request.run_id, request.successor_agent_id))
            return CREDENTIALS.service
        if isinstance(request, bytes):
            return self.operator
        return self.pick(full_method.rsplit("/", 1)[-1], request)


WALLET = TestWallet(CREDENTIALS.operator)


def credit(run_id: str, agent_id: str) -> str:
    """Mints a credential for an agent, as Registry would, and puts it in the WALLET: for tests that
    call ModuleStore as an agent Registry has (or has not) told it about."""
    credential = CREDENTIALS.signer.agent(run_id, agent_id)
    WALLET.add_agent(run_id, agent_id, credential)
    return credential


AUTO = "<auto>"
NONE = ""


def service_config(service: str, **fields: Any) -> ServiceConfig:
    """A service's config for a test: port 0, quiet logs, the session's keys (auth on)."""
    base: dict[str, Any] = {"port": 0, "log_level": "warning", **CREDENTIALS.config_fields()}
    return ServiceConfig(service=service, **{**base, **fields})
