"""The TypeScript client's write session (clients/typescript/src/session.ts) against the real services:
`dist/examples/write-session.js` pipelines twenty appends, writes a task, has one refused over its cap and
writes on; the Python stubs then read what it wrote."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from ggmodules.modulestore.v1 import modulestore_service_pb2 as ms_pb2
from tests.harness import ROOT, Suite, stubs


def test_r23_r49_a_node_write_session_is_acknowledged_in_order_and_refuses_one_write_alone(
    suite: Suite, ts_client: Path
) -> None:
    proc = subprocess.run(
        ["node", str(ts_client / "examples" / "write-session.js"),
         "--registry", suite.registry.address, "--modulestore", suite.modulestore.address],
        capture_output=True, text=True, timeout=60, cwd=ROOT, check=False,
    )
    assert proc.returncode == 0, f"write-session.js exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    seen = json.loads(proc.stdout.splitlines()[-1])
    assert seen["last_seqs"] == list(range(1, 21)) and seen["task_id"] == 1 and seen["after"] == 21
    assert seen["refusal"]["code"] == "RESOURCE_EXHAUSTED" and seen["refusal"]["reason"] == "CAP_EXCEEDED"
    modulestore = stubs(suite.channel(suite.modulestore.address), "modulestore")
    window = modulestore.GetStore(ms_pb2.GetStoreRequest(
        run_id=seen["run_id"], agent_id=seen["agent_id"], store_id="history-0")).contents.history
    assert [m.content for m in window.messages] == [f"part {i}" for i in range(20)] + ["after the refusal"]
    tasks = modulestore.GetStore(ms_pb2.GetStoreRequest(
        run_id=seen["run_id"], agent_id=seen["agent_id"], store_id="tasks-0")).contents.tasks
    assert [t.title for t in tasks.tasks] == ["one"]
