// One short agent session against a Registry and a ModuleStore, printed as JSON lines on stdout (the
// session the untyped Node client used to run, now through the typed client): create a run, open an
// instance, write its window, tasks and board, fork it and let the copy add a task and a board issue (R11:
// its own task list, numbering on; R14: the one board), render the original's prompt, then provoke one
// refusal (a second system prompt, R9) and report its code and reason.
//
//   node clients/typescript/dist/examples/session.js --registry HOST:PORT --modulestore HOST:PORT
//
// Exits 0 when every step did what it should (the last one being refused), 1 otherwise.

import { parseArgs } from "node:util";

import { toJson } from "@bufbuild/protobuf";

import { GgClient, GgError } from "../index.js";
import { Kind, MemoryScope, MemoryStrategy, RosterRowSchema, type RosterRow } from "../gen/ggmodules/common/v1/common_pb.js";
import { ContributionSchema } from "../gen/ggmodules/modulestore/v1/modulestore_pb.js";
import { RunStatus } from "../gen/ggmodules/registry/v1/registry_pb.js";

const SYSTEM_PROMPT = "You are the planner. Break the goal into tasks and track them.";
const USER_MESSAGE = "Plan the release of ggmodules 0.1.";
const AS_JSON = { useProtoFieldName: true, alwaysEmitImplicit: true } as const;

const emit = (line: object) => process.stdout.write(`${JSON.stringify(line)}\n`);
const rows = (roster: RosterRow[]) => roster.map((r) => toJson(RosterRowSchema, r, AS_JSON));

function storeOf(roster: RosterRow[], kind: Kind): string {
  const row = roster.find((r) => r.kind === kind);
  if (!row?.enabled) throw new Error(`the roster has no ${Kind[kind]} store`);
  return row.storeId;
}

async function session(gg: GgClient): Promise<boolean> {
  const { registry, modulestore } = gg;
  const { run } = await registry.createRun({
    name: "node-session",
    profiles: [{ name: "planner", modules: { history: { enabled: true },
      memories: { enabled: true, strategy: MemoryStrategy.SCRATCHPAD, scope: MemoryScope.INSTANCE },
      tasks: { enabled: true } } }],
    boardEnabled: true,
  });
  const runId = run!.runId;
  emit({ step: "create_run", run_id: runId, status: `RUN_STATUS_${RunStatus[run!.status]}`,
    board_enabled: run!.boardEnabled });

  const instance = (await registry.openInstance({ runId, profile: "planner" })).instance!;
  emit({ step: "open_instance", agent_id: instance.agentId, profile: instance.profile, roster: rows(instance.roster) });
  const at = (storeId: string) => ({ runId, agentId: instance.agentId, storeId });
  const history = storeOf(instance.roster, Kind.HISTORY);

  const prompt = await modulestore.write({ ...at(history), op: { case: "setSystemPrompt", value: { text: SYSTEM_PROMPT } } });
  emit({ step: "set_system_prompt", store_id: prompt.storeId, text: SYSTEM_PROMPT });

  const appended = await modulestore.write({ ...at(history), op: { case: "appendMessages",
    value: { messages: [{ role: "user", content: USER_MESSAGE }], startTurn: true } } });
  emit({ step: "append_messages", store_id: appended.storeId, role: "user", content: USER_MESSAGE,
    last_seq: Number(appended.lastSeq), turn: Number(appended.turn) });

  const newTask = { title: "Write the release notes", description: "One paragraph per service." };
  const task = await modulestore.write({ ...at(storeOf(instance.roster, Kind.TASKS)),
    op: { case: "createTask", value: newTask } });
  emit({ step: "create_task", store_id: task.storeId, task_id: Number(task.taskId), ...newTask });

  const newIssue = { prefix: "GG", title: "Release 0.1", body: "Tracks the release." };
  const issue = await modulestore.write({ ...at(storeOf(instance.roster, Kind.BOARD)),
    op: { case: "createIssue", value: newIssue } });
  emit({ step: "create_issue", store_id: issue.storeId, issue_id: issue.issueId, ...newIssue });

  const copy = (await registry.forkInstance({ runId, agentId: instance.agentId })).instance!;
  emit({ step: "fork_instance", agent_id: copy.agentId, roster: rows(copy.roster) });
  const asCopy = (storeId: string) => ({ runId, agentId: copy.agentId, storeId });
  const addedTask = await modulestore.write({ ...asCopy(storeOf(copy.roster, Kind.TASKS)),
    op: { case: "createTask", value: { title: "Tag the release" } } });
  const addedIssue = await modulestore.write({ ...asCopy(storeOf(copy.roster, Kind.BOARD)),
    op: { case: "createIssue", value: { prefix: "GG", title: "Announce 0.1" } } });
  emit({ step: "copy_writes", task_store_id: addedTask.storeId, task_id: Number(addedTask.taskId),
    task_title: "Tag the release", issue_store_id: addedIssue.storeId, issue_id: addedIssue.issueId,
    issue_title: "Announce 0.1" });

  const rendered = await modulestore.renderPrompt({ runId, agentId: instance.agentId });
  emit({ step: "render_prompt", contributions: rendered.contributions.map((c) => toJson(ContributionSchema, c, AS_JSON)) });

  try {
    await modulestore.write({ ...at(history), op: { case: "setSystemPrompt", value: { text: "A second prompt." } } });
  } catch (err) {
    if (!(err instanceof GgError)) throw err;
    emit({ step: "refusal", code: err.codeName, reason: err.reason, message: err.rawMessage });
    return err.codeName === "FAILED_PRECONDITION" && err.reason === "SYSTEM_PROMPT_ALREADY_SET";
  }
  emit({ step: "refusal", error: "a second system prompt was accepted (R9)" });
  return false;
}

async function main(): Promise<number> {
  const { values } = parseArgs({ options: { registry: { type: "string" }, modulestore: { type: "string" } } });
  const gg = new GgClient(values);
  try {
    return (await session(gg)) ? 0 : 1;
  } catch (err) {
    emit({ step: "error", error: err instanceof Error ? `${err.name}: ${err.message}` : String(err) });
    return 1;
  } finally {
    gg.close();
  }
}

process.exitCode = await main();
