"""`--only auth`: append through the credential check beside append on a --insecure-dev ModuleStore."""

from __future__ import annotations

import tempfile
import uuid
from pathlib import Path

from grpc_health.v1 import health_pb2, health_pb2_grpc

from ggmodules.common.v1 import common_pb2
from ggmodules.modulestore.v1 import modulestore_service_pb2
from tests.bench.common import (
    append_request,
    bind_history,
    percentile,
    timed,
)
from tests.harness import (
    ServiceProcess,
    drop_database,
    new_database_url,
    open_channel,
    stubs,
)


def measure(directory: Path, quick: bool) -> None:
    """Append p50 through the credential check beside the same append on a ModuleStore started with
    --insecure-dev (no check), measured in alternating batches so both see the same machine load."""
    urls = [new_database_url("sqlite", "modulestore", directory) for _ in range(2)]
    on = ServiceProcess("modulestore", "--database-url", urls[0], "--log-level", "warning")
    off = ServiceProcess("modulestore", "--database-url", urls[1], "--log-level", "warning", "--insecure-dev")
    channels = [open_channel(on.address), open_channel(off.address, credential="")]
    try:
        stubs_on, stubs_off = (stubs(ch, "modulestore") for ch in channels)
        run = f"run-{uuid.uuid4().hex[:12]}"
        store_on = bind_history(stubs_on, run, "appender-0")
        store_off = bind_history(stubs_off, run, "appender-0")
        tools = modulestore_service_pb2.ListToolsRequest(kind=common_pb2.KIND_HISTORY)
        check = health_pb2.HealthCheckRequest()
        health = health_pb2_grpc.HealthStub(channels[0])
        samples: dict[str, list[float]] = {"on": [], "off": [], "noop": [], "auth_noop": []}
        for batch in range(6 if quick else 30):
            keep = batch > 0  # the first batch warms up
            got = {
                "noop": timed(lambda: health.Check(check), 100),
                "auth_noop": timed(lambda: stubs_on.ListTools(tools), 100),
                "on": timed(lambda: stubs_on.Write(append_request(run, "appender-0", store_on)), 100),
                "off": timed(lambda: stubs_off.Write(append_request(run, "appender-0", store_off)), 100),
            }
            if keep:
                for key, values in got.items():
                    samples[key] += values
    finally:
        for ch in channels:
            ch.close()
        on.terminate()
        off.terminate()
        for url in urls:
            drop_database(url)
    p50 = {key: percentile(values, 0.5) for key, values in samples.items()}
    added = (p50["on"] - p50["off"]) / p50["off"] * 100
    print("\nCredentials (ModuleStore, own process, SQLite; alternating batches) — µs")
    print(f"  no-op unary RPC (health Check, no credential)   p50 {p50['noop']:8.0f}")
    print(f"  authenticated no-op (ListTools of one kind)     p50 {p50['auth_noop']:8.0f}")
    print(f"  history append, auth on                         p50 {p50['on']:8.0f}")
    print(f"  history append, auth off (--insecure-dev)       p50 {p50['off']:8.0f}")
    verdict = "met" if added <= 10 else "MISSED"
    print(f"  the credential check adds {added:+.1f}% to append p50 (target <= 10%: {verdict})")
def figures(quick: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        measure(Path(tmp), quick)
