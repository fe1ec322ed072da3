"""Both consoles send a credential with every call to Telemetry as `authorization: Bearer <jwt>`: `--token`,
else GGMODULES_TOKEN, else the operator credential `ggmodules up` wrote (GGMODULES_OPERATOR_CREDENTIAL[_FILE],
./var/auth/operator.jwt). The Telemetry here is the real one with auth on (R50): a run's observer credential
opens that run's views, another run's does not, and no credential is refused UNAUTHENTICATED."""

from __future__ import annotations

import os
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from ggmodules.registry.v1 import registry_service_pb2 as reg
from ggmodules.web.telemetry import credential_metadata, token_of
from tests.harness import CREDENTIALS, ROOT, ServiceProcess, open_channel, processes, stubs
from tests.harness.registry import full_profile
from tests.web.conftest import WebConsole

# No credential at all: neither the token nor the operator credential the harness puts in the environment.
ANONYMOUS = {"GGMODULES_TOKEN": "", "GGMODULES_OPERATOR_CREDENTIAL": ""}


@dataclass(frozen=True)
class Runs:
    telemetry: ServiceProcess
    run_id: str
    observer: str
    other_observer: str


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runs]:
    db = Path(tmp_path_factory.mktemp("web-auth"))
    with processes(("modulestore", ("--database-url", f"sqlite:///{db}/ms.db"))) as (ms,), processes(
        ("registry", ("--database-url", f"sqlite:///{db}/reg.db", "--modulestore-address", ms.address)),
    ) as (registry,), processes(
        ("telemetry", ("--database-url", f"sqlite:///{db}/tel.db", "--modulestore-address", ms.address,
                       "--registry-address", registry.address)),
    ) as (tel,):
        with open_channel(registry.address) as channel:
            rs = stubs(channel, "registry")
            made = [rs.CreateRun(reg.CreateRunRequest(name=name, profiles=[full_profile("planner")]))
                    for name in ("watched", "other")]
            rs.OpenInstance(reg.OpenInstanceRequest(run_id=made[0].run.run_id, profile="planner"))
        yield Runs(tel, made[0].run.run_id, made[0].observer_credential, made[1].observer_credential)


def console(address: str, run_id: str, *extra: str, env: dict[str, str] | None = None
            ) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ggmodules.cli.main", "console", run_id, "--once", "--telemetry-address",
         address, *extra],
        capture_output=True, text=True, timeout=60, cwd=ROOT, env={**os.environ, **(env or {})},
    )


def test_the_token_comes_from_the_flag_then_the_environment_then_the_operator_credential() -> None:
    assert token_of("a", {"GGMODULES_TOKEN": "b", "GGMODULES_OPERATOR_CREDENTIAL": "c"}) == "a"
    assert token_of(None, {"GGMODULES_TOKEN": "b", "GGMODULES_OPERATOR_CREDENTIAL": "c"}) == "b"
    assert token_of(None, {"GGMODULES_OPERATOR_CREDENTIAL": "c"}) == "c"
    assert token_of(None, {"GGMODULES_OPERATOR_CREDENTIAL_FILE": ""}) == "" and credential_metadata("") == ()
    assert credential_metadata("t") == (("authorization", "Bearer t"),)


def test_the_terminal_console_opens_a_run_with_its_credential_and_only_that_run(runs: Runs) -> None:
    address = runs.telemetry.address
    out = console(address, runs.run_id, "--token", runs.observer)
    assert out.returncode == 0, out.stderr
    assert "planner-0" in out.stdout
    by_env = console(address, runs.run_id, env={"GGMODULES_TOKEN": runs.observer})
    assert by_env.returncode == 0 and "planner-0" in by_env.stdout, by_env.stderr
    # No flag and no GGMODULES_TOKEN: the operator credential (here the harness's, as ./var/auth would give).
    assert CREDENTIALS.operator == os.environ["GGMODULES_OPERATOR_CREDENTIAL"]
    by_operator = console(address, runs.run_id, env={"GGMODULES_TOKEN": ""})
    assert by_operator.returncode == 0 and "planner-0" in by_operator.stdout, by_operator.stderr

    elsewhere = console(address, runs.run_id, "--token", runs.other_observer)
    assert elsewhere.returncode == 2 and "PERMISSION_DENIED" in elsewhere.stderr, elsewhere.stderr
    assert f"opens run {runs.run_id}" not in elsewhere.stderr and runs.run_id in elsewhere.stderr
    refused = console(address, runs.run_id, env=ANONYMOUS)
    assert refused.returncode == 2 and "UNAUTHENTICATED: this call carries no credential" in refused.stderr


def test_the_web_console_sends_its_credential_and_shows_a_refusal(runs: Runs) -> None:
    web = WebConsole(runs.telemetry.address, "--token", runs.observer)
    try:
        with urllib.request.urlopen(f"{web.url}/runs/{runs.run_id}/agents", timeout=30) as answer:
            assert answer.status == 200
            assert "planner" in answer.read().decode()
    finally:
        web.close()
    anonymous = WebConsole(runs.telemetry.address, env=ANONYMOUS)
    try:
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(f"{anonymous.url}/runs/{runs.run_id}/agents", timeout=30)
        assert refused.value.code == 401
        assert "carries no credential" in refused.value.read().decode()
    finally:
        anonymous.close()
