"""`make profile` (issue 10: "a profile of what remains for any target missed") reads py-spy's raw stacks of a
service process into the categories its table prints. A canned profile (tests/bench/data, in py-spy 0.4's
raw format) has one stack of each kind; the table must put each where a reader looks for it."""

from __future__ import annotations

from pathlib import Path

from tests.bench.profile_summary import (
    DB_POSTGRES,
    DB_SQLITE,
    GC,
    GIL,
    GRPC,
    IDLE,
    LOOP_C,
    OURS,
    PROTOBUF,
    categorise,
    parse_frame,
    read_file,
    report,
)

SAMPLE = Path(__file__).parent / "data" / "pyspy_raw_sample.txt"


def test_each_stack_lands_in_the_category_a_reader_expects() -> None:
    profile = read_file(SAMPLE)
    assert profile.total == 1900
    assert dict(profile.by_category) == {
        IDLE: 500 + 300 + 600,  # the loop's epoll, a worker's empty queue, grpc's poller thread
        GRPC: 120,  # cygrpc under the loop's task step (its sendmsg)
        PROTOBUF: 30,  # upb decoding called from our wire module: the innermost owner counts
        OURS: 40 + 50,  # our Python lines that call no library
        GC: 10,  # the collector, even though our auth check triggered it
        DB_SQLITE: 60 + 90,  # libsqlite3's statement and the commit's fdatasync
        GIL: 20,  # re-taking the GIL on the way out of the sqlite3 module
        DB_POSTGRES: 80,  # psycopg waiting for PostgreSQL's answer
    }
    assert dict(profile.by_module) == {"storage/modulestore/history.py": 50, "runtime/auth.py": 40}
    # Two worker threads are one line; a stack whose thread name py-spy left out belongs to its thread.
    assert profile.threads["asyncio_*"] == [300, 600]
    assert len(profile.thread_ids["asyncio_*"]) == 2


def test_the_table_gives_shares_of_active_samples_and_our_functions_by_cumulative_share() -> None:
    lines = report(read_file(SAMPLE))
    text = "\n".join(lines)
    assert "1,900 samples over all threads, 500 active (26.3%)" in text
    database = next(line for line in lines if line.strip().startswith(DB_SQLITE))
    assert database.split()[-2:] == ["7.9%", "30.0%"]  # of all samples, of active ones
    cumulative = lines[lines.index(next(x for x in lines if "cumulative" in x)) + 1 :]
    # Both are on the stack of every sample the worker thread is active in (ties in name order).
    assert [line.split()[:2] for line in cumulative[:3]] == [
        ["44.0%", "GroupCommit._run"], ["44.0%", "ModuleStoreServicer.write.<locals>.<lambda>"],
        ["18.0%", "end_raw"],
    ]  # fmt: skip
    assert not any("cli/main.py" in line for line in cumulative)  # the entry point is on every stack


def test_without_native_frames_a_line_calling_the_database_counts_as_the_database(tmp_path: Path) -> None:
    source = tmp_path / "services" / "ggmodules" / "storage" / "rows.py"
    source.parent.mkdir(parents=True)
    source.write_text("def put(cursor, row):\n    cursor.execute(SQL, row)\n    return shape(row)\n")
    loop = parse_frame("Handle._run (/usr/lib/python3.11/asyncio/events.py:80)")
    assert categorise([loop, parse_frame(f"put ({source}:2)")]) == (DB_SQLITE, DB_SQLITE)
    assert categorise([loop, parse_frame(f"put ({source}:3)")]) == (OURS, "storage/rows.py")
    assert categorise([loop]) == (LOOP_C, LOOP_C)  # cygrpc's compiled code, run by the loop
