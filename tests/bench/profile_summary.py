"""What a py-spy profile of one service process says, in a few lines (`make profile`, tests/bench/profile.py).

Reads py-spy's raw output (collapsed stacks: `py-spy record --format raw --idle --threads --full-filenames`,
with --native or not): one line per distinct stack, `thread (tid): name;outermost;...;leaf count`, each
frame `function (file:line)` for Python code, `function (library)` or `0xaddress (library)` for C code.
Every sample is put in exactly one category, looked for in this order:

- GIL wait: a thread re-taking the GIL (take_gil, or a condition wait straight from the interpreter;
  --native only);
- GC: the cyclic garbage collector running (gc_collect_main; --native only);
- database: the SQLite library or the psycopg driver anywhere on the stack (the statement, the commit, the
  fsync, the wait for PostgreSQL's answer); without --native also a leaf Python line that calls execute,
  commit, fetch... (the sqlite3 module is C and leaves no frame of its own), or libpq through psycopg's
  pgconn, or select() on its socket (storage/pg_pipeline.py);
- idle: a thread blocked with nothing to do (epoll/poll/select, a condition or queue wait, sleep, a
  LISTEN connection waiting for a notification; checked before the database for the last);
- C run by the asyncio loop: without --native, a leaf in the loop's Handle._run (cygrpc's compiled server
  and asyncio's C tasks; --native tells them apart);
- otherwise the owner of the innermost frame that has one: our code (services/ggmodules/..., one line per
  module), grpc (grpc/aio and the compiled cygrpc core), asyncio loop, protobuf, SQLAlchemy, logging,
  crypto (JWT checks), stdlib, another library; frames of the interpreter itself and libc are skipped
  over to the frame that called them.

"active" is every category but idle; shares of active samples say where the process's time goes while it
works. Python's own C modules (Modules/_sqlite, _asynciomodule.c) count as what they implement.
"""

from __future__ import annotations

import linecache
import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

IDLE, GIL, GC, OURS = "idle", "GIL wait", "GC", "our code"
DB_SQLITE, DB_POSTGRES = "database: SQLite", "database: PostgreSQL (psycopg)"
GRPC, ASYNCIO, PROTOBUF, SQLALCHEMY = "grpc (grpc.aio, cygrpc)", "asyncio loop", "protobuf", "SQLAlchemy"
LOGGING, CRYPTO, STDLIB, INTERPRETER = "logging", "crypto (JWT)", "stdlib (other)", "interpreter / libc"
LOOP_C = "C run by the asyncio loop (cygrpc, tasks)"

_FRAME = re.compile(r"^(?P<func>.*) \((?P<file>[^()]*?)(?::(?P<line>\d+))?\)$")
_THREAD = re.compile(r"^thread \((?P<tid>\d+)\)(?::\s*(?P<name>.*))?$")
# Native functions a blocked thread sits in (the innermost named native frame of its stack).
_WAITS = {
    "epoll_wait", "epoll_pwait", "poll", "ppoll", "select", "pselect", "pselect6", "clock_nanosleep",
    "nanosleep", "pthread_cond_wait", "pthread_cond_timedwait", "pthread_cond_clockwait", "sem_wait",
    "sem_timedwait", "sem_clockwait", "PyThread_acquire_lock_timed", "syscall", "accept", "accept4",
    "do_futex_wait", "__futex_abstimed_wait_common", "futex_wait",
}  # fmt: skip
# Python functions (file ending, function name ending) a blocked thread sits in, without --native.
_PY_WAITS = (
    ("selectors.py", ""), ("threading.py", "wait"), ("queue.py", "get"), ("concurrent/futures/thread.py",
    "_worker"), ("asyncio/base_events.py", "select"), ("threading.py", "Thread.run"),
)  # fmt: skip
_GC_FUNCS = ("gc_collect_main", "gc_collect_with_callback", "gc_collect_generations", "collect_with_callback")
# Library path fragments (site-packages or a shared object) -> category, first match wins.
_OWNERS = (
    ("/services/ggmodules/", OURS), ("/clients/ggmodules/", OURS),
    ("psycopg", DB_POSTGRES), ("libpq", DB_POSTGRES),
    ("libsqlite3", DB_SQLITE), ("/_sqlite", DB_SQLITE), ("sqlite3/", DB_SQLITE),
    ("/grpc", GRPC), ("cygrpc", GRPC),
    ("/google/protobuf/", PROTOBUF), ("/google/_upb/", PROTOBUF), ("/google/rpc/", PROTOBUF),
    ("/sqlalchemy/", SQLALCHEMY), ("/sqlmodel/", SQLALCHEMY),
    ("/structlog/", LOGGING), ("/logging/", LOGGING),
    ("/jwt/", CRYPTO), ("/cryptography/", CRYPTO), ("libcrypto", CRYPTO),
    ("/asyncio/", ASYNCIO), ("_asynciomodule", ASYNCIO), ("selectors.py", ASYNCIO),
)  # fmt: skip
_DATABASES = (DB_SQLITE, DB_POSTGRES)
# Without --native, a leaf Python line that calls into a driver's C code, by what it calls: the sqlite3
# module's DB-API methods; libpq through psycopg's pgconn (storage/pg_pipeline.py) and the select() on its
# socket that waits for PostgreSQL's answer.
_DRIVER_CALLS = (
    (re.compile(r"\.(execute|executemany|executescript|commit|rollback|fetch(all|one|many))\("), DB_SQLITE),
    (re.compile(r"select\.select\(|\bpg\.\w+\("), DB_POSTGRES),
)
# Frames of a connection waiting for PostgreSQL to notify it (LISTEN): idle, not a query's wait.
_LISTENING = ("Connection.notifies", "AsyncConnection.notifies")


