"""`make bench ARGS="--only archive"`: SearchArchive over archives of 1,000 and 100,000 threads, and
archive_thread with its index, each beside a no-op RPC of the same ModuleStore process.

The threads are made-up English-like text: words drawn from a vocabulary of 20,000 by a Zipf law, as words
are in real text, so a rare word is in few threads and a common one in many.

Seeding: 100,000 Write RPCs of one thread each would take minutes, so the archives are filled from this
process by a bulk insert into ModuleStore's thread table (`lineage.THREADS`, 5,000 rows a statement), which
the database indexes exactly as it indexes an archive_thread (the FTS5 trigger on SQLite, the generated
column and GIN index on PostgreSQL), followed by one update of the store's head and figures; on PostgreSQL
the table is then ANALYZEd, as autovacuum does after a bulk load. Every search and every measured
archive_thread goes through the real RPC. (The bulk insert bypasses ModuleStore's store size limit, 2 MiB by
default, which an archive of 100,000 such threads exceeds: a deployment that keeps archives this large raises
GGMODULES_MODULESTORE_MAX_STORE_BYTES_ARCHIVE.)
"""

from __future__ import annotations

import bisect
import itertools
import random
import time
import uuid
from collections.abc import Callable, Iterator

from grpc_health.v1 import health_pb2, health_pb2_grpc
from sqlalchemy import text, update

from ggmodules.common.v1 import common_pb2
from ggmodules.core.modules.archive_query import COMMON_WORDS
from ggmodules.core.modules.contents import ArchivedThread, Message, MessageInput
from ggmodules.core.modules.figures import text_bytes
from ggmodules.core.modules.ops import ArchiveThread
from ggmodules.modulestore.v1 import modulestore_pb2
from ggmodules.modulestore.v1 import modulestore_service_pb2 as svc
from ggmodules.storage.engine import make_engine
from ggmodules.storage.modulestore.lineage import THREADS, thread_json
from ggmodules.storage.modulestore.lookup import STORES
from tests.harness import ServiceProcess, open_channel, stubs

VOCABULARY = 20_000
SIZES = (1_000, 100_000)
SEARCH_TARGET = 3.0  # search p50 at 100,000 threads <= 3x the p50 at 1,000
WRITE_TARGET = 2.0  # archive_thread p50 <= 2x no-op
INDEX_TARGET = 1.25  # archive_thread p50 <= 1.25x a history append of the same messages: the index's cost
Sample = Callable[[], object]


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def timed(fn: Sample, n: int) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1e6)
    return out


class Corpus:
    """Deterministic made-up text: word i (0 = most common) is drawn with probability ~ 1/(i+1)^1.07."""

    def __init__(self, seed: int = 16) -> None:
        self.rng = random.Random(seed)
        syllables = [c + v for c in "bdfgklmnprstvz" for v in ("a", "e", "i", "o", "u", "ai", "ou")]
        words: set[str] = set()
        while len(words) < VOCABULARY:
            word = "".join(self.rng.choice(syllables) for _ in range(self.rng.randint(2, 4)))
            if word not in COMMON_WORDS:  # "more", "some": a query of one would be refused
                words.add(word)
        self.words = sorted(words, key=lambda w: (len(w), w))
        weights = [1 / (i + 1) ** 1.07 for i in range(VOCABULARY)]
        self.cumulative = list(itertools.accumulate(weights))

    def word(self) -> str:
        return self.words[bisect.bisect(self.cumulative, self.rng.random() * self.cumulative[-1])]

    def text(self, n: int) -> str:
        return " ".join(self.word() for _ in range(n))

    def thread(self) -> ArchiveThread:
        messages = tuple(
            MessageInput(role, self.text(self.rng.randint(20, 40))) for role in ("user", "assistant", "user")
        )
        return ArchiveThread(self.text(4), messages)

    def queries(self, count: int, first: int, last: int, words: int) -> list[str]:
        """`count` queries of `words` words, each of rank first..last (0 = the most common word)."""
        rng = random.Random(count * 1000 + first)
        return [" ".join(self.words[rng.randint(first, last)] for _ in range(words)) for _ in range(count)]


