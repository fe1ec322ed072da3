"""R17: forking an agent applies the copy rules per kind; the copy's memories are attributed to the copy."""

from __future__ import annotations

from typing import Any

from ggmodules.common.v1 import common_pb2, module_pb2
from ggmodules.modulestore.v1 import modulestore_service_pb2 as ms
from ggmodules.modulestore.v1.modulestore_pb2 import MessageInput
from ggmodules.modulestore.v1.modulestore_service_pb2_grpc import ModuleStoreServiceStub as ModuleStoreStub
from ggmodules.registry.v1.registry_service_pb2_grpc import RegistryServiceStub as RegistryStub
from tests.harness.registry import create_run, fork, full_profile, open_instance, rows, store_ids


class Agent:
    """One holder's view of ModuleStore: writes attributed to it, reads as it sees them."""

    def __init__(self, modulestore: ModuleStoreStub, run_id: str, agent_id: str) -> None:
        self.modulestore, self.run_id, self.agent_id = modulestore, run_id, agent_id

    def write(self, store_id: str, **op: Any) -> ms.WriteResponse:
        request = ms.WriteRequest(run_id=self.run_id, agent_id=self.agent_id, store_id=store_id, **op)
        response: ms.WriteResponse = self.modulestore.Write(request)
        return response

    def read(self, store_id: str) -> module_pb2.ModuleContents:
        request = ms.GetStoreRequest(run_id=self.run_id, agent_id=self.agent_id, store_id=store_id)
        contents: module_pb2.ModuleContents = self.modulestore.GetStore(request).contents
        return contents

    def say(self, store_id: str, text: str) -> None:
        self.write(
            store_id, append_messages=ms.AppendMessages(messages=[MessageInput(role="user", content=text)])
        )

    def thread(self, store_id: str) -> list[str]:
        return [m.content for m in self.read(store_id).history.messages]


def test_r17_a_fork_gets_its_own_window_and_tasks_a_shared_board_and_skills_in_halves(
    registry: RegistryStub, modulestore: ModuleStoreStub
) -> None:
    run = create_run(registry, full_profile("coder"))
    original = open_instance(registry, run.run_id, "coder")
    a, held_by_a = Agent(modulestore, run.run_id, original.agent_id), store_ids(original)
    a.write(held_by_a["history"], set_system_prompt=ms.SetSystemPrompt(text="you are coder-0"))
    a.say(held_by_a["history"], "hello")
    a.write(held_by_a["memories"], write_pad=ms.WritePad(text="note by the original"))
    first_task = a.write(held_by_a["tasks"], create_task=ms.CreateTask(title="first")).task_id
    a.write(held_by_a["board"], create_issue=ms.CreateIssue(prefix="ABC", title="shared work"))
    a.write(held_by_a["skills"], put_skill=ms.PutSkill(name="grep", description="search", body="use grep"))
    a.write(held_by_a["skills"], read_skill=ms.ReadSkill(name="grep"))
    a.write(
        held_by_a["archive"],
        archive_thread=ms.ArchiveThread(
            title="old", messages=[MessageInput(role="user", content="long ago")]
        ),
    )

    copy = fork(registry, run.run_id, original.agent_id)
    b, held_by_b, roster = Agent(modulestore, run.run_id, copy.agent_id), store_ids(copy), rows(copy)
    for word in ("history", "memories", "tasks", "archive"):
        assert held_by_b[word] != held_by_a[word], word
        assert roster[word].origin == common_pb2.ORIGIN_FORKED, word
    assert held_by_b["board"] == held_by_a["board"] and roster["board"].origin == common_pb2.ORIGIN_RUN
    assert held_by_b["skills"] == held_by_a["skills"]

    # An independent window: the thread is copied, the system prompt slot is empty (R24), writes diverge.
    window = b.read(held_by_b["history"]).history
    assert [m.content for m in window.messages] == ["hello"] and not window.system_prompt_set
    b.say(held_by_b["history"], "from the copy")
    a.say(held_by_a["history"], "from the original")
    assert a.thread(held_by_a["history"]) == ["hello", "from the original"]
    assert b.thread(held_by_b["history"]) == ["hello", "from the copy"]

    # An independent task list whose ids carry on from the original's.
    second_task = b.write(held_by_b["tasks"], create_task=ms.CreateTask(title="second")).task_id
    assert second_task == first_task + 1
    assert [t.title for t in a.read(held_by_a["tasks"]).tasks.tasks] == ["first"]
    assert [t.title for t in b.read(held_by_b["tasks"]).tasks.tasks] == ["first", "second"]

    # One board: what the copy files the original reads, and the prefix counter is not handed out twice.
    filed = b.write(
        held_by_b["board"], create_issue=ms.CreateIssue(prefix="ABC", title="by the copy")
    ).issue_id
    assert filed == "ABC-2"
    assert [i.id for i in a.read(held_by_a["board"]).board.issues] == ["ABC-1", "ABC-2"]

    # Skills in halves: one catalogue, the read set copied and then the copy's own.
    assert list(b.read(held_by_b["skills"]).skills.read_set) == ["grep"]
    a.write(held_by_a["skills"], put_skill=ms.PutSkill(name="sed", description="edit", body="use sed"))
    assert [s.name for s in b.read(held_by_b["skills"]).skills.catalogue] == ["grep", "sed"]
    b.write(held_by_b["skills"], read_skill=ms.ReadSkill(name="sed"))
    assert list(b.read(held_by_b["skills"]).skills.read_set) == ["grep", "sed"]
    assert list(a.read(held_by_a["skills"]).skills.read_set) == ["grep"]

    # The archive is forked.
    b.write(
        held_by_b["archive"],
        archive_thread=ms.ArchiveThread(
            title="new", messages=[MessageInput(role="user", content="just now")]
        ),
    )
    assert [t.title for t in a.read(held_by_a["archive"]).archive.threads] == ["old"]
    assert [t.title for t in b.read(held_by_b["archive"]).archive.threads] == ["old", "new"]


