"""End to end: ModuleStore and Registry as separate OS processes; a whole session only through the SDK."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from ggmodules.sdk import Client, Kind, Origin, Profile
from tests.harness import BACKENDS, ServiceProcess, drop_database, new_database_url
from tests.sdk.conftest import PROFILES

QUIET = ("--log-level", "warning")


@contextmanager
def service(name: str, *args: str) -> Iterator[ServiceProcess]:
    proc = ServiceProcess(name, *args, *QUIET)
    try:
        yield proc
    finally:
        if proc.proc.poll() is None:
            proc.kill()


@pytest.mark.parametrize("backend", BACKENDS)
def test_e2e_session_over_separate_processes_survives_a_modulestore_crash(backend: str,
                                                                          tmp_path: Path) -> None:
    urls = {name: new_database_url(backend, name, tmp_path) for name in ("modulestore", "registry")}
    try:
        with service("modulestore", "--database-url", urls["modulestore"]) as modulestore, \
                service("registry", "--database-url", urls["registry"],
                        "--modulestore-address", modulestore.address) as registry:
            with Client(registry.address, modulestore.address) as gg:
                run = gg.create_run("e2e", [*PROFILES, Profile("reviewer", tasks=True)], board=True)
                planner = gg.open_instance(run.id, "planner")
                planner.history.set_system_prompt("You plan.")
                planner.history.append("user", "Build a CLI", start_turn=True)
                parser = planner.tasks.create("write the parser")
                assert planner.board.create_issue("GG", "parser") == "GG-1"
                planner.memories.write_pad("the CLI is called gg")
                planner.skills.put("planning", "how to plan", "1. think")
                planner.skills.read_skill("planning")
                planner.archive.archive_thread("kickoff", [("user", "hello")])

                reviewer = planner.spawn("reviewer")
                assert reviewer.board.create_issue("GG", "review") == "GG-2"
                copy = planner.fork()
                copy.history.set_system_prompt("You plan, again.")
                copy.tasks.update(parser, status="done")

                assert [c.kind for c in planner.prompt()] == list(Kind)
                assert gg.list_tools()
                assert [i.agent_id for i in gg.list_instances(run.id)] == [planner.id, reviewer.id, copy.id]
                assert gg.finish_run(run.id).status == "finished"

            modulestore.kill()  # R48: what was acknowledged survives kill -9
            with service("modulestore", "--database-url", urls["modulestore"]) as restarted, \
                    Client(registry.address, restarted.address) as gg:
                again = gg.agent(run.id, copy.id)
                assert again.instance.row("history").origin == Origin.FORKED
                window = again.history.contents()
                assert (window.system_prompt, [m.content for m in window.messages]) == (
                    "You plan, again.", ["Build a CLI"])
                assert [(t.title, t.status) for t in again.tasks.contents().tasks] == [
                    ("write the parser", "done")]
                assert [i.id for i in again.board.contents().issues] == ["GG-1", "GG-2"]
                pad = gg.agent(run.id, planner.id).memories.contents()
                assert [e.body for e in pad.entries] == ["the CLI is called gg"]
                assert restarted.terminate() == 0
            assert registry.terminate() == 0
    finally:
        for url in urls.values():
            drop_database(url)
