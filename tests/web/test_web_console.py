"""The web console in a real browser (Debian's chromium through playwright) against the suite as separate
processes: what a person sees, and that it says what the Inspect RPCs say."""

from __future__ import annotations

import http.client
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from ggmodules.core.console.views import Badge
from ggmodules.core.kinds import Kind
from ggmodules.sdk import Edge, Fsm, Memories, Profile
from ggmodules.telemetry.v1 import telemetry_service_pb2 as tpb
from tests.web.conftest import Suite, screenshot


def readme_fsm_run(suite: Suite) -> tuple[str, str, str]:
    """README's two-stage FSM run: the planner hands its window and task list to a coder."""
    with suite.client() as gg:
        profiles = [
            Profile("planner", memories=Memories(), tasks=True), Profile("coder", tasks=True, archive=True)
        ]
        edges = [Edge("plan", "code", carry=["history", "tasks"])]
        fsm = Fsm("plan", {"plan": "planner", "code": "coder"}, edges)
        run = gg.create_run("two-stage", profiles, fsm=fsm)
        planner = gg.open_instance(run.id, "planner")
        planner.history.set_system_prompt("You plan.")
        planner.history.append("user", "Build a CLI", start_turn=True)
        planner.tasks.create("write the parser")
        planner.memories.write_pad("the user wants argparse")
        coder = planner.transition("code").successor
        coder.history.set_system_prompt("You code.")
        return run.id, planner.id, coder.id


def test_r37_r42_r45_the_readme_fsm_run_appears_in_all_three_views(
    web_suite: Suite, page: Page, tmp_path: Path
) -> None:
    run_id, planner, coder = readme_fsm_run(web_suite)
    web_suite.settle(run_id)
    page.goto(web_suite.web.url + "/")
    page.locator(f'tr[data-run="{run_id}"] a').click()
    # Instances: both folders, the coder's window carrying the planner's message, handed on.
    expect(page.locator(f'.folder[data-agent="{planner}"]')).to_be_visible()
    expect(page.locator(f'.folder[data-agent="{coder}"]')).to_be_visible()
    # The modules folder is closed by default (the seed's Instances tab); open it, then the history file.
    page.locator(f'details.modules[data-agent="{coder}"] > summary').click()
    page.locator(f'.file-link[data-agent="{coder}"][data-file="modules/history"]').click()
    file = page.locator(f'article.file[data-agent="{coder}"][data-file="modules/history"]')
    expect(file.locator(".message .content").first).to_have_text("Build a CLI")
    expect(file.locator(".strip .mark.handed-on")).to_be_visible()
    successors = page.locator(f'.folder[data-agent="{planner}"] .relatives[data-relation="successors"]')
    expect(successors).to_contain_text(coder)
    screenshot(page, "instances", tmp_path)
    # Modules: the kinds the run has, the window one row held by two one at a time.
    page.locator('.tab[data-tab="modules"]').click()
    kinds = page.locator("section.kind-group")
    expect(kinds).to_have_count(4)
    assert [k.get_attribute("data-kind") for k in kinds.all()] == ["history", "memories", "tasks", "archive"]
    history = page.locator('section.kind-group[data-kind="history"] tr[data-store="history-0"]')
    expect(history.locator(".mark.handed-on")).to_be_visible()
    memories = page.locator('section.kind-group[data-kind="memories"] tr[data-store="memories-0"]')
    expect(memories.locator(".mark.dropped")).to_be_visible()
    page.locator('tr[data-store="tasks-0"] a.store-link').click()
    detail = page.locator('article.detail[data-store="tasks-0"]')
    assert [s.get_attribute("data-section") for s in detail.locator("section[data-section]").all()] == [
        "identity", "holders", "lifetime", "cost", "contents",
    ]
    expect(detail.locator('section[data-section="contents"]')).to_contain_text("write the parser")
    screenshot(page, "modules", tmp_path)
    # Agents: a section per profile.
    page.locator('.tab[data-tab="agents"]').click()
    expect(page.locator("section.profile")).to_have_count(2)
    expect(page.locator('section.profile[data-profile="coder"] tr[data-kind="archive"] .badge')).to_have_text(
        "per instance"
    )
    screenshot(page, "agents", tmp_path)
    # The same state when reopened.
    page.goto(page.url)
    expect(page.locator("section.profile")).to_have_count(2)


def test_a_write_made_after_the_page_opened_appears_without_reload(web_suite: Suite, page: Page) -> None:
    with web_suite.client() as gg:
        run = gg.create_run("live", [Profile("solo", tasks=True)])
        agent = gg.open_instance(run.id, "solo")
        agent.history.append("user", "first", start_turn=True)
        web_suite.settle(run.id)
        page.goto(f"{web_suite.web.url}/runs/{run.id}/instances?agent={agent.id}&file=modules/history")
        expect(page.locator(".message .content")).to_have_text(["first"])
        expect(page.locator("#live.on")).to_be_visible()
        page.evaluate("window.__sameDocument = true")
        agent.history.append("user", "written after the page opened", start_turn=True)
        agent.tasks.create("a task made later")
    expect(page.locator(".message .content")).to_have_text(["first", "written after the page opened"])
    assert page.evaluate("window.__sameDocument") is True  # no reload: the same document
    expect(page.locator('.file-link[data-file="modules/tasks"]')).to_be_visible()


