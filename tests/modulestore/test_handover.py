"""Handover (R19-R21, R27, R35, R36): every outcome per kind with the store before and after, exactly once,
and the refusals that leave everything as it was."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import grpc
import pytest

from ggmodules.common.v1 import common_pb2 as c
from ggmodules.core.kinds import Kind
from ggmodules.modulestore.v1 import modulestore_pb2 as ms
from ggmodules.modulestore.v1 import modulestore_service_pb2 as svc
from tests.harness import assert_refused, refused, status_of
from tests.harness.handing import (
    carry,
    carry_all,
    drop,
    fresh,
    hand_over,
    holders,
    outcomes,
    planned,
    planned_request,
    reinit,
    request,
    store,
)
from tests.harness.modulestore import (
    KINDS,
    Agent,
    Stub,
    append,
    b,
    bind,
    contents,
    events,
    new_run,
    open_agent,
    profile_of,
    spawn_agent,
    write,
)

WORD = {c.KIND_HISTORY: "history", c.KIND_MEMORIES: "memories", c.KIND_TASKS: "tasks"}
WORD |= {c.KIND_BOARD: "board", c.KIND_SKILLS: "skills", c.KIND_ARCHIVE: "archive"}


def planner(stub: Stub) -> Agent:
    """planner-0 holding all six kinds, each with something in it."""
    p = open_agent(stub, new_run(), "planner-0")
    append(stub, p, "plan the work", start_turn=True)
    write(stub, p, c.KIND_MEMORIES, write_pad=svc.WritePad(text="remember"))
    write(stub, p, c.KIND_TASKS, create_task=svc.CreateTask(title="design"))
    write(stub, p, c.KIND_BOARD, create_issue=svc.CreateIssue(prefix="OPS", title="deploy"))
    write(stub, p, c.KIND_SKILLS, put_skill=svc.PutSkill(name="git", description="d", body="b"))
    write(
        stub,
        p,
        c.KIND_ARCHIVE,
        archive_thread=svc.ArchiveThread(title="old", messages=[ms.MessageInput(role="user", content="x")]),
    )
    return p


def _fresh(kind: int) -> svc.HandoverKind:
    if kind == c.KIND_SKILLS:
        return fresh(kind, ms.BIND_ACTION_NAMED, named_key="skills/coder", skills_directory="coder")
    return fresh(kind)


CASES = (
    [(k, c.OUTCOME_CARRIED) for k in KINDS]
    + [(k, c.OUTCOME_DROPPED) for k in KINDS if k != c.KIND_HISTORY]
    + [(k, c.OUTCOME_FRESH) for k in KINDS]
    + [(c.KIND_MEMORIES, c.OUTCOME_REINITIALIZED)]
)


@pytest.mark.parametrize(("kind", "outcome"), CASES, ids=[f"{WORD[k]}-{o}" for k, o in CASES])
def test_r21_every_outcome_per_kind_with_the_store_before_and_after(
    modulestore: Stub, kind: int, outcome: int
) -> None:
    p = planner(modulestore)
    entry = {
        c.OUTCOME_CARRIED: carry(kind),
        c.OUTCOME_DROPPED: drop(kind),
        c.OUTCOME_FRESH: _fresh(kind),
        c.OUTCOME_REINITIALIZED: reinit(kind, strategy=c.MEMORY_STRATEGY_MARKDOWN_INDEX),
    }[outcome]
    coder, resp = hand_over(modulestore, p, "coder-0", carry_all(**{WORD[kind]: entry}))

    got, before, after = outcomes(resp)[kind]
    assert (got, before) == (outcome, p[kind])
    assert [o.kind for o in resp.outcomes] == KINDS
    assert holders(modulestore, p.run_id, p[kind])["planner-0"][2] is False
    row = next(r for r in resp.roster if r.kind == kind)
    if outcome == c.OUTCOME_DROPPED:
        assert after == "" and not row.enabled and row.store_id == ""
        return
    assert (row.enabled, row.store_id, after) == (True, after, coder[kind])
    if outcome == c.OUTCOME_CARRIED:
        origin = c.ORIGIN_RUN if kind == c.KIND_BOARD else c.ORIGIN_TRANSFERRED
        assert after == before and row.origin == origin
    else:
        assert after != before and after.startswith(f"{WORD[kind]}-")
        assert row.origin == (c.ORIGIN_PROFILE if kind == c.KIND_SKILLS else c.ORIGIN_CREATED)
    assert holders(modulestore, p.run_id, after)["coder-0"] == (row.origin, True, True)


def test_r20_fresh_for_a_kind_the_predecessor_never_held(modulestore: Stub) -> None:
    run = new_run()
    p = bind(modulestore, run, "reviewer-0", [b(c.KIND_HISTORY, ms.BIND_ACTION_CREATE)], profile="reviewer")
    coder, resp = hand_over(modulestore, p, "coder-0", [carry(c.KIND_HISTORY), fresh(c.KIND_TASKS)])
    assert outcomes(resp) == {
        c.KIND_HISTORY: (c.OUTCOME_CARRIED, p[c.KIND_HISTORY], p[c.KIND_HISTORY]),
        c.KIND_TASKS: (c.OUTCOME_FRESH, "", coder[c.KIND_TASKS]),
    }
    assert [r.enabled for r in resp.roster] == [True, False, True, False, False, False]
    assert write(modulestore, coder, c.KIND_TASKS, create_task=svc.CreateTask(title="t")).task_id == 1


def test_a_held_kind_the_plan_leaves_out_is_dropped(modulestore: Stub) -> None:
    p = planner(modulestore)
    _, resp = hand_over(modulestore, p, "coder-0", [carry(c.KIND_HISTORY)])
    assert outcomes(resp)[c.KIND_ARCHIVE] == (c.OUTCOME_DROPPED, p[c.KIND_ARCHIVE], "")
    assert [o.kind for o in resp.outcomes] == KINDS


def test_r35_carried_ids_are_kept_and_a_memories_repoint_reports_the_named_store(modulestore: Stub) -> None:
    run = new_run()
    # Another coder already holds the coder profile's own memories store.
    other = open_agent(modulestore, run, "coder-9", scope=c.MEMORY_SCOPE_AGENT)
    lead = open_agent(modulestore, run, "lead-0", scope=c.MEMORY_SCOPE_INHERITED)
    # A planner subagent inheriting the lead's memories (a share).
    p = spawn_agent(modulestore, lead, "planner-0", scope=c.MEMORY_SCOPE_INHERITED)
    assert p[c.KIND_MEMORIES] == lead[c.KIND_MEMORIES]
    named = carry(
        c.KIND_MEMORIES,
        action=ms.BIND_ACTION_NAMED,
        named_key="profile/coder/memories",
        scope=c.MEMORY_SCOPE_AGENT,
    )
    coder, resp = hand_over(modulestore, p, "coder-0", carry_all(memories=named))
    found = outcomes(resp)
    assert found[c.KIND_MEMORIES] == (c.OUTCOME_CARRIED, lead[c.KIND_MEMORIES], other[c.KIND_MEMORIES])
    for kind in (c.KIND_HISTORY, c.KIND_TASKS, c.KIND_BOARD, c.KIND_SKILLS, c.KIND_ARCHIVE):
        assert found[kind] == (c.OUTCOME_CARRIED, p[kind], p[kind])
    row = coder.roster[c.KIND_MEMORIES]
    assert (row.origin, row.scope) == (c.ORIGIN_PROFILE, c.MEMORY_SCOPE_AGENT)
    # The lead keeps its store; the successor writes where coder-9 reads.
    assert holders(modulestore, run, lead[c.KIND_MEMORIES])["lead-0"][2] is True
    write(modulestore, coder, c.KIND_MEMORIES, write_pad=svc.WritePad(text="shared with coder-9"))
    assert contents(modulestore, other, c.KIND_MEMORIES).contents.memories.entries[0].agent_id == "coder-0"


def test_r21_memories_strategy_mismatch_reinitializes_under_the_profiles_named_store(
    modulestore: Stub,
) -> None:
    p = planner(modulestore)
    coder_profile = profile_of("coder", scope=c.MEMORY_SCOPE_AGENT, strategy=c.MEMORY_STRATEGY_MARKDOWN_INDEX)
    plan = planned(p, coder_profile)
    resp = modulestore.Handover(planned_request(p, "coder-0", plan))
    coder = Agent(p.run_id, "coder-0", {r.kind: r for r in resp.roster if r.enabled})
    memories = next(o for o in resp.outcomes if o.kind == c.KIND_MEMORIES)
    assert memories.outcome == c.OUTCOME_REINITIALIZED
    assert memories.store_id_after not in ("", p[c.KIND_MEMORIES])
    # The note Transfer wrote for the kind reaches the outcome, and it says why, naming both strategies.
    produced = plan.outcome(Kind.MEMORIES)
    assert produced is not None and memories.note == produced.note
    assert all(w in memories.note for w in ("memories", "re-initialized", "scratchpad", "markdown index"))
    roster = next(e.roster for e in events(modulestore, p.run_id) if e.agent_id == "coder-0")
    assert roster.opening_note == plan.opening_note and memories.note in roster.opening_note
    row = coder.roster[c.KIND_MEMORIES]
    assert (row.strategy, row.origin) == (c.MEMORY_STRATEGY_MARKDOWN_INDEX, c.ORIGIN_PROFILE)
    got = contents(modulestore, coder, c.KIND_MEMORIES).contents.memories
    assert (got.strategy, list(got.entries)) == (c.MEMORY_STRATEGY_MARKDOWN_INDEX, [])


def test_r21_carrying_memories_into_another_strategy_is_refused(modulestore: Stub) -> None:
    p = planner(modulestore)
    wrong = carry(c.KIND_MEMORIES, strategy=c.MEMORY_STRATEGY_MARKDOWN_INDEX)
    assert_refused(
        lambda: hand_over(modulestore, p, "coder-0", carry_all(memories=wrong)),
        grpc.StatusCode.FAILED_PRECONDITION, "WRONG_KIND",
    )


def test_skills_catalogue_follows_the_successors_directory_and_the_read_set_the_window(
    modulestore: Stub,
) -> None:
    def read_set(agent: Agent) -> list[str]:
        return list(contents(modulestore, agent, c.KIND_SKILLS).contents.skills.read_set)

    for same_directory in (True, False):
        for window in ("carried", "fresh"):
            p = planner(modulestore)
            write(modulestore, p, c.KIND_SKILLS, read_skill=svc.ReadSkill(name="git"))
            directory = "planner" if same_directory else "coder"
            skills = carry(c.KIND_SKILLS, named_key=f"skills/{directory}", skills_directory=directory)
            history = carry(c.KIND_HISTORY) if window == "carried" else fresh(c.KIND_HISTORY)
            coder, resp = hand_over(modulestore, p, "coder-0", carry_all(history=history, skills=skills))
            assert (coder[c.KIND_SKILLS] == p[c.KIND_SKILLS]) is same_directory
            assert outcomes(resp)[c.KIND_SKILLS][0] == c.OUTCOME_CARRIED
            # Another directory's catalogue has no "git": the read set keeps only what it can pin.
            assert read_set(coder) == (["git"] if window == "carried" and same_directory else [])


def test_r36_the_successor_is_a_new_agent(modulestore: Stub) -> None:
    p = planner(modulestore)
    taken = open_agent(modulestore, p.run_id, "coder-0")
    assert_refused(
        lambda: hand_over(modulestore, p, taken.agent_id, carry_all()),
        grpc.StatusCode.ALREADY_EXISTS, "ALREADY_EXISTS",
    )
    assert_refused(
        lambda: hand_over(modulestore, p, "planner-0", carry_all()),
        grpc.StatusCode.INVALID_ARGUMENT, "INVALID_FIELD",
    )


def test_r2_the_successor_holds_history(modulestore: Stub) -> None:
    p = planner(modulestore)
    for kinds in (carry_all(history=drop(c.KIND_HISTORY)), [carry(c.KIND_TASKS)]):
        code, reason, *_ = refused(lambda: hand_over(modulestore, p, "coder-0", kinds))  # noqa: B023
        assert (code, reason) == (grpc.StatusCode.INVALID_ARGUMENT, "HISTORY_REQUIRED")


def test_r27_a_retry_returns_the_first_answer_and_applies_nothing_twice(modulestore: Stub) -> None:
    p = planner(modulestore)
    req = request(p, "coder-0", carry_all(archive=drop(c.KIND_ARCHIVE)), request_id="tr-1/handover")
    first = modulestore.Handover(req)
    outbox = events(modulestore, p.run_id)
    assert modulestore.Handover(req) == first
    assert events(modulestore, p.run_id) == outbox
    changed = request(p, "coder-0", carry_all(), request_id="tr-1/handover")
    assert_refused(lambda: modulestore.Handover(changed), grpc.StatusCode.ALREADY_EXISTS, "REQUEST_ID_REUSED")


def test_kind_not_held_refuses_and_leaves_everything_unchanged(modulestore: Stub) -> None:
    """The realistic R26 case: a reviewer without memories, on an edge that carries memories."""
    run = new_run()
    p = open_agent(modulestore, run, "reviewer-0", without=("memories",))
    append(modulestore, p, "reviewed")
    before = {k: contents(modulestore, p, k) for k, r in p.roster.items() if r.enabled}
    outbox = events(modulestore, run)
    wrong_store = carry(c.KIND_TASKS, source_store_id=p[c.KIND_ARCHIVE])
    for kinds, kind in (
        ([carry(c.KIND_HISTORY), carry(c.KIND_MEMORIES)], "memories"),
        ([carry(c.KIND_HISTORY), drop(c.KIND_MEMORIES)], "memories"),
        ([carry(c.KIND_HISTORY), wrong_store], "tasks"),
    ):
        code, reason, _, message = refused(
            lambda: hand_over(modulestore, p, "coder-0", kinds, cause="transition")  # noqa: B023
        )
        assert (code, reason) == (grpc.StatusCode.FAILED_PRECONDITION, "KIND_NOT_HELD")
        assert kind in message and "reviewer-0" in message
    assert {k: contents(modulestore, p, k) for k, r in p.roster.items() if r.enabled} == before
    assert events(modulestore, run) == outbox
    assert_refused(
        lambda: modulestore.GetStore(
            svc.GetStoreRequest(run_id=run, store_id=p[c.KIND_HISTORY], agent_id="coder-0")
        ),
        grpc.StatusCode.NOT_FOUND, "AGENT_NOT_FOUND",
    )
    # Nothing was applied, so the right plan still goes through.
    hand_over(modulestore, p, "coder-0", [carry(c.KIND_HISTORY), fresh(c.KIND_MEMORIES)], cause="transition")


def test_an_unknown_predecessor_is_not_found(modulestore: Stub) -> None:
    p = planner(modulestore)
    ghost = Agent(p.run_id, "ghost-0", p.roster)
    assert_refused(
        lambda: hand_over(modulestore, ghost, "coder-0", carry_all()),
        grpc.StatusCode.NOT_FOUND, "AGENT_NOT_FOUND",
    )


def test_r27_racing_handovers_of_one_predecessor_apply_once(modulestore: Stub) -> None:
    p = planner(modulestore)
    writes = contents(modulestore, p, c.KIND_TASKS).store.figures.writes

    def attempt(i: int) -> str:
        try:
            return hand_over(modulestore, p, f"coder-{i}", carry_all())[0].agent_id
        except grpc.RpcError as err:
            return status_of(err)[1]

    with ThreadPoolExecutor(6) as pool:
        answers = sorted(pool.map(attempt, range(6)))
    winners = [a for a in answers if a.startswith("coder-")]
    assert len(winners) == 1 and answers.count("HANDED_ON") == 5
    active = {a for a, (_, _, on) in holders(modulestore, p.run_id, p[c.KIND_TASKS]).items() if on}
    assert active == set(winners)
    assert [e.WhichOneof("body") for e in events(modulestore, p.run_id)].count("roster") == 2
    assert store(modulestore, p.run_id, p[c.KIND_TASKS]).figures.writes == writes
