"""Test harness: real services on port 0, in-process (a loop on a background thread) or as OS processes.

Nothing here is mocked: each service is the real grpc.aio server over a real database (a SQLite file, or
a fresh PostgreSQL database when `GGMODULES_TEST_POSTGRES_URL` is set).

Every backend-dependent test is parametrised over `BACKENDS`, both always: without a PostgreSQL URL the
PostgreSQL case of each is reported as skipped, with the reason, so a run's summary shows what it did not
cover instead of leaving it out silently.

Auth is on, as in production (R50): one key pair and one service and operator credential per test session
(`CREDENTIALS`), handed to every service started here, in-process (`service_config`) or as a process (the
environment). Channels for tests come from `open_channel(address, credential=...)` (or `suite.channel`):
- `AUTO` (the default): the credential a runtime would send, from the session's `WALLET`: the acting
  agent's (picked up from the answers that open agents and transfers, keyed by run and agent id), the
  service credential for the internal services, else the operator's;
- a credential string (`CREDENTIALS.operator`, `CREDENTIALS.service`, an agent's from an answer, one made
  with `CREDENTIALS.signer`): always that one;
- `NONE`: no credential at all.
`stubs(channel, "modulestore")` is one object with the service's public and internal RPCs (and its outbox).
"""

from __future__ import annotations

import asyncio
import importlib
import os
import subprocess
import sys
import tempfile
import threading
import uuid
from collections.abc import Coroutine, Iterator, Sequence
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

import grpc
import pytest
import structlog
from google.rpc import error_details_pb2
from grpc_status import rpc_status
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from ggmodules.cli.main import SERVICES
from ggmodules.core.telemetry.streams import Retention
from ggmodules.internal.v1 import modulestore_internal_service_pb2_grpc as ms_internal_grpc
from ggmodules.internal.v1 import outbox_service_pb2_grpc as outbox_grpc
from ggmodules.internal.v1 import registry_internal_service_pb2_grpc as reg_internal_grpc
from ggmodules.modulestore.v1 import modulestore_service_pb2_grpc as ms_grpc
from ggmodules.registry.v1 import registry_service_pb2_grpc as reg_grpc
from ggmodules.runtime.channels import MESSAGE_LIMITS
from ggmodules.runtime.config import ServiceConfig
from ggmodules.runtime.credentials import Signer, new_signing_key, write_key_pair
from ggmodules.runtime.observability import Observe
from ggmodules.runtime.server import RunningServer, start_server
from ggmodules.sdk.credentials import Wallet, bearer
from ggmodules.telemetry.v1 import telemetry_service_pb2_grpc as tel_grpc
from ggmodules.transfer.v1 import transfer_service_pb2_grpc as tr_grpc

T = TypeVar("T")
POSTGRES_URL = os.environ.get("GGMODULES_TEST_POSTGRES_URL", "")
NO_POSTGRES = "GGMODULES_TEST_POSTGRES_URL not set: the PostgreSQL case is not run"
BACKENDS = [
    pytest.param("sqlite", id="sqlite"),
    pytest.param(
        "postgres", id="postgres", marks=pytest.mark.skipif(not POSTGRES_URL, reason=NO_POSTGRES)
    ),
]
# For what only PostgreSQL has (concurrent writers, its visibility rules): reported as skipped without a URL.
POSTGRES_ONLY = BACKENDS[1:]
needs_postgres = pytest.mark.skipif(not POSTGRES_URL, reason=NO_POSTGRES)
ROOT = Path(__file__).resolve().parent.parent


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