@dataclass(frozen=True)
class Frame:
    func: str
    file: str
    line: int | None

    @property
    def python(self) -> bool:
        """A frame of Python code (a .py file, or code compiled from a string)."""
        return self.file.endswith(".py") or self.file.startswith("<")

    @property
    def named(self) -> bool:
        return not self.func.startswith("0x")

    def short(self, line: bool = False) -> str:
        where = f":{self.line}" if line and self.line is not None and self.python else ""
        return f"{self.func} ({short_path(self.file)}{where})"


def short_path(path: str) -> str:
    """.../services/ggmodules/storage/x.py -> storage/x.py; .../site-packages/grpc/aio/_server.py ->
    grpc/aio/_server.py; a shared object -> its file name; the standard library -> its path in lib/python3."""
    for marker in ("/services/ggmodules/", "/clients/ggmodules/", "/site-packages/", "/Modules/"):
        if marker in path:
            return path.split(marker, 1)[1]
    match = re.search(r"/lib/python3\.\d+/(.*)$", path)
    if match:
        return match.group(1)
    return path.rsplit("/", 1)[-1]


def parse_frame(text: str) -> Frame:
    match = _FRAME.match(text)
    if not match:
        return Frame(text, "", None)
    line = match.group("line")
    return Frame(match.group("func"), match.group("file"), int(line) if line else None)


def owner(frame: Frame) -> str | None:
    """The category a frame's code belongs to; None for the interpreter, libc and unnamed native code."""
    for fragment, category in _OWNERS:
        if fragment in frame.file:
            return category
    if frame.file == "<string>":  # code compiled from a string (a dataclass's __init__): its caller's
        return None
    if frame.python:
        return STDLIB if re.search(r"/lib/python3\.\d+/|^<frozen", frame.file) else f"lib: {_top(frame)}"
    return None


def _top(frame: Frame) -> str:
    path = frame.file.split("/site-packages/", 1)[-1]
    return path.split("/", 1)[0].removesuffix(".py")


def our_module(frame: Frame) -> str:
    return short_path(frame.file)


def categorise(stack: list[Frame]) -> tuple[str, str]:
    """(category, detail) of one sample; detail is our module for OURS, else the category again."""
    if _gil_wait(stack):
        return GIL, GIL
    if any(f.func.startswith(_GC_FUNCS) for f in stack):
        return GC, GC
    if any(f.func in _LISTENING and "psycopg" in f.file for f in stack):
        return IDLE, IDLE
    for frame in stack:
        category = owner(frame)
        if category in _DATABASES:
            assert category is not None
            return category, category
    if _idle(stack):
        return IDLE, IDLE
    leaf = stack[-1]
    driver = _driver_call(leaf) if leaf.python else None
    if driver is not None:
        return driver, driver
    if leaf.python and leaf.file.endswith("asyncio/events.py") and leaf.func == "Handle._run":
        return LOOP_C, LOOP_C
    for frame in reversed(stack):
        category = owner(frame)
        if category is not None:
            return category, our_module(frame) if category == OURS else category
    return INTERPRETER, INTERPRETER


def _driver_call(frame: Frame) -> str | None:
    """Without --native: the database a leaf Python line calls into (_DRIVER_CALLS), if it does."""
    if frame.line is None:
        return None
    source = linecache.getline(frame.file, frame.line)
    return next((database for pattern, database in _DRIVER_CALLS if pattern.search(source)), None)


def _gil_wait(stack: list[Frame]) -> bool:
    """take_gil on the stack, or (where it is inlined) a condition wait called straight from the interpreter
    or one of Python's C modules: re-taking the GIL after a call that released it. A lock or queue wait goes
    through PyThread_acquire_lock_timed; grpc's own waits through cygrpc."""
    if any(f.func == "take_gil" for f in stack):
        return True
    native = [f for f in reversed(stack) if f.named and "libc.so" not in f.file]
    leaf = next((f for f in reversed(stack) if f.named), None)
    if leaf is None or leaf.func not in ("pthread_cond_timedwait", "pthread_cond_wait") or not native:
        return False
    caller = native[0]
    interpreter = "libpython" in caller.file or "/Python-3." in caller.file
    return interpreter and not caller.python and caller.func != "PyThread_acquire_lock_timed"


