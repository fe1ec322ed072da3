// A write session from Node: open an agent, then write its window and tasks on one Session stream, twenty
// appends pipelined (sent together, each awaited once durable), a task, a task over the cap (refused, the
// session going on), one more append. Prints one JSON line with what it saw.
//
//   node clients/typescript/dist/examples/write-session.js --registry HOST:PORT --modulestore HOST:PORT

import { parseArgs } from "node:util";

import { GgClient, GgError } from "../index.js";
import { openWriteSession } from "../session.js";

async function main(): Promise<number> {
  const { values } = parseArgs({ options: { registry: { type: "string" }, modulestore: { type: "string" } } });
  const gg = new GgClient(values);
  try {
    const { run } = await gg.registry.createRun({ name: "node-write-session", profiles: [{ name: "writer",
      modules: { history: { enabled: true }, tasks: { enabled: true, caps: { maxItems: 1n } } } }] });
    const runId = run!.runId;
    const { instance } = await gg.registry.openInstance({ runId, profile: "writer" });
    const session = openWriteSession(gg, runId, instance!.agentId);
    const history = { storeId: "history-0" };
    const appended = await Promise.all(Array.from({ length: 20 }, (_, i) => session.write({ ...history,
      op: { case: "appendMessages", value: { messages: [{ role: "user", content: `part ${i}` }] } } })));
    const task = await session.write({ storeId: "tasks-0", op: { case: "createTask", value: { title: "one" } } });
    let refusal = {};
    try {
      await session.write({ storeId: "tasks-0", op: { case: "createTask", value: { title: "two" } } });
    } catch (err) {
      if (!(err instanceof GgError)) throw err;
      refusal = { code: err.codeName, reason: err.reason, metadata: err.reasonMetadata };
    }
    const after = await session.write({ ...history, op: { case: "appendMessages",
      value: { messages: [{ role: "user", content: "after the refusal" }] } } });
    await session.close();
    process.stdout.write(`${JSON.stringify({ run_id: runId, agent_id: instance!.agentId,
      last_seqs: appended.map((w) => Number(w.lastSeq)), task_id: Number(task.taskId), refusal,
      after: Number(after.lastSeq) })}\n`);
    return 0;
  } catch (err) {
    process.stdout.write(`${JSON.stringify({ error: err instanceof Error ? `${err.name}: ${err.message}` : String(err) })}\n`);
    return 1;
  } finally {
    gg.close();
  }
}

process.exitCode = await main();