class _Credential(grpc.UnaryUnaryClientInterceptor, grpc.UnaryStreamClientInterceptor):  # type: ignore[misc]
    """Adds `authorization: Bearer` to every call: a fixed credential, none, or the wallet's pick (AUTO),
    and (AUTO) keeps the credentials the answers carry."""

    def __init__(self, credential: str) -> None:
        self._credential = credential

    def _details(self, details: Any, request: Any) -> Any:
        credential = (WALLET.credential_for(details.method, request) if self._credential == AUTO
                      else self._credential)
        metadata = [*(details.metadata or ()), *bearer(credential)]
        return details._replace(metadata=metadata) if hasattr(details, "_replace") else _Details(
            details.method, details.timeout, metadata, details.credentials, details.wait_for_ready,
            details.compression)

    def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        outcome = continuation(self._details(details, request), request)
        if self._credential == AUTO and outcome.exception() is None:
            WALLET.learn(details.method.rsplit("/", 1)[-1], outcome.result())
        return outcome

    def intercept_unary_stream(self, continuation: Any, details: Any, request: Any) -> Any:
        return continuation(self._details(details, request), request)


class _Details(grpc.ClientCallDetails):  # type: ignore[misc]
    def __init__(self, method: str, timeout: Any, metadata: Any, credentials: Any, wait_for_ready: Any,
                 compression: Any) -> None:
        self.method, self.timeout, self.metadata = method, timeout, metadata
        self.credentials, self.wait_for_ready, self.compression = credentials, wait_for_ready, compression


def open_channel(
    address: str, credential: str = AUTO, options: Sequence[tuple[str, Any]] = ()
) -> grpc.Channel:
    """A channel to a service of the suite carrying `credential` (AUTO, NONE, or a credential string);
    `options` beside the message limits (e.g. the round_robin service config for several replicas)."""
    channel = grpc.insecure_channel(address, options=[*MESSAGE_LIMITS, *options])
    return grpc.intercept_channel(channel, _Credential(credential))


class _AioCredential:
    """`_Credential` for asyncio channels (the credential only; AUTO picks from the WALLET). grpc.aio files an
    interceptor under one kind only, so each kind gets its own class below."""

    def __init__(self, credential: str) -> None:
        self._credential = credential

    def _details(self, details: Any, request: Any) -> Any:
        method = details.method.decode() if isinstance(details.method, bytes) else details.method
        credential = (WALLET.credential_for(method, request) if self._credential == AUTO
                      else self._credential)
        metadata = grpc.aio.Metadata(*(details.metadata or ()), *bearer(credential))
        return grpc.aio.ClientCallDetails(details.method, details.timeout, metadata, details.credentials,
                                          details.wait_for_ready)



class _AioUnaryCredential(_AioCredential, grpc.aio.UnaryUnaryClientInterceptor):  # type: ignore[misc]
    async def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        return await continuation(self._details(details, request), request)


class _AioStreamCredential(_AioCredential, grpc.aio.UnaryStreamClientInterceptor):  # type: ignore[misc]
    async def intercept_unary_stream(self, continuation: Any, details: Any, request: Any) -> Any:
        return await continuation(self._details(details, request), request)


def open_aio_channel(address: str, credential: str = AUTO) -> grpc.aio.Channel:
    """`open_channel` for asyncio (open it inside the loop that uses it)."""
    interceptors = [_AioUnaryCredential(credential), _AioStreamCredential(credential)]
    return grpc.aio.insecure_channel(address, options=list(MESSAGE_LIMITS), interceptors=interceptors)


class Stubs:
    """One object with every RPC a service serves, public and internal: `stubs(channel, "registry")`."""

    def __init__(self, *stubs: Any) -> None:
        self._stubs = stubs

    def __getattr__(self, name: str) -> Any:
        for stub in self._stubs:
            if hasattr(stub, name):
                return getattr(stub, name)
        raise AttributeError(name)


def stubs(channel: grpc.Channel, service: str) -> Any:
    made = {
        "modulestore": (ms_grpc.ModuleStoreServiceStub, ms_internal_grpc.ModuleStoreInternalServiceStub,
                        outbox_grpc.OutboxServiceStub),
        "registry": (reg_grpc.RegistryServiceStub, reg_internal_grpc.RegistryInternalServiceStub,
                     outbox_grpc.OutboxServiceStub),
        "transfer": (tr_grpc.TransferServiceStub,),
        "telemetry": (tel_grpc.TelemetryServiceStub,),
    }[service]
    return Stubs(*(make(channel) for make in made))