def test_r40_a_co_holder_chip_opens_the_other_instances_same_file(web_suite: Suite, page: Page) -> None:
    with web_suite.client() as gg:
        run = gg.create_run("shared", [Profile("planner", memories=Memories(scope="agent"))])
        a = gg.open_instance(run.id, "planner")
        b = gg.open_instance(run.id, "planner")
        a.memories.write_pad("ours")
    web_suite.settle(run.id)
    page.goto(f"{web_suite.web.url}/runs/{run.id}/instances?agent={a.id}&file=modules/memories")
    mine = page.locator(f'article.file[data-agent="{a.id}"][data-file="modules/memories"]')
    expect(mine.locator(".mark.shared")).to_have_text("🔗 2")
    mine.locator(f'.co-holder[data-agent="{b.id}"]').click()
    theirs = page.locator(f'article.file[data-agent="{b.id}"][data-file="modules/memories"]')
    expect(theirs).to_be_visible()
    expect(theirs.locator(".strip")).to_have_attribute("data-store", a.store_id("memories"))
    expect(theirs.locator(f'.co-holder[data-agent="{a.id}"]')).to_be_visible()


def test_r45_r46_badges_and_notes_of_a_run_with_an_exec_a_spawn_and_a_fork_match_the_inspect_rpcs(
    web_suite: Suite, page: Page
) -> None:
    with web_suite.client() as gg:
        run = gg.create_run(
            "mixed",
            [
                Profile("lead", memories=Memories(scope="agent"), tasks=True),
                Profile("worker", memories=Memories(scope="inherited"), tasks=True),
                Profile("reviewer", memories=Memories(scope="instance"), tasks=True),
            ],
            board=True,
        )
        lead = gg.open_instance(run.id, "lead")
        lead.memories.write_pad("the lead's notes")
        worker = lead.spawn("worker")
        worker.fork()
        gg.open_instance(run.id, "worker")
        gg.open_instance(run.id, "reviewer").exec("lead")
    web_suite.settle(run.id)
    answer = web_suite.stubs.telemetry.InspectAgents(tpb.InspectAgentsRequest(run_id=run.id), timeout=30)
    expected = {
        (p.profile, Kind(r.kind).word): (Badge(r.badge).word, r.note, list(r.store_ids))
        for p in answer.profiles
        for r in p.modules
    }
    assert any(note for _, note, _ in expected.values())  # the run is one that carries a note
    assert {b for b, _, _ in expected.values()} >= {"run-global", "split"}
    page.goto(f"{web_suite.web.url}/runs/{run.id}/agents")
    shown = {}
    for section in page.locator("section.profile").all():
        profile = section.get_attribute("data-profile")
        for row in section.locator("tr[data-kind]").all():
            note = row.locator(".note")
            shown[(profile, row.get_attribute("data-kind"))] = (
                row.locator(".badge").inner_text(),
                note.inner_text() if note.count() else "",
                [s.inner_text() for s in row.locator(".stores > *").all()],
            )
    assert shown == expected


def test_an_unknown_run_or_store_is_a_page_that_says_so(web_suite: Suite) -> None:
    for path, code, words in (
        ("/runs/run-000000000000/instances", 404, "has no telemetry"),
        ("/runs/run%0A1/agents", 400, "run_id"),
    ):
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(web_suite.web.url + path, timeout=30)
        assert refused.value.code == code
        assert words in refused.value.read().decode()
    with web_suite.client() as gg:
        run = gg.create_run("lookup", [Profile("solo", tasks=True)])
        gg.open_instance(run.id, "solo")
    web_suite.settle(run.id)
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(f"{web_suite.web.url}/runs/{run.id}/modules?store=tasks-9", timeout=30)
    assert refused.value.code == 404 and "tasks-9" in refused.value.read().decode()


def test_r47_a_hostile_address_is_refused_4xx_saying_why_never_5xx_or_redirected(web_suite: Suite) -> None:
    """Found by requesting odd addresses: a 5,000-character asset name was 500 (aiohttp's static route,
    ENAMETOOLONG), and a run id with NUL or a line break was redirected (302, the line break silently
    dropped from the new address) or its event stream opened (200), where the pages refuse it 400."""
    too_long = "x" * 5000
    for path, code, words in (
        (f"/static/{too_long}", 404, "no asset by that name"),
        ("/static/..%2Fserver.py", 404, "no asset by that name"),
        ("/runs/run%00", 400, "run_id"),
        ("/runs/run%0D%0ASet-Cookie:%20x=1/", 400, "run_id"),
        ("/runs/run%0A1/events", 400, "run_id"),
        (f"/runs/{'r' * 200}/events?after=0", 400, "run_id is 200 characters long"),
        ("/runs/run-000000000000/instances?agent=a%00b", 400, "agent"),
        ("/runs/run-000000000000/modules?store=s%0Ds", 400, "store"),
    ):
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(web_suite.web.url + path, timeout=30)
        assert refused.value.code == code, path[:80]
        assert words in refused.value.read().decode(), path[:80]
    with urllib.request.urlopen(web_suite.web.url + "/static/console.css", timeout=30) as asset:
        assert asset.headers["Content-Type"].startswith("text/css") and b"{" in asset.read()
    # A run id is quoted where the console makes an address of it: the redirect stays under /runs/.
    address = urllib.parse.urlsplit(web_suite.web.url)
    connection = http.client.HTTPConnection(address.hostname, address.port, timeout=30)
    try:
        connection.request("GET", "/runs/..%2F..%2Fetc")
        answer = connection.getresponse()
        assert (answer.status, answer.getheader("Location")) == (302, "/runs/..%2F..%2Fetc/instances")
    finally:
        connection.close()
