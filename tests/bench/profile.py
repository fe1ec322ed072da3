"""`make profile`: where the service processes spend their time on each issue 10 workload, sampled by py-spy.

    .venv/bin/python -m tests.bench.profile [--only TARGET ...] [--seconds N] [--rate HZ] [--native] [--gil]

For each target (tests/bench/profile_targets.py) the processes its `make bench` section starts are started
the same way (the bench modules' own classes), warmed up, and then, while the target's workload runs for
N seconds, `py-spy record` samples every service process at once. Each process gets a table
(tests/bench/profile_summary.py says how samples are put into categories): its CPU over the window and per
operation, the share of its samples that are idle, in grpc, in the database, in our code by module, GC,
GIL waits, the top leaf functions and the top of our functions by cumulative share. The raw profiles are
kept under var/profiles/ (collapsed stacks: speedscope.app and flamegraph.pl open them).

By default py-spy samples without pausing the process (--nonblocking), so the workload runs at nearly its
own speed and waits (the database, the client) keep their true share; compiled code leaves no frame then:
cygrpc's work shows as the asyncio loop's Handle._run, the sqlite3 module's as the Python line calling
execute or commit (counted as the database). --native adds the C frames (cygrpc, libsqlite3, the GC, GIL
waits) but pauses the process for every sample: the workload runs several times slower and waits on the
outside world are under-counted against CPU work, so read its shares among the active categories only.
Timing-free and slow: not part of `make test`; absolute rates printed here are not figures to quote.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tests.bench.profile_summary import read_file, report
from tests.bench.writes import cpu_seconds
from tests.harness import ROOT

OUT = ROOT / "var" / "profiles"
PTRACE_HINT = (
    "py-spy reads another process's memory (ptrace): run as root, or give py-spy CAP_SYS_PTRACE, or allow "
    "it with `sysctl kernel.yama.ptrace_scope=0`"
)


def py_spy() -> str | None:
    """The py-spy beside this interpreter (the dev extras install it), else one on PATH."""
    beside = Path(sys.executable).parent / "py-spy"
    return str(beside) if beside.exists() else shutil.which("py-spy")


@dataclass
class Options:
    seconds: int = 10
    rate: int = 100
    native: bool = False
    gil: bool = False
    out: Path = OUT


@dataclass
class Window:
    """The sampling window of one target: `open` starts py-spy on each process and returns when the
    workload should stop; `close` waits for py-spy and prints each process's table."""

    target: str
    options: Options
    stamp: str = field(default_factory=lambda: time.strftime("%Y%m%dT%H%M%S"))
    _spies: dict[str, tuple[int, subprocess.Popen[bytes], Path, Path, float]] = field(default_factory=dict)
    _t0: float = 0.0

    def open(self, processes: dict[str, int]) -> float:
        """`processes`: label -> pid. Returns the perf_counter() instant the workload runs until."""
        exe = py_spy()
        assert exe is not None  # checked by main
        self.options.out.mkdir(parents=True, exist_ok=True)
        mode = ["--native"] if self.options.native else ["--nonblocking"]
        for label, pid in processes.items():
            raw = self.options.out / f"{self.stamp}-{self.target}-{label}.txt"
            log = raw.with_suffix(".log")
            argv = [exe, "record", "--pid", str(pid), "--rate", str(self.options.rate), "--format", "raw",
                    "--output", str(raw), "--duration", str(self.options.seconds), "--idle",
                    "--threads", "--full-filenames", *mode, *(["--gil"] if self.options.gil else [])]
            with log.open("wb") as handle:
                spy = subprocess.Popen(argv, stdout=handle, stderr=subprocess.STDOUT)
            self._spies[label] = (pid, spy, raw, log, cpu_seconds(pid))
        self._t0 = time.perf_counter()
        # py-spy takes a moment to attach; the workload goes on a little past its --duration.
        return self._t0 + self.options.seconds + 0.5

    def close(self, operations: int, unit: str) -> None:
        elapsed = time.perf_counter() - self._t0
        cpus = {label: cpu_seconds(pid) - cpu0 for label, (pid, _, _, _, cpu0) in self._spies.items()}
        print(f"  workload: {operations:,} {unit} in {elapsed:.1f} s while sampled (load average "
              f"{Path('/proc/loadavg').read_text().split()[0]}; py-spy slows it: not a rate to quote)")
        for label, (pid, spy, raw, log, _) in self._spies.items():
            try:
                rc = spy.wait(self.options.seconds + 60)
            except subprocess.TimeoutExpired:
                spy.kill()
                rc = spy.wait()
            cpu = cpus[label]
            per_op = f", {cpu / operations * 1e6:,.0f} µs CPU per {unit.rstrip('s')}" if operations else ""
            print(f"\n  [{label}, pid {pid}]  CPU {cpu:.2f} s over {elapsed:.1f} s "
                  f"({cpu / elapsed:.2f} cores){per_op}")
            if rc != 0 or not raw.exists():
                said = log.read_text(errors="replace").strip().splitlines()
                print(f"  py-spy could not sample it (exit {rc}): {said[-1] if said else 'no output'}")
                if any("ermission" in line or "ptrace" in line for line in said):
                    print(f"  {PTRACE_HINT}")
                continue
            print(f"  raw profile: {raw.relative_to(ROOT) if raw.is_relative_to(ROOT) else raw}")
            print("\n".join(report(read_file(raw))))
        self._spies.clear()


def until_then(until: float, step: Callable[[], object]) -> int:
    """Calls `step()` until the perf_counter() instant `until`; returns how many calls were made."""
    done = 0
    while time.perf_counter() < until:
        step()
        done += 1
    return done


def main() -> None:
    from tests.bench.profile_targets import TARGETS

    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=raw)
    parser.add_argument("--only", action="append", choices=list(TARGETS), help="a target (repeatable)")
    parser.add_argument("--seconds", type=int, default=10, help="sampling window per target (default 10)")
    parser.add_argument("--rate", type=int, default=100, help="samples per second per thread (default 100)")
    parser.add_argument("--native", action="store_true", help="C frames too (GC, cygrpc, libsqlite3); pauses")
    parser.add_argument("--gil", action="store_true", help="only samples of threads holding the GIL")
    args = parser.parse_args()
    if py_spy() is None:
        sys.exit("py-spy is not installed: `make setup` installs it with the dev extras "
                 "(or .venv/bin/pip install py-spy)")
    options = Options(max(1, args.seconds), args.rate, native=args.native, gil=args.gil)
    mode = ("--native (pausing the process per sample)" if options.native
            else "--nonblocking (Python frames; GC and GIL waits show with --native)")
    print(f"py-spy {mode}, {options.rate} Hz, {options.seconds:g} s per target; raw profiles in "
          f"{options.out}; load average {Path('/proc/loadavg').read_text().split()[0]}")
    for name, (title, run) in TARGETS.items():
        if args.only in (None, []) or name in args.only:
            print(f"\n=== {name}: {title}")
            run(Window(name, options))


if __name__ == "__main__":
    main()