class LoopThread:
    """An asyncio loop on a daemon thread; tests submit coroutines to it and wait for the result."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True, name="servers")
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = 60) -> T:
        fut: Future[T] = asyncio.run_coroutine_threadsafe(coro, self.loop)
        return fut.result(timeout)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)


def new_database_url(backend: str, service: str, directory: Path, postgres_url: str = "") -> str:
    """A database no other test session uses: a new SQLite file, or a new PostgreSQL database created
    through `postgres_url` (default: GGMODULES_TEST_POSTGRES_URL)."""
    if backend == "sqlite":
        return f"sqlite:///{directory / f'{service}-{uuid.uuid4().hex[:8]}.db'}"
    server_url = postgres_url or POSTGRES_URL
    name = f"ggm_test_{service}_{uuid.uuid4().hex[:10]}"
    _admin(server_url, f'CREATE DATABASE "{name}"')
    return make_url(server_url).set(database=name).render_as_string(hide_password=False)


def drop_database(url: str) -> None:
    parsed = make_url(url)
    if parsed.get_backend_name() == "postgresql":
        _admin(
            parsed.set(database="postgres").render_as_string(hide_password=False),
            f'DROP DATABASE IF EXISTS "{parsed.database}" WITH (FORCE)',
        )


def _admin(server_url: str, statement: str) -> None:
    admin = create_engine(server_url, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(text(statement))
    finally:
        admin.dispose()


class InProcessService:
    """One real service on port 0 inside the test process."""

    def __init__(self, loop: LoopThread, config: ServiceConfig, observe: Observe | None = None) -> None:
        self.loop = loop
        self.config = config
        log = structlog.get_logger().bind(service=config.service)
        build = importlib.import_module(SERVICES[config.service]).build_service

        async def _start() -> RunningServer:
            return await start_server(build(config, log), config.host, 0, log, observe)

        self.running = loop.run(_start())
        self.address = self.running.address

    def stop(self) -> None:
        self.loop.run(self.running.stop(0.5))


class InProcessTelemetry:
    """Telemetry on port 0 in a loop thread, following the ModuleStore and Registry its config names, with a
    chosen retention (default: its setting)."""

    def __init__(
        self,
        loop: LoopThread,
        config: ServiceConfig,
        retention: Retention | None = None,
        recent_bytes: int | None = None,
        observe: Observe | None = None,
    ) -> None:
        self.loop = loop
        build = importlib.import_module("ggmodules.server.telemetry.app").build_service
        log = structlog.get_logger().bind(service="telemetry")

        async def _start() -> RunningServer:
            service = build(config, log, retention=retention, recent_bytes=recent_bytes)
            return await start_server(service, config.host, 0, log, observe)

        self.running = loop.run(_start())
        self.address = self.running.address

    @property
    def repository(self) -> Any:
        return self.running.service.extra["repository"]

    def stop(self) -> None:
        self.loop.run(self.running.stop(0.5))


class Suite:
    """ModuleStore, Registry and Transfer, started in-process against one backend; Telemetry, following
    them, started the first time a test asks for it (`telemetry`)."""

    def __init__(self, backend: str, directory: Path) -> None:
        self.backend = backend
        self.directory = directory
        self._telemetry: InProcessTelemetry | None = None
        self.loop = LoopThread()
        names = ("modulestore", "registry", "transfer")
        self.urls = {name: new_database_url(backend, name, directory) for name in names}
        base = service_config("modulestore")
        self.modulestore = InProcessService(
            self.loop, replace(base, service="modulestore", database_url=self.urls["modulestore"])
        )
        self.registry = InProcessService(
            self.loop,
            replace(
                base,
                service="registry",
                database_url=self.urls["registry"],
                modulestore_address=self.modulestore.address,
            ),
        )
        self.transfer = InProcessService(
            self.loop,
            replace(
                base,
                service="transfer",
                database_url=self.urls["transfer"],
                registry_address=self.registry.address,
                modulestore_address=self.modulestore.address,
            ),
        )
        self._channels: list[grpc.Channel] = []

    @property
    def telemetry(self) -> InProcessTelemetry:
        """Telemetry following this suite's ModuleStore and Registry (it catches up on what they already
        hold when it starts)."""
        if self._telemetry is None:
            self.urls["telemetry"] = new_database_url(self.backend, "telemetry", self.directory)
            config = service_config(
                "telemetry",
                database_url=self.urls["telemetry"],
                modulestore_address=self.modulestore.address,
                registry_address=self.registry.address,
            )
            self._telemetry = InProcessTelemetry(self.loop, config)
        return self._telemetry

    def channel(self, address: str, credential: str = AUTO) -> grpc.Channel:
        """A channel to one of the suite's services, closed with the suite (see `open_channel`)."""
        ch = open_channel(address, credential)
        self._channels.append(ch)
        return ch

    def close(self) -> None:
        for ch in self._channels:
            ch.close()
        if self._telemetry is not None:
            self._telemetry.stop()
        self.transfer.stop()
        self.registry.stop()
        self.modulestore.stop()
        self.loop.close()
        for url in self.urls.values():
            drop_database(url)