def _idle(stack: list[Frame]) -> bool:
    if not stack:
        return True
    if not stack[-1].python:  # --native: the innermost named native frame below the innermost Python one
        for frame in reversed(stack):
            if frame.python:
                return False
            if frame.named:
                return frame.func in _WAITS
        return False
    leaf = stack[-1]
    return any(leaf.file.endswith(suffix) and leaf.func.endswith(name) for suffix, name in _PY_WAITS)


@dataclass
class Profile:
    """One process's samples, grouped."""

    total: int = 0
    by_category: Counter[str] = field(default_factory=Counter)
    by_module: Counter[str] = field(default_factory=Counter)  # our code, by module
    leaves: Counter[str] = field(default_factory=Counter)  # active samples by leaf function
    # active samples with our function anywhere on the stack
    ours_cumulative: Counter[str] = field(default_factory=Counter)
    # thread name (numbers as *) -> [active samples, all samples]
    threads: dict[str, list[int]] = field(default_factory=lambda: defaultdict(lambda: [0, 0]))
    thread_ids: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))

    @property
    def active(self) -> int:
        return self.total - self.by_category[IDLE]


def read_raw(lines: Iterable[str]) -> Profile:
    lines = [line.rstrip("\n") for line in lines if line.strip()]
    names: dict[str, str] = {}
    parsed = []
    for line in lines:
        stack_text, _, count = line.rpartition(" ")
        parts = stack_text.split(";")
        thread = _THREAD.match(parts[0])
        tid, name = (thread.group("tid"), thread.group("name")) if thread else ("?", None)
        if name:
            names[tid] = name
        parsed.append((tid, [parse_frame(p) for p in parts[1:] if p], int(count)))
    profile = Profile()
    for tid, stack, count in parsed:
        category, detail = categorise(stack)
        group = re.sub(r"[_-]?\d+\b", "_*", names.get(tid, "unnamed"))
        profile.thread_ids[group].add(tid)
        profile.threads[group][1] += count
        profile.total += count
        profile.by_category[category] += count
        if category == IDLE:
            continue
        profile.threads[group][0] += count
        if category == OURS:
            profile.by_module[detail] += count
        leaf = next((f for f in reversed(stack) if f.named), None)
        profile.leaves[leaf.short(line=True) if leaf else "?"] += count
        for ours in {f.short() for f in stack if owner(f) == OURS and "/cli/" not in f.file}:
            profile.ours_cumulative[ours] += count
    return profile


def read_file(path: Path) -> Profile:
    with path.open() as handle:
        return read_raw(handle)


def _ranked(counts: Counter[str], top: int | None = None) -> list[tuple[str, int]]:
    """Largest first, ties by name (a stable table from run to run)."""
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:top]


def _pct(n: int, of: int) -> str:
    return f"{100 * n / of:5.1f}%" if of else "    -"


def report(profile: Profile, top: int = 15, modules: int = 10) -> list[str]:
    """The table `make profile` prints for one process."""
    if not profile.total:
        return ["  (no samples)"]
    active = profile.active
    threads = []
    for name, (busy, n) in sorted(profile.threads.items(), key=lambda kv: -kv[1][0]):
        count = len(profile.thread_ids[name])
        threads.append(f"{name}{f' x{count}' if count > 1 else ''} {_pct(busy, n).strip()}")
    out = [
        f"  {profile.total:,} samples over all threads, {active:,} active "
        f"({_pct(active, profile.total).strip()})",
        f"  threads (share of each one's samples that is active): {', '.join(threads)}",
        f"  {'category':<42} {'of all':>7} {'of active':>10}",
    ]

    def row(name: str, n: int, indent: str = "  ") -> str:
        width = 44 - len(indent)
        of_active = _pct(n, active) if name != IDLE else ""
        return f"{indent}{name:<{width}} {_pct(n, profile.total):>7} {of_active:>10}"

    for category, n in _ranked(profile.by_category):
        out.append(row(category, n))
        if category == OURS:
            out += [row(module, m, "    ") for module, m in _ranked(profile.by_module, modules)]
            rest = sum(m for _, m in _ranked(profile.by_module)[modules:])
            if rest:
                out.append(row("(other modules)", rest, "    "))
    out.append(f"  top {top} leaf functions (share of active samples; the frame the thread was in)")
    out += [f"    {_pct(n, active)}  {name}" for name, n in _ranked(profile.leaves, top)]
    out.append(f"  top {top} of our functions, cumulative (share of active samples with it on the stack)")
    out += [f"    {_pct(n, active)}  {name}" for name, n in _ranked(profile.ours_cumulative, top)]
    return out
