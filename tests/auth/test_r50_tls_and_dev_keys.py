"""R50 on the wire: `ggmodules up`'s development keys and CA, services serving TLS and calling each other
over it with the service credential, the SDK following along; --insecure-dev says so; a service without its
keys does not start."""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest

from ggmodules.cli.dev_keys import ensure_dev_keys
from ggmodules.modulestore.v1 import modulestore_service_pb2 as svc
from ggmodules.sdk import Client, ClientConfig, Profile
from tests.harness import ServiceProcess, open_channel, processes, stubs


def flags(var: Path, service: str) -> tuple[str, ...]:
    return (
        "--database-url", f"sqlite:///{var / f'{service}.db'}",
        "--public-key-file", str(var / "auth" / "credentials.pub"),
        "--signing-key-file", str(var / "auth" / "credentials.key"),
        "--service-token-file", str(var / "auth" / "service.jwt"),
        "--tls-cert-file", str(var / "tls" / f"{service}.crt"),
        "--tls-key-file", str(var / "tls" / f"{service}.key"),
        "--tls-ca-file", str(var / "tls" / "ca.crt"),
    )


def test_r50_dev_keys_serve_tls_and_the_sdk_runs_a_session_over_it(tmp_path: Path) -> None:
    var = tmp_path / "var"
    made = ensure_dev_keys(var)
    assert {Path(p).name for p in made} >= {"credentials.key", "service.jwt", "operator.jwt", "ca.crt",
                                             "modulestore.crt", "registry.crt"}
    assert ensure_dev_keys(var) == []  # kept on the next start
    with processes(("modulestore", flags(var, "modulestore"))) as (ms,), processes(
        ("registry", (*flags(var, "registry"), "--modulestore-address", ms.address))
    ) as (registry,):
        config = ClientConfig(operator_credential=(var / "auth" / "operator.jwt").read_text().strip(),
                              tls_ca_file=str(var / "tls" / "ca.crt"))
        with Client(registry.address, ms.address, config=config) as gg:
            run = gg.create_run("tls", [Profile("planner", tasks=True)])
            agent = gg.open_instance(run.id, "planner")  # Registry binds it over TLS, as a service
            agent.tasks.create("over TLS")
            assert [t.title for t in agent.tasks.contents().tasks] == ["over TLS"]
        # Plaintext to a TLS port gets nowhere.
        plain = stubs(open_channel(ms.address), "modulestore")
        with pytest.raises(grpc.RpcError) as refused:
            plain.ListTools(svc.ListToolsRequest(), timeout=5)
        assert refused.value.code() is grpc.StatusCode.UNAVAILABLE


def test_r50_insecure_dev_checks_nothing_and_says_so_in_the_log() -> None:
    with processes(("modulestore", ("--insecure-dev",))) as (ms,):
        plain = stubs(open_channel(ms.address, credential=""), "modulestore")
        assert plain.ListTools(svc.ListToolsRequest(), timeout=10).tools
        assert "INSECURE DEV MODE" in ms.log_text()


def test_r50_a_service_without_its_keys_does_not_start_and_says_how_to_fix_it(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError) as failed:
        ServiceProcess("modulestore", "--public-key-file", str(tmp_path / "missing.pub"))
    assert "ggmodules up" in str(failed.value) and "--insecure-dev" in str(failed.value)