DEFAULT_LAUNCHER = "ggmodules.cli.main"


class ServiceProcess:
    """One service as its own OS process, started with `--port 0`; its address comes from its ready line."""

    def __init__(
        self, service: str, *args: str, env: dict[str, str] | None = None, launcher: str = DEFAULT_LAUNCHER
    ) -> None:
        """`launcher`: the module run with `-m` (a test launcher may add test-only hooks, e.g.
        tests/transfer/crashing.py)."""
        self.service = service
        # The log goes to a file, not a pipe nobody drains (a full pipe would block the service).
        self._log = tempfile.NamedTemporaryFile(prefix=f"{service}-", suffix=".log", delete=False)  # noqa: SIM115
        self.proc = subprocess.Popen(
            [sys.executable, "-m", launcher, service, "--port", "0", *args],
            stdout=subprocess.PIPE,
            stderr=self._log,
            text=True,
            cwd=ROOT,
            env={**os.environ, **(env or {})},
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line.startswith(f"ready {service} "):
            self.proc.kill()
            self.proc.wait(10)
            raise RuntimeError(f"{service} did not start: {line!r}\n{self.log_text()}")
        self.address = line.split()[2]

    def log_text(self) -> str:
        """What the service logged to stderr so far (structlog JSON lines)."""
        return Path(self._log.name).read_text()

    def terminate(self, timeout: float = 15) -> int:
        self.proc.terminate()
        return self.proc.wait(timeout)

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait(15)


@contextmanager
def processes(*specs: tuple[str, tuple[str, ...]]) -> Iterator[list[ServiceProcess]]:
    started: list[ServiceProcess] = []
    try:
        for service, args in specs:
            started.append(ServiceProcess(service, *args))
        yield started
    finally:
        for p in reversed(started):
            if p.proc.poll() is None:
                p.kill()


def error_metadata(err: grpc.RpcError) -> dict[str, str]:
    """The ErrorInfo metadata of a refusal: the machine-readable particulars (which agent, which store)."""
    st = rpc_status.from_call(err)
    for d in st.details if st is not None else ():
        info = error_details_pb2.ErrorInfo()
        if d.Unpack(info):
            return dict(info.metadata)
    return {}


def status_of(err: grpc.RpcError) -> tuple[grpc.StatusCode, str]:
    """The code and ErrorInfo reason of a refusal."""
    st = rpc_status.from_call(err)
    reason = ""
    if st is not None:
        for d in st.details:
            info = error_details_pb2.ErrorInfo()
            if d.Unpack(info):
                reason = info.reason
    return err.code(), reason