class ArchiveBench:
    def __init__(self, label: str, database_url: str, quick: bool) -> None:
        self.label, self.url, self.quick = label, database_url, quick
        self.proc = ServiceProcess("modulestore", "--database-url", database_url, "--log-level", "warning")
        self.channel = open_channel(self.proc.address)
        self.stub = stubs(self.channel, "modulestore")
        self.health = health_pb2_grpc.HealthStub(self.channel)
        self.run = f"run-{uuid.uuid4().hex[:12]}"
        self.corpus = Corpus()

    def close(self) -> None:
        self.channel.close()
        self.proc.terminate()

    def bind(self, agent: str) -> tuple[str, str]:
        """An agent holding a history and an archive; their store ids."""
        bindings = [
            modulestore_pb2.Binding(kind=kind, action=modulestore_pb2.BIND_ACTION_CREATE,
                                    origin=common_pb2.ORIGIN_CREATED, may_write=True)
            for kind in (common_pb2.KIND_HISTORY, common_pb2.KIND_ARCHIVE)
        ]
        resp = self.stub.BindInstance(svc.BindInstanceRequest(
            request_id=uuid.uuid4().hex, run_id=self.run, agent_id=agent, profile="bench", cause="open",
            bindings=bindings))
        stores = {r.kind: r.store_id for r in resp.roster}
        return stores[common_pb2.KIND_HISTORY], stores[common_pb2.KIND_ARCHIVE]

    def seed(self, store: str, count: int) -> float:
        """Archives `count` threads into `store` by a bulk insert (see the module docstring); threads/s."""
        engine = make_engine(self.url)
        t0 = time.perf_counter()
        size = 0
        try:
            with engine.begin() as conn:
                for start in range(0, count, 5000):
                    rows = []
                    for seq in range(start + 1, min(start + 5000, count) + 1):
                        t = self.corpus.thread()
                        size += text_bytes(t.title, *(m.content for m in t.messages))
                        thread = ArchivedThread(seq, t.title, tuple(Message(i, m.role, m.content, 0)
                                                                    for i, m in enumerate(t.messages, 1)))
                        rows.append({"run_id": self.run, "store_id": store, "seq": seq, "title": t.title,
                                     "messages": thread_json(thread)})
                    conn.execute(THREADS.insert(), rows)
                key = (STORES.c.run_id == self.run) & (STORES.c.store_id == store)
                conn.execute(update(STORES).where(key).values(
                    head_seq=count, items=count, bytes=size, writes=STORES.c.writes + count))
            if engine.dialect.name == "postgresql":
                with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
                    conn.execute(text("ANALYZE ms_archive_threads"))
        finally:
            engine.dispose()
        return count / (time.perf_counter() - t0)

    def searches(self, agent: str, store: str, queries: list[str]) -> tuple[list[float], float]:
        """µs per search (each query twice: the first round warms the cache, the second is measured) and
        the mean number of threads on the first page."""
        requests = [
            svc.SearchArchiveRequest(
                run_id=self.run, agent_id=agent, store_id=store, query=q, page_size=10)
            for q in queries
        ]
        for request in requests:
            self.stub.SearchArchive(request)
        samples, found = [], 0
        for request in requests:
            t0 = time.perf_counter()
            found += len(self.stub.SearchArchive(request).threads)
            samples.append((time.perf_counter() - t0) * 1e6)
        return samples, found / len(requests)

    def noop(self) -> list[float]:
        check = health_pb2.HealthCheckRequest()
        timed(lambda: self.health.Check(check), 200)  # warm up
        return timed(lambda: self.health.Check(check), 300 if self.quick else 2000)

    def writes(self, agent: str, history: str, archive: str) -> tuple[list[float], list[float]]:
        """µs per archive_thread of a three-message thread, and per history append of the same messages."""
        n = 200 if self.quick else 1000

        def request(store: str, thread: ArchiveThread, archived: bool) -> svc.WriteRequest:
            inputs = [modulestore_pb2.MessageInput(role=m.role, content=m.content) for m in thread.messages]
            body: dict[str, object] = (
                {"archive_thread": svc.ArchiveThread(title=thread.title, messages=inputs)}
                if archived else {"append_messages": svc.AppendMessages(messages=inputs)})
            return svc.WriteRequest(
                request_id=uuid.uuid4().hex, run_id=self.run, agent_id=agent, store_id=store,
                **body)  # type: ignore[arg-type]

        def measure(store: str, archived: bool) -> list[float]:
            reqs = [request(store, self.corpus.thread(), archived) for _ in range(n + 100)]
            it: Iterator[svc.WriteRequest] = iter(reqs)
            timed(lambda: self.stub.Write(next(it)), 100)  # warm up
            return timed(lambda: self.stub.Write(next(it)), n)

        return measure(archive, True), measure(history, False)


