// Creates one run and prints `{"run_id": ...}`: the smallest call through the client's interceptors (the
// request id, the service config's retries and deadline), for tests/polyglot to watch through a proxy.
//
//   node clients/typescript/dist/examples/create-run.js --registry HOST:PORT [--name NAME] [--profile NAME]
//
// A refusal is printed as `{"code", "reason", "message", "violations"}` (the GgError the client made of the
// status in the call's trailers), and the exit status is 1.

import { parseArgs } from "node:util";

import { GgClient, GgError } from "../index.js";

const { values } = parseArgs({
  options: { registry: { type: "string" }, name: { type: "string" }, profile: { type: "string" } },
});
const gg = new GgClient({ registry: values.registry });
try {
  const { run } = await gg.registry.createRun({ name: values.name ?? "create-run",
    profiles: [{ name: values.profile ?? "planner", modules: { history: { enabled: true } } }] });
  process.stdout.write(`${JSON.stringify({ run_id: run!.runId })}\n`);
} catch (err) {
  const line = err instanceof GgError
    ? { code: err.codeName, reason: err.reason, message: err.rawMessage, violations: err.violations }
    : { error: String(err) };
  process.stdout.write(`${JSON.stringify(line)}\n`);
  process.exitCode = 1;
} finally {
  gg.close();
}