def test_r17_the_copys_memories_are_restamped_and_its_writes_attributed_to_it(
    registry: RegistryStub, modulestore: ModuleStoreStub
) -> None:
    run = create_run(registry, full_profile("coder"))
    original = open_instance(registry, run.run_id, "coder")
    a = Agent(modulestore, run.run_id, original.agent_id)
    pad_a = rows(original)["memories"].store_id
    a.write(pad_a, write_pad=ms.WritePad(text="note by the original"))

    copy = fork(registry, run.run_id, original.agent_id)
    b = Agent(modulestore, run.run_id, copy.agent_id)
    pad_b = rows(copy)["memories"].store_id
    assert [(e.body, e.agent_id) for e in b.read(pad_b).memories.entries] == [
        ("note by the original", copy.agent_id)
    ]
    b.write(pad_b, write_pad=ms.WritePad(text="note by the copy"))
    assert [(e.body, e.agent_id) for e in b.read(pad_b).memories.entries] == [
        ("note by the copy", copy.agent_id)
    ]
    assert [(e.body, e.agent_id) for e in a.read(pad_a).memories.entries] == [
        ("note by the original", original.agent_id)
    ]


def test_r17_memories_scoped_to_the_agent_or_inherited_are_shared_by_a_fork(
    registry: RegistryStub, modulestore: ModuleStoreStub
) -> None:
    run = create_run(
        registry,
        full_profile("keeper", scope=common_pb2.MEMORY_SCOPE_AGENT),
        full_profile("heir", scope=common_pb2.MEMORY_SCOPE_INHERITED),
    )
    for name, origin in (("keeper", common_pb2.ORIGIN_PROFILE), ("heir", common_pb2.ORIGIN_INHERITED)):
        original = open_instance(registry, run.run_id, name)
        copy = fork(registry, run.run_id, original.agent_id)
        shared, mine = rows(copy)["memories"], rows(original)["memories"]
        assert (shared.store_id, shared.origin) == (mine.store_id, origin), name
        Agent(modulestore, run.run_id, copy.agent_id).write(
            shared.store_id, write_pad=ms.WritePad(text=f"written by {copy.agent_id}")
        )
        entries = Agent(modulestore, run.run_id, original.agent_id).read(mine.store_id).memories.entries
        assert [(e.body, e.agent_id) for e in entries] == [(f"written by {copy.agent_id}", copy.agent_id)], (
            name
        )