def shapes(corpus: Corpus, quick: bool) -> dict[str, list[str]]:
    """Query shapes by how common their words are (rank 0 = the commonest word)."""
    n = 20 if quick else 60
    return {
        "two words of rank 300-3,000 (AND)": corpus.queries(n, 300, 3000, 2),
        "one word of rank 300-3,000 (in ~0.2-2% of threads)": corpus.queries(n, 300, 3000, 1),
        "one word of rank 30-300 (in ~2-15% of threads)": corpus.queries(n, 30, 300, 1),
        "one of the 10 commonest words (in ~25-60% of threads)": corpus.queries(n, 0, 9, 1),
    }


def figures(label: str, url: str, quick: bool) -> None:
    sizes = (1_000, 20_000) if quick else SIZES
    small, large = sizes
    bench = ArchiveBench(label, url, quick)
    queries = shapes(bench.corpus, quick)
    try:
        noop = bench.noop()
        stores = {size: bench.bind(f"archivist-{size}") for size in sizes}

        def measure(size: int) -> dict[str, tuple[list[float], float]]:
            agent, store = f"archivist-{size}", stores[size][1]
            return {shape: bench.searches(agent, store, qs) for shape, qs in queries.items()}

        rates = {small: bench.seed(stores[small][1], small)}
        alone = measure(small)  # the database holds the small archive only
        rates[large] = bench.seed(stores[large][1], large)
        beside, grown = measure(small), measure(large)
        writer = bench.bind("writer-0")
        archived, appended = bench.writes("writer-0", writer[0], writer[1])
    finally:
        bench.close()
    noop_p50 = percentile(noop, 0.5)
    print(f"\n[{label}]")
    print(f"  no-op unary RPC (health Check)   p50 {noop_p50:8.0f}   p99 {percentile(noop, 0.99):8.0f}")
    print(f"  archives of {small:,} and {large:,} threads bulk-inserted at {rates[small]:.0f} and "
          f"{rates[large]:.0f} threads/s, indexed by the database (not timed below)")
    print("  SearchArchive, page of 10: p50 (p99) per query shape, and threads on the page (mean)")
    for shape in queries:
        base = percentile(alone[shape][0], 0.5)
        print(f"    {shape}")
        for what, (samples, found) in (
            (f"{small:>7,} threads, alone in the database", alone[shape]),
            (f"{small:>7,} threads, beside the {large:,}", beside[shape]),
            (f"{large:>7,} threads", grown[shape]),
        ):
            p50, p99 = percentile(samples, 0.5), percentile(samples, 0.99)
            line = f"      {what:<42} p50 {p50:8.0f} ({p99:.0f})  found {found:4.1f}"
            if samples is grown[shape][0]:
                verdict = "" if p50 / base <= SEARCH_TARGET else "   MISSED"
                line += f"   = {p50 / base:.2f}x alone (target <= {SEARCH_TARGET:g}x){verdict}"
            print(line)
    a50, h50 = percentile(archived, 0.5), percentile(appended, 0.5)
    verdict = "" if a50 / noop_p50 <= WRITE_TARGET else "   MISSED"
    print(f"  archive_thread, 3 messages, indexed                p50 {a50:8.0f}"
          f"   = {a50 / noop_p50:.2f}x no-op (target <= {WRITE_TARGET:g}x){verdict}")
    print(f"  history append of the same 3 messages (no index)   p50 {h50:8.0f}"
          f"   = {h50 / noop_p50:.2f}x no-op (the write path without an index)")
    verdict = "" if a50 / h50 <= INDEX_TARGET else "   MISSED"
    print(f"  archive_thread / history append = {a50 / h50:.2f} (target <= {INDEX_TARGET:g}: what the index"
          f" adds to a write){verdict}")
    print("  A search scores every thread of its store that matches before it returns the best 10, so its"
          " cost follows the\n  number of matches: a word in a tenth of the threads matches 100 times more of"
          " 100,000 than of 1,000. On SQLite,\n  BM25 also counts each word's threads in the whole index"
          " (its IDF), all stores included.")
