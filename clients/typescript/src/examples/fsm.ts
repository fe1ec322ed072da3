// The README's two-stage FSM run, through the typed client: a planner hands its window and task list to a
// coder along an FSM edge; its scratchpad stays behind; the planner's next write is refused HANDED_ON.
// Prints one JSON line per step (the test in tests/polyglot reads them back against the services).
//
//   node clients/typescript/dist/examples/fsm.js --registry H:P --modulestore H:P --transfer H:P --telemetry H:P

import { parseArgs } from "node:util";

import { GgClient, GgError } from "../index.js";
import { Kind, MemoryScope, MemoryStrategy, Outcome, type RosterRow } from "../gen/ggmodules/common/v1/common_pb.js";

const emit = (line: object) =>
  process.stdout.write(`${JSON.stringify(line, (_k, v) => (typeof v === "bigint" ? Number(v) : v))}\n`);

function storeOf(roster: RosterRow[], kind: Kind): string {
  const row = roster.find((r) => r.kind === kind);
  if (!row?.enabled) throw new Error(`no ${Kind[kind]} store in the roster`);
  return row.storeId;
}

async function fsm(gg: GgClient): Promise<boolean> {
  const { run } = await gg.registry.createRun({
    name: "two-stage",
    profiles: [
      { name: "planner", modules: { history: { enabled: true },
        memories: { enabled: true, strategy: MemoryStrategy.SCRATCHPAD, scope: MemoryScope.INSTANCE },
        tasks: { enabled: true } } },
      { name: "coder", modules: { history: { enabled: true }, tasks: { enabled: true }, archive: { enabled: true } } },
    ],
    fsm: {
      initial: "plan",
      states: [{ name: "plan", profile: "planner" }, { name: "code", profile: "coder" }],
      edges: [{ from: "plan", to: "code", carry: ["history", "tasks"] }],
    },
  });
  const runId = run!.runId;
  const planner = (await gg.registry.openInstance({ runId, profile: "planner" })).instance!;
  emit({ step: "open_instance", run_id: runId, agent_id: planner.agentId, fsm_state: planner.fsmState });
  const as = (kind: Kind) => ({ runId, agentId: planner.agentId, storeId: storeOf(planner.roster, kind) });
  await gg.modulestore.write({ ...as(Kind.HISTORY), op: { case: "setSystemPrompt", value: { text: "You plan." } } });
  await gg.modulestore.write({ ...as(Kind.HISTORY), op: { case: "appendMessages",
    value: { messages: [{ role: "user", content: "Build a CLI" }], startTurn: true } } });
  const task = await gg.modulestore.write({ ...as(Kind.TASKS), op: { case: "createTask",
    value: { title: "write the parser" } } });
  await gg.modulestore.write({ ...as(Kind.MEMORIES), op: { case: "writePad", value: { text: "the user wants argparse" } } });
  emit({ step: "planner_wrote", task_id: task.taskId });

  const moved = await gg.transfer.transition({ runId, agentId: planner.agentId, toState: "code" });
  const transfer = moved.transfer!;
  emit({
    step: "transition",
    successor: transfer.successorAgentId,
    to_state: transfer.toState,
    outcomes: transfer.outcomes.map((o) => ({ kind: Kind[o.kind], outcome: Outcome[o.outcome],
      before: o.storeIdBefore, after: o.storeIdAfter })),
    opening_note: transfer.openingNote,
    credential_sent: moved.successorCredential !== "",
  });

  const coder = { runId, agentId: transfer.successorAgentId, storeId: storeOf(transfer.roster, Kind.HISTORY) };
  await gg.modulestore.write({ ...coder, op: { case: "setSystemPrompt", value: { text: "You code." } } });
  const window = await gg.modulestore.getStore({ ...coder });
  const tasks = await gg.modulestore.getStore({ ...coder, storeId: storeOf(transfer.roster, Kind.TASKS) });
  emit({
    step: "coder_reads",
    system_prompt: window.contents?.contents.case === "history" ? window.contents.contents.value.systemPrompt : null,
    messages: window.contents?.contents.case === "history"
      ? window.contents.contents.value.messages.map((m) => m.content) : null,
    tasks: tasks.contents?.contents.case === "tasks" ? tasks.contents.contents.value.tasks.map((t) => t.title) : null,
  });

  const turn = await gg.telemetry.reportTurn({ runId, agentId: coder.agentId, turn: 1n,
    modules: [{ kind: Kind.HISTORY, tokens: 42n }] });
  emit({ step: "report_turn", cursor: turn.cursor });

  const seen: string[] = [];
  const stop = new AbortController();
  for await (const item of gg.subscribe({ runId, agentId: coder.agentId }, { signal: stop.signal })) {
    if ("event" in item && item.event) seen.push(item.event.body.case ?? "");
    if ("cursor" in item && item.cursor === turn.cursor) break;
  }
  emit({ step: "subscribe", bodies: seen });

  try {
    await gg.modulestore.write({ ...as(Kind.TASKS), op: { case: "createTask", value: { title: "one more" } } });
  } catch (err) {
    if (!(err instanceof GgError)) throw err;
    emit({ step: "refusal", code: err.codeName, reason: err.reason, metadata: err.reasonMetadata,
      message: err.rawMessage });
    return err.reason === "HANDED_ON";
  }
  emit({ step: "refusal", error: "the planner's write after the handover was accepted" });
  return false;
}

async function main(): Promise<number> {
  const { values } = parseArgs({ options: { registry: { type: "string" }, modulestore: { type: "string" },
    transfer: { type: "string" }, telemetry: { type: "string" }, token: { type: "string" } } });
  const gg = new GgClient(values);
  try {
    return (await fsm(gg)) ? 0 : 1;
  } catch (err) {
    emit({ step: "error", error: err instanceof Error ? `${err.name}: ${err.message}` : String(err) });
    return 1;
  } finally {
    gg.close();
  }
}

process.exitCode = await main();
