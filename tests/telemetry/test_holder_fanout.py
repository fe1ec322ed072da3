"""The per-holder streams of a run whose board and shared memories are held by 64 agents (R28, R29, R32),
event for event, against a recording made on the code before issue 14 changed how fan-out is stored.

Run ids, agent ids and times differ from run to run, so each event is compared with its run id, its agent
ids (numbered in the order the instances opened), its time and its origin_seq replaced; everything else,
stream_seq included, must match the recording exactly (golden/holder_streams_64.json.gz, gzipped JSON).
`GGMODULES_RECORD_GOLDEN=1` rewrites the recording.
"""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

from google.protobuf import json_format

from ggmodules.common.v1 import common_pb2 as c
from ggmodules.common.v1 import event_pb2
from ggmodules.modulestore.v1 import modulestore_service_pb2 as ms
from tests.harness import Suite, is_write_of
from tests.harness.registry import create_run, full_profile, open_instance, store_ids

HOLDERS = 64
GOLDEN = Path(__file__).parent / "golden" / "holder_streams_64.json.gz"


def _normalised(ev: event_pb2.Event, names: dict[str, str]) -> str:
    text = json.dumps(json_format.MessageToDict(ev), sort_keys=True)
    for real, name in sorted(names.items(), key=lambda kv: -len(kv[0])):
        text = text.replace(real, name)
    return text


def _streams(suite: Suite) -> dict[str, list[str]]:
    run = create_run(suite.reg, full_profile("coder", scope=c.MEMORY_SCOPE_AGENT)).run_id
    agents = [open_instance(suite.reg, run, "coder") for _ in range(HOLDERS)]
    held = [store_ids(a) for a in agents]
    board, memories = held[0]["board"], held[0]["memories"]
    assert all(h["board"] == board and h["memories"] == memories for h in held)
    ids = [a.agent_id for a in agents]

    for i in range(0, HOLDERS, 8):  # every eighth agent writes to each shared store and to its own
        suite.write(run, ids[i], board, create_issue=ms.CreateIssue(prefix="OPS", title=f"issue {i}"))
        suite.write(run, ids[i], memories, write_pad=ms.WritePad(text=f"note {i}"))
        suite.write(run, ids[i], held[i]["tasks"], create_task=ms.CreateTask(title=f"task {i}"))
    suite.say(run, ids[-1], held[-1]["history"], "end")

    sub = suite.subscribe(run)
    got = sub.until(is_write_of("end"), deadline=120)
    names = {run: "RUN", **{a: f"AGENT{n}" for n, a in enumerate(ids)}}
    assert "" not in names
    streams: dict[str, list[str]] = {names[a]: [] for a in ids}
    streams["RUN-WIDE"] = []  # the run's own events (no agent)
    last_cursor: dict[str, int] = {}
    for cursor, ev in got:
        assert cursor > last_cursor.get(ev.agent_id, 0)
        last_cursor[ev.agent_id] = cursor
        ev.ClearField("time")
        ev.ClearField("origin_seq")
        streams[names.get(ev.agent_id, "RUN-WIDE")].append(_normalised(ev, names))
    return streams


def test_r29_streams_of_a_store_held_by_64_agents_read_as_recorded(suite: Suite) -> None:
    streams = _streams(suite)
    if os.environ.get("GGMODULES_RECORD_GOLDEN") == "1":
        text = json.dumps(streams, indent=0, sort_keys=True) + "\n"
        GOLDEN.write_bytes(gzip.compress(text.encode(), mtime=0))
    recorded = json.loads(gzip.decompress(GOLDEN.read_bytes()))
    assert sorted(streams) == sorted(recorded)
    for agent, events in recorded.items():
        assert streams[agent] == events, f"{agent}'s stream differs from the recording"
    for events in streams.values():  # each stream's seqs run 1, 2, 3... with no gap or repeat
        assert [json.loads(e)["streamSeq"] for e in events] == [str(n) for n in range(1, len(events) + 1)]
