"""What reaches the prompt (R4-R10), returned per holder by RenderPrompt."""

from __future__ import annotations

from ggmodules.common.v1 import common_pb2 as c
from ggmodules.modulestore.v1 import modulestore_pb2 as ms
from ggmodules.modulestore.v1 import modulestore_service_pb2 as svc
from tests.harness.modulestore import KINDS, Agent, Stub, append, b, bind, new_run, open_agent, write


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
    append(modulestore, a, "answer")
    write(modulestore, a, c.KIND_HISTORY, set_system_prompt=svc.SetSystemPrompt(text="You are coder-0."))
    got = sections(prompt(modulestore, a)[c.KIND_HISTORY])
    # Written in another order: the slot comes first, then the thread in order, the views, the pins.
    assert [(section, role) for section, role, _ in got] == [
        ("system_prompt", "system"),
        ("thread", "user"),
        ("thread", "user"),
        ("open_view", "system"),
        ("pinned_block", "system"),
    ]
    assert [text for _, _, text in got[:3]] == ["You are coder-0.", "question", "answer"]
    assert all(part in got[3][2] for part in ("a.py", "x = 1"))
    assert all(part in got[4][2] for part in ("goal", "finish"))


def test_r5_tasks_are_always_a_message_of_their_own(modulestore: Stub) -> None:
    a = open_agent(modulestore, new_run(), "coder-0")
    [(section, role, empty)] = sections(prompt(modulestore, a)[c.KIND_TASKS])
    assert (section, role) == ("tasks", "system") and empty
    write(modulestore, a, c.KIND_TASKS, create_task=svc.CreateTask(title="design"))
    write(modulestore, a, c.KIND_TASKS, create_task=svc.CreateTask(title="build", blocked_by=[1]))
    [(section, role, text)] = sections(prompt(modulestore, a)[c.KIND_TASKS])
    assert (section, role) == ("tasks", "system")
    # One line per task in id order, each with its id, status and title, and the edges it waits on.
    design = next(line for line in text.splitlines() if "design" in line)
    build = next(line for line in text.splitlines() if "build" in line)
    assert text.index(design) < text.index(build)
    assert "#1" in design and "open" in design and "#2" in build and "#1" in build.split("build", 1)[1]


def test_r6_scratchpad_renders_the_pad(modulestore: Stub) -> None:
    a = open_agent(modulestore, new_run(), "coder-0")
    write(modulestore, a, c.KIND_MEMORIES, write_pad=svc.WritePad(text="remember the milk"))
    [(section, role, text)] = sections(prompt(modulestore, a)[c.KIND_MEMORIES])
    assert (section, role) == ("scratchpad", "system") and "remember the milk" in text


def test_r6_markdown_index_renders_the_index_not_the_bodies(modulestore: Stub) -> None:
    a = open_agent(modulestore, new_run(), "coder-0", strategy=c.MEMORY_STRATEGY_MARKDOWN_INDEX)
    write(
        modulestore,
        a,
        c.KIND_MEMORIES,
        write_file=svc.WriteFile(name="style.md", body="SECRET BODY", index_line="how we write code"),
    )
    [(section, _, text)] = sections(prompt(modulestore, a)[c.KIND_MEMORIES])
    assert section == "memory_index" and "style.md" in text and "how we write code" in text
    assert "SECRET BODY" not in text


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
    catalogue = before[0][2]
    assert all(w in catalogue for w in ("git", "version control", "sql", "queries"))
    assert "BODY" not in catalogue
    write(modulestore, a, c.KIND_SKILLS, read_skill=svc.ReadSkill(name="sql"))
    after = sections(prompt(modulestore, a)[c.KIND_SKILLS])
    assert after[0] == before[0]
    assert [(s, role) for s, role, _ in after[1:]] == [("skill_body", "system")]
    assert "SQL BODY" in after[1][2] and "GIT BODY" not in after[1][2]


def test_prompt_text_formats(modulestore: Stub) -> None:
    """The one golden test of the rendered texts, format by format: a change of wording shows up here only."""
    a = open_agent(modulestore, new_run(), "coder-0")
    empty = {k: [t for _, _, t in sections(x)] for k, x in prompt(modulestore, a).items()}
    assert empty[c.KIND_TASKS] == ["Tasks: none yet. Create one with create_task."]
    assert empty[c.KIND_MEMORIES] == ["Scratchpad: empty."]
    assert empty[c.KIND_SKILLS] == ["Skills: none."]
    write(modulestore, a, c.KIND_HISTORY, open_view=svc.OpenView(view_id="a.py", content="x = 1"))
    write(modulestore, a, c.KIND_HISTORY, pin_block=svc.PinBlock(block_id="goal", content="finish"))
    write(modulestore, a, c.KIND_TASKS, create_task=svc.CreateTask(title="design", description="on paper"))
    write(modulestore, a, c.KIND_TASKS, create_task=svc.CreateTask(title="build", blocked_by=[1]))
    write(modulestore, a, c.KIND_MEMORIES, write_pad=svc.WritePad(text="remember the milk"))
    skill = svc.PutSkill(name="sql", description="queries", body="SQL")
    write(modulestore, a, c.KIND_SKILLS, put_skill=skill)
    write(modulestore, a, c.KIND_SKILLS, read_skill=svc.ReadSkill(name="sql"))
    texts = {k: [t for _, _, t in sections(x)] for k, x in prompt(modulestore, a).items()}
    assert texts[c.KIND_HISTORY] == ["[open view: a.py]\nx = 1", "[pinned: goal]\nfinish"]
    assert texts[c.KIND_TASKS] == [
        "Tasks:\n- #1 [open] design\n  on paper\n- #2 [open] build (blocked by #1)"
    ]
    assert texts[c.KIND_MEMORIES] == ["Scratchpad:\nremember the milk"]
    assert texts[c.KIND_SKILLS] == ["Skills (load one with read_skill):\n- sql: queries", "[skill: sql]\nSQL"]
    index = open_agent(modulestore, new_run(), "coder-0", strategy=c.MEMORY_STRATEGY_MARKDOWN_INDEX)

    def memories() -> list[str]:
        return [t for _, _, t in sections(prompt(modulestore, index)[c.KIND_MEMORIES])]

    assert memories() == ["Memory index: empty."]
    file = svc.WriteFile(name="a.md", body="B", index_line="i")
    write(modulestore, index, c.KIND_MEMORIES, write_file=file)
    assert memories() == [
        "Memory index (read a file with read_memory_file):\n- a.md: i"
    ]


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
