"""What reaches the prompt (R4-R10), returned per holder by RenderPrompt."""

from __future__ import annotations

from ggmodules.common.v1 import common_pb2 as c
from ggmodules.modulestore.v1 import modulestore_pb2 as ms
from ggmodules.modulestore.v1 import modulestore_service_pb2 as svc
from tests.modulestore.plans import KINDS, Agent, Stub, append, b, bind, new_run, open_agent, write


def prompt(stub: Stub, agent: Agent) -> dict[int, ms.Contribution]:
    resp = stub.RenderPrompt(svc.RenderPromptRequest(run_id=agent.run_id, agent_id=agent.agent_id))
    return {x.kind: x for x in resp.contributions}


def sections(x: ms.Contribution) -> list[tuple[str, str, str]]:
    return [(m.section, m.role, m.content) for m in x.messages]


def test_r4_the_window_renders_slot_first_then_thread_views_and_pins(modulestore: Stub) -> None:
    a = open_agent(modulestore, new_run(), "coder-0")
    append(modulestore, a, "question", start_turn=True)
    write(modulestore, a, c.KIND_HISTORY, pin_block=svc.PinBlock(block_id="goal", content="finish"))
    write(modulestore, a, c.KIND_HISTORY, open_view=svc.OpenView(view_id="a.py", content="x = 1"))
    write(modulestore, a, c.KIND_HISTORY, set_system_prompt=svc.SetSystemPrompt(text="You are coder-0."))
    assert sections(prompt(modulestore, a)[c.KIND_HISTORY]) == [
        ("system_prompt", "system", "You are coder-0."),
        ("thread", "user", "question"),
        ("open_view", "system", "[open view: a.py]\nx = 1"),
        ("pinned_block", "system", "[pinned: goal]\nfinish"),
    ]


def test_r5_tasks_are_always_a_message_of_their_own(modulestore: Stub) -> None:
    a = open_agent(modulestore, new_run(), "coder-0")
    empty = sections(prompt(modulestore, a)[c.KIND_TASKS])
    assert len(empty) == 1 and empty[0][0] == "tasks"
    write(modulestore, a, c.KIND_TASKS, create_task=svc.CreateTask(title="design"))
    write(modulestore, a, c.KIND_TASKS, create_task=svc.CreateTask(title="build", blocked_by=[1]))
    [(section, role, text)] = sections(prompt(modulestore, a)[c.KIND_TASKS])
    assert (section, role) == ("tasks", "system")
    assert text == "Tasks:\n- #1 [open] design\n- #2 [open] build (blocked by #1)"


def test_r6_scratchpad_renders_the_pad(modulestore: Stub) -> None:
    a = open_agent(modulestore, new_run(), "coder-0")
    write(modulestore, a, c.KIND_MEMORIES, write_pad=svc.WritePad(text="remember the milk"))
    assert sections(prompt(modulestore, a)[c.KIND_MEMORIES]) == [
        ("scratchpad", "system", "Scratchpad:\nremember the milk")
    ]


def test_r6_markdown_index_renders_the_index_not_the_bodies(modulestore: Stub) -> None:
    a = open_agent(modulestore, new_run(), "coder-0", strategy=c.MEMORY_STRATEGY_MARKDOWN_INDEX)
    write(
        modulestore,
        a,
        c.KIND_MEMORIES,
        write_file=svc.WriteFile(name="style.md", body="SECRET BODY", index_line="how we write code"),
    )
    [(section, _, text)] = sections(prompt(modulestore, a)[c.KIND_MEMORIES])
    assert section == "memory_index" and "style.md: how we write code" in text and "SECRET BODY" not in text


def test_r7_skills_render_the_catalogue_and_only_read_bodies(modulestore: Stub) -> None:
    a = open_agent(modulestore, new_run(), "coder-0")
    write(
        modulestore,
        a,
        c.KIND_SKILLS,
        put_skill=svc.PutSkill(name="git", description="version control", body="GIT BODY"),
    )
    write(
        modulestore,
        a,
        c.KIND_SKILLS,
        put_skill=svc.PutSkill(name="sql", description="queries", body="SQL BODY"),
    )
    before = sections(prompt(modulestore, a)[c.KIND_SKILLS])
    assert [s for s, _, _ in before] == ["skills_catalogue"]
    assert "git: version control" in before[0][2] and "BODY" not in before[0][2]
    write(modulestore, a, c.KIND_SKILLS, read_skill=svc.ReadSkill(name="sql"))
    after = sections(prompt(modulestore, a)[c.KIND_SKILLS])
    assert after[1:] == [("skill_body", "system", "[skill: sql]\nSQL BODY")]


def test_r8_board_and_archive_contribute_nothing(modulestore: Stub) -> None:
    a = open_agent(modulestore, new_run(), "coder-0")
    write(modulestore, a, c.KIND_BOARD, create_issue=svc.CreateIssue(prefix="ABC", title="an issue"))
    write(
        modulestore,
        a,
        c.KIND_ARCHIVE,
        archive_thread=svc.ArchiveThread(
            title="old", messages=[ms.MessageInput(role="user", content="long ago")]
        ),
    )
    rendered = prompt(modulestore, a)
    for kind in (c.KIND_BOARD, c.KIND_ARCHIVE):
        assert rendered[kind].contributes_nothing and list(rendered[kind].messages) == []
    everything = " ".join(m.content for x in rendered.values() for m in x.messages)
    assert "an issue" not in everything and "long ago" not in everything


def test_r10_contributions_are_per_holder_in_kind_order(modulestore: Stub) -> None:
    run = new_run()
    a = open_agent(modulestore, run, "coder-0")
    helper = bind(
        modulestore,
        run,
        "helper-0",
        [
            b(c.KIND_HISTORY, ms.BIND_ACTION_CREATE),
            b(c.KIND_SKILLS, ms.BIND_ACTION_NAMED, named_key="skills/coder", skills_directory="coder"),
        ],
    )
    write(modulestore, a, c.KIND_SKILLS, put_skill=svc.PutSkill(name="git", description="d", body="GIT"))
    write(modulestore, a, c.KIND_SKILLS, read_skill=svc.ReadSkill(name="git"))
    append(modulestore, helper, "helper's own thread")
    mine, theirs = prompt(modulestore, a), prompt(modulestore, helper)
    assert list(mine) == KINDS and list(theirs) == [c.KIND_HISTORY, c.KIND_SKILLS]
    assert [m.section for m in mine[c.KIND_SKILLS].messages] == ["skills_catalogue", "skill_body"]
    assert [m.section for m in theirs[c.KIND_SKILLS].messages] == ["skills_catalogue"]
    assert [m.content for m in theirs[c.KIND_HISTORY].messages] == ["helper's own thread"]
    assert [m.content for m in mine[c.KIND_HISTORY].messages] == []
