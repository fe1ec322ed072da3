"""R29 for a skills store, whose holders each see their own read set (issue 14 stores a write's fan-out once):
each other holder's snapshot carries its own read set and figures; a read-set change reaches only the
holders aliasing that read set."""

from __future__ import annotations

from ggmodules.common.v1 import common_pb2 as c
from ggmodules.modulestore.v1 import modulestore_pb2 as ms
from ggmodules.modulestore.v1 import modulestore_service_pb2 as svc
from tests.harness.modulestore import Stub, b, bind, fork_agent, new_run, open_agent, shape, streams, write


def test_r29_each_skills_holder_s_snapshot_carries_its_own_read_set(modulestore: Stub) -> None:
    run = new_run()
    a = open_agent(modulestore, run, "coder-0", directory="shared-skills")
    for name in ("git", "sql"):
        write(modulestore, a, c.KIND_SKILLS, put_skill=svc.PutSkill(name=name, description=name, body=name))
    write(modulestore, a, c.KIND_SKILLS, read_skill=svc.ReadSkill(name="git"))
    other = open_agent(modulestore, run, "reviewer-0", directory="shared-skills")  # its own empty read set
    fork = fork_agent(modulestore, a, "coder-1")  # a copy of coder-0's read set
    share = bind(  # coder-0's read set itself
        modulestore,
        run,
        "coder-2",
        [
            b(c.KIND_HISTORY, ms.BIND_ACTION_CREATE),
            b(
                c.KIND_SKILLS,
                ms.BIND_ACTION_SHARE,
                source_store_id=a[c.KIND_SKILLS],
                read_set_source_agent_id="coder-0",
                origin=c.ORIGIN_INHERITED,
            ),
        ],
    )
    write(modulestore, fork, c.KIND_SKILLS, read_skill=svc.ReadSkill(name="sql"))  # the copy only
    skills = a[c.KIND_SKILLS]

    before = {agent: len(evs) for agent, evs in streams(modulestore, run).items()}
    write(modulestore, other, c.KIND_SKILLS, put_skill=svc.PutSkill(name="new", description="d", body="b"))
    after = streams(modulestore, run)
    seen = {}
    for agent in ("coder-0", "coder-1", "coder-2"):
        new = after[agent][before[agent] :]
        assert shape(new) == [("snapshot", skills)]
        snap = new[0].snapshot
        assert snap.written_by == "reviewer-0"
        assert [s.name for s in snap.contents.skills.catalogue] == ["git", "sql", "new"]
        seen[agent] = (list(snap.contents.skills.read_set), snap.figures.items)
    assert seen == {"coder-0": (["git"], 1), "coder-1": (["git", "sql"], 2), "coder-2": (["git"], 1)}
    assert shape(after["reviewer-0"][before["reviewer-0"] :]) == [("write", skills)]

    # Reading a skill changes one read set: only the holders aliasing it hear of it.
    before = {agent: len(evs) for agent, evs in after.items()}
    write(modulestore, share, c.KIND_SKILLS, read_skill=svc.ReadSkill(name="new"))
    again = streams(modulestore, run)
    assert shape(again["coder-0"][before["coder-0"] :]) == [("snapshot", skills)]
    assert list(again["coder-0"][-1].snapshot.contents.skills.read_set) == ["git", "new"]
    for agent in ("coder-1", "reviewer-0"):
        assert again[agent][before[agent] :] == []
