"""history: the window (R2, R4, R9, R24) through BindInstance, Write and GetStore."""

from __future__ import annotations

import grpc

from ggmodules.common.v1 import common_pb2 as c
from ggmodules.modulestore.v1 import modulestore_pb2 as ms
from ggmodules.modulestore.v1 import modulestore_service_pb2 as svc
from tests.harness import assert_refused
from tests.harness.modulestore import Stub, append, b, bind, contents, messages, new_run, open_agent, write


def test_append_messages_numbers_the_thread_and_counts_turns(modulestore: Stub) -> None:
    agent = open_agent(modulestore, new_run(), "coder-0")
    first = append(modulestore, agent, "hello", "there", start_turn=True)
    second = append(modulestore, agent, "again")
    assert (first.last_seq, first.turn, second.last_seq, second.turn) == (2, 1, 3, 1)
    assert second.figures.items == 3 and second.figures.writes == 2
    history = contents(modulestore, agent, c.KIND_HISTORY).contents.history
    assert [(m.seq, m.content, m.turn) for m in history.messages] == [
        (1, "hello", 1),
        (2, "there", 1),
        (3, "again", 1),
    ]
    assert history.message_count == 3 and history.turn == 1


def test_get_store_pages_the_thread(modulestore: Stub) -> None:
    agent = open_agent(modulestore, new_run(), "coder-0")
    append(modulestore, agent, *[f"m{i}" for i in range(10)])
    page = modulestore.GetStore(
        svc.GetStoreRequest(
            run_id=agent.run_id,
            store_id=agent[c.KIND_HISTORY],
            agent_id=agent.agent_id,
            after_seq=4,
            page_size=3,
        )
    )
    assert [m.seq for m in page.contents.history.messages] == [5, 6, 7]
    assert page.contents.history.message_count == 10


def test_r9_system_prompt_is_set_once(modulestore: Stub) -> None:
    agent = open_agent(modulestore, new_run(), "coder-0")
    write(modulestore, agent, c.KIND_HISTORY, set_system_prompt=svc.SetSystemPrompt(text="You are coder-0."))
    assert_refused(
        lambda: write(
            modulestore, agent, c.KIND_HISTORY, set_system_prompt=svc.SetSystemPrompt(text="Be someone else.")
        ),
        grpc.StatusCode.FAILED_PRECONDITION, "SYSTEM_PROMPT_ALREADY_SET",
    )
    history = contents(modulestore, agent, c.KIND_HISTORY)
    assert history.contents.history.system_prompt == "You are coder-0."
    assert history.store.figures.writes == 1


def test_views_and_pins_open_and_close(modulestore: Stub) -> None:
    agent = open_agent(modulestore, new_run(), "coder-0")
    write(modulestore, agent, c.KIND_HISTORY, open_view=svc.OpenView(view_id="file:a.py", content="print(1)"))
    write(modulestore, agent, c.KIND_HISTORY, pin_block=svc.PinBlock(block_id="plan", content="1. do it"))
    write(modulestore, agent, c.KIND_HISTORY, close_view=svc.CloseView(view_id="file:a.py"))
    history = contents(modulestore, agent, c.KIND_HISTORY).contents.history
    assert list(history.open_views) == [] and [(p.id, p.content) for p in history.pinned_blocks] == [
        ("plan", "1. do it")
    ]
    assert_refused(
        lambda: write(modulestore, agent, c.KIND_HISTORY, unpin_block=svc.UnpinBlock(block_id="nope")),
        grpc.StatusCode.NOT_FOUND, "ENTRY_NOT_FOUND",
    )


def test_r2_history_cannot_be_left_out_of_a_plan(modulestore: Stub) -> None:
    run = new_run()
    plans = [
        [b(c.KIND_TASKS, ms.BIND_ACTION_CREATE)],
        [b(c.KIND_HISTORY, ms.BIND_ACTION_DISABLED), b(c.KIND_TASKS, ms.BIND_ACTION_CREATE)],
    ]
    for bindings in plans:
        assert_refused(
            lambda bs=bindings: bind(modulestore, run, "coder-0", bs),
            grpc.StatusCode.INVALID_ARGUMENT, "HISTORY_REQUIRED",
        )


def test_write_of_an_op_another_kind_takes_is_wrong_kind(modulestore: Stub) -> None:
    agent = open_agent(modulestore, new_run(), "coder-0")
    assert_refused(
        lambda: write(
            modulestore, agent, c.KIND_TASKS, append_messages=svc.AppendMessages(messages=messages("x"))
        ),
        grpc.StatusCode.FAILED_PRECONDITION, "WRONG_KIND",
    )
