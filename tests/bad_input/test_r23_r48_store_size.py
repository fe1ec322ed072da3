"""R23, R47, R48: no store grows past what an RPC can return.

On main four 15 MiB writes made a 59 MiB history that neither GetStore (page_size 0) nor RenderPrompt could
return: grpc failed to send the answer and the client saw RESOURCE_EXHAUSTED without an ErrorInfo. Now
ModuleStore holds every store to a size limit (GGMODULES_MODULESTORE_MAX_STORE_BYTES, 2 MiB by default,
core/modules/caps.py) and refuses a write past it like any cap (RESOURCE_EXHAUSTED, CAP_EXCEEDED), store
unchanged; an agent with every kind at that limit still renders. An answer that would not fit in a message
anyway (a limit raised too far) is refused TOO_LARGE with its ErrorInfo.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from ggmodules.common.v1 import common_pb2 as c
from ggmodules.core.modules.caps import DEFAULT_STORE_BYTES, ITEM_BYTES
from ggmodules.modulestore.v1 import modulestore_pb2 as ms
from ggmodules.modulestore.v1 import modulestore_service_pb2 as svc
from ggmodules.modulestore.v1 import modulestore_service_pb2_grpc as svc_grpc
from ggmodules.runtime.channels import MAX_MESSAGE_BYTES
from tests.harness import (
    InProcessService,
    Suite,
    drop_database,
    new_database_url,
    refusal_of,
    refused,
    service_config,
    stubs,
)
from tests.harness.modulestore import Agent, contents, new_run, open_agent, write

TEXT = "y" * 250_000  # just under the 256 KiB one text may hold
SAID = [ms.MessageInput(role="user", content=TEXT)]
KINDS = (c.KIND_HISTORY, c.KIND_MEMORIES, c.KIND_TASKS, c.KIND_BOARD, c.KIND_SKILLS, c.KIND_ARCHIVE)


def one_write(kind: int, i: int) -> dict[str, Any]:
    """A write adding about 250 kB to a store of `kind`, as much as one text may carry."""
    return {
        c.KIND_HISTORY: {"append_messages": svc.AppendMessages(messages=SAID)},
        c.KIND_MEMORIES: {"write_file": svc.WriteFile(name=f"file-{i}", index_line=TEXT)},
        c.KIND_TASKS: {"create_task": svc.CreateTask(title=f"task {i}", description=TEXT)},
        c.KIND_BOARD: {"create_issue": svc.CreateIssue(prefix="BUG", title=f"issue {i}", body=TEXT)},
        c.KIND_SKILLS: {"put_skill": svc.PutSkill(name=f"skill-{i}", description=TEXT)},
        c.KIND_ARCHIVE: {"archive_thread": svc.ArchiveThread(title=f"thread {i}", messages=SAID)},
    }[kind]


def fill(modulestore: svc_grpc.ModuleStoreServiceStub, agent: Agent, kind: int) -> grpc.RpcError:
    """Writes to the store until it refuses; the refusal."""
    for i in range(20):
        try:
            write(modulestore, agent, kind, **one_write(kind, i))
        except grpc.RpcError as err:
            return err
    raise AssertionError(f"{c.Kind.Name(kind)} grew past {20 * len(TEXT)} bytes without a refusal")


def test_r23_r48_every_kind_stops_at_its_size_limit_unchanged_and_a_full_agent_still_renders(
    suite: Suite,
) -> None:
    modulestore = stubs(suite.channel(suite.modulestore.address), "modulestore")
    agent = open_agent(modulestore, new_run(), "planner-0", strategy=c.MEMORY_STRATEGY_MARKDOWN_INDEX)
    for kind in KINDS:
        err = fill(modulestore, agent, kind)
        code, reason, metadata, _ = refusal_of(err)
        assert (code, reason) == (grpc.StatusCode.RESOURCE_EXHAUSTED, "CAP_EXCEEDED"), c.Kind.Name(kind)
        assert (metadata["limit"], metadata["cap"]) == ("service", str(DEFAULT_STORE_BYTES))
        before = contents(modulestore, agent, kind)
        again = refused(lambda kind=kind: write(modulestore, agent, kind, **one_write(kind, 99)))
        assert again.info is not None
        assert contents(modulestore, agent, kind) == before  # R48: contents and figures as they were
        f = before.store.figures
        size = f.bytes + ITEM_BYTES * f.items
        assert DEFAULT_STORE_BYTES - len(TEXT) - 2 * ITEM_BYTES < size <= DEFAULT_STORE_BYTES
    prompt = modulestore.RenderPrompt(svc.RenderPromptRequest(run_id=agent.run_id, agent_id=agent.agent_id))
    assert {x.kind for x in prompt.contributions} == set(agent.roster)
    assert 4 * (DEFAULT_STORE_BYTES - len(TEXT)) < prompt.ByteSize() < MAX_MESSAGE_BYTES


@pytest.fixture()
def roomy_modulestore(suite: Suite, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A ModuleStore whose stores may grow to 64 MiB, far past what one answer can carry."""
    monkeypatch.setenv("GGMODULES_MODULESTORE_MAX_STORE_BYTES_HISTORY", str(64 * 1024 * 1024))
    url = new_database_url(suite.backend, "modulestore", tmp_path)
    config = service_config("modulestore", database_url=url)
    service = InProcessService(suite.loop, config)
    yield service.address
    service.stop()
    drop_database(url)


def test_r47_an_answer_larger_than_a_message_is_refused_too_large_with_its_error_info(
    suite: Suite, roomy_modulestore: str
) -> None:
    modulestore = stubs(suite.channel(roomy_modulestore), "modulestore")
    agent: Agent = open_agent(modulestore, new_run(), "planner-0")
    big = svc.AppendMessages(messages=[ms.MessageInput(role="user", content=TEXT)] * 24)  # 6 MB
    for _ in range(3):
        write(modulestore, agent, c.KIND_HISTORY, append_messages=big)
    read = svc.GetStoreRequest(run_id=agent.run_id, store_id=agent[c.KIND_HISTORY], agent_id=agent.agent_id)
    prompt = svc.RenderPromptRequest(run_id=agent.run_id, agent_id=agent.agent_id)
    for call in (lambda: modulestore.GetStore(read), lambda: modulestore.RenderPrompt(prompt)):
        code, reason, metadata, _ = refused(call)
        assert (code, reason) == (grpc.StatusCode.RESOURCE_EXHAUSTED, "TOO_LARGE")
        assert int(metadata["size"]) > int(metadata["limit"]) == MAX_MESSAGE_BYTES
    page = modulestore.GetStore(svc.GetStoreRequest(**{**_fields(read), "page_size": 10}))
    assert len(page.contents.history.messages) == 10 and page.contents.history.message_count == 72


def _fields(request: svc.GetStoreRequest) -> dict[str, Any]:
    return {f.name: v for f, v in request.ListFields()}
