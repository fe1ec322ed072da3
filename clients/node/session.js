#!/usr/bin/env node
// One short agent session against a Registry and a ModuleStore, printed as JSON lines on stdout:
// create a run, open an instance, write its window, tasks and board, fork it and let the copy add a task
// and a board issue (R11: its own task list, numbering on; R14: the one board), render the original's
// prompt, then provoke one refusal (a second system prompt, R9) and report its code and reason.
//
//   node clients/node/session.js --registry HOST:PORT --modulestore HOST:PORT [--deadline-ms N]
//
// Exits 0 when every step did what it should (the last one being refused), 1 otherwise.

import { existsSync, readFileSync } from "node:fs";
import { parseArgs } from "node:util";

import * as grpc from "@grpc/grpc-js";

import { connect } from "./index.js";

const PROFILE = {
  name: "planner",
  modules: {
    history: { enabled: true },
    memories: { enabled: true, strategy: "MEMORY_STRATEGY_SCRATCHPAD", scope: "MEMORY_SCOPE_INSTANCE" },
    tasks: { enabled: true },
  },
};
const SYSTEM_PROMPT = "You are the planner. Break the goal into tasks and track them.";
const USER_MESSAGE = "Plan the release of ggmodules 0.1.";

function emit(line) {
  process.stdout.write(`${JSON.stringify(line)}\n`);
}

function storeOf(roster, kind) {
  const row = roster.find((r) => r.kind === kind);
  if (!row?.enabled) throw new Error(`the roster has no ${kind} store: ${JSON.stringify(roster)}`);
  return row.store_id;
}

async function session(client) {
  const { registry, modulestore } = client;

  const newRun = { name: "node-session", profiles: [PROFILE], board_enabled: true };
  const { run } = await registry.createRun(newRun);
  emit({ step: "create_run", run_id: run.run_id, status: run.status, board_enabled: run.board_enabled });

  const { instance } = await registry.openInstance({ run_id: run.run_id, profile: PROFILE.name });
  const roster = instance.roster;
  emit({ step: "open_instance", agent_id: instance.agent_id, profile: instance.profile, roster });

  const at = (store_id) => ({ run_id: run.run_id, agent_id: instance.agent_id, store_id });
  const history = storeOf(roster, "KIND_HISTORY");

  const prompt = await modulestore.write({ ...at(history), set_system_prompt: { text: SYSTEM_PROMPT } });
  const { store_id, figures } = prompt;
  emit({ step: "set_system_prompt", store_id, text: SYSTEM_PROMPT, figures });

  const appended = await modulestore.write({
    ...at(history),
    append_messages: { messages: [{ role: "user", content: USER_MESSAGE }], start_turn: true },
  });
  emit({
    step: "append_messages",
    store_id: appended.store_id,
    role: "user",
    content: USER_MESSAGE,
    last_seq: appended.last_seq,
    turn: appended.turn,
  });

  const newTask = { title: "Write the release notes", description: "One paragraph per service." };
  const task = await modulestore.write({ ...at(storeOf(roster, "KIND_TASKS")), create_task: newTask });
  emit({ step: "create_task", store_id: task.store_id, task_id: task.task_id, ...newTask });

  const newIssue = { prefix: "GG", title: "Release 0.1", body: "Tracks the release." };
  const issue = await modulestore.write({ ...at(storeOf(roster, "KIND_BOARD")), create_issue: newIssue });
  emit({ step: "create_issue", store_id: issue.store_id, issue_id: issue.issue_id, ...newIssue });

  const forked = await registry.forkInstance({ run_id: run.run_id, agent_id: instance.agent_id });
  const copy = forked.instance;
  emit({ step: "fork_instance", agent_id: copy.agent_id, roster: copy.roster });

  const asCopy = (store_id) => ({ run_id: run.run_id, agent_id: copy.agent_id, store_id });
  const copyTask = { title: "Tag the release" };
  const copyIssue = { prefix: "GG", title: "Announce 0.1" };
  const addedTask = await modulestore.write({
    ...asCopy(storeOf(copy.roster, "KIND_TASKS")),
    create_task: copyTask,
  });
  const addedIssue = await modulestore.write({
    ...asCopy(storeOf(copy.roster, "KIND_BOARD")),
    create_issue: copyIssue,
  });
  emit({
    step: "copy_writes",
    task_store_id: addedTask.store_id,
    task_id: addedTask.task_id,
    task_title: copyTask.title,
    issue_store_id: addedIssue.store_id,
    issue_id: addedIssue.issue_id,
    issue_title: copyIssue.title,
  });

  const rendered = await modulestore.renderPrompt({ run_id: run.run_id, agent_id: instance.agent_id });
  emit({ step: "render_prompt", contributions: rendered.contributions });

  try {
    await modulestore.write({ ...at(history), set_system_prompt: { text: "A second prompt." } });
  } catch (err) {
    if (!err.codeName) throw err;
    emit({ step: "refusal", code: err.codeName, reason: err.reason, message: err.details });
    return err.codeName === "FAILED_PRECONDITION" && err.reason === "SYSTEM_PROMPT_ALREADY_SET";
  }
  emit({ step: "refusal", error: "a second system prompt was accepted (R9)" });
  return false;
}

const USAGE =
  "usage: node session.js --registry HOST:PORT --modulestore HOST:PORT [--deadline-ms N]\n" +
  "  [--token-file var/auth/operator.jwt] [--ca-file var/tls/ca.crt]  (both read by default when they exist)";

function parseOptions() {
  try {
    const { values } = parseArgs({
      options: {
        registry: { type: "string" },
        modulestore: { type: "string" },
        "deadline-ms": { type: "string", default: "10000" },
        "token-file": { type: "string", default: "var/auth/operator.jwt" },
        "ca-file": { type: "string", default: "var/tls/ca.crt" },
      },
    });
    const deadlineMs = Number(values["deadline-ms"]);
    if (values.registry && values.modulestore && deadlineMs > 0) return { ...values, deadlineMs };
  } catch (err) {
    process.stderr.write(`${err.message}\n`);
  }
  return null;
}

async function main() {
  const values = parseOptions();
  if (!values) {
    process.stderr.write(`${USAGE}\n`);
    return 2;
  }
  const read = (path) => (path && existsSync(path) ? readFileSync(path) : null);
  // The environment wins (as in the Python SDK): GGMODULES_OPERATOR_CREDENTIAL, GGMODULES_TLS_CA_FILE ("" = plaintext).
  const env = process.env;
  const token = env.GGMODULES_OPERATOR_CREDENTIAL ?? read(values["token-file"])?.toString().trim();
  const ca = read(env.GGMODULES_TLS_CA_FILE ?? values["ca-file"]);
  const client = connect({
    registry: values.registry,
    modulestore: values.modulestore,
    deadlineMs: values.deadlineMs,
    token,
    credentials: ca ? grpc.credentials.createSsl(ca) : undefined,
  });
  try {
    return (await session(client)) ? 0 : 1;
  } catch (err) {
    emit({ step: "error", error: err.toJSON ? err.toJSON() : { message: String(err?.stack ?? err) } });
    return 1;
  } finally {
    client.close();
  }
}

process.exitCode = await main();
