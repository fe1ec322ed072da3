// A small Node.js client of the ggmodules Registry and ModuleStore.
//
// The contracts are read from ../../protos at run time (nothing generated, nothing copied), so this client
// speaks exactly what the .proto files say. Messages are plain objects with the proto field names
// (snake_case), enums as their names ("KIND_HISTORY"), int64 as numbers, and a oneof's case under the
// oneof's name (e.g. `contents: "tasks"`).
//
// Every call carries a deadline. Every mutation (a request with a `request_id` field) gets a fresh uuid
// request id unless the caller gives one, so the call can be retried safely (R49). A refusal rejects with a
// GgError exposing the gRPC code and the google.rpc.ErrorInfo reason (R47).

import { randomUUID } from "node:crypto";
import path from "node:path";
import { fileURLToPath } from "node:url";

import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import protobuf from "protobufjs";

const HERE = path.dirname(fileURLToPath(import.meta.url));
export const PROTOS_ROOT = path.resolve(HERE, "..", "..", "protos");
// google/rpc/{status,error_details}.proto, vendored from googleapis (Apache 2.0, headers kept).
const RPC_PROTOS_ROOT = path.join(HERE, "proto");

export const LOADER_OPTIONS = Object.freeze({
  keepCase: true,
  longs: Number,
  enums: String,
  defaults: true,
  oneofs: true,
  includeDirs: [PROTOS_ROOT],
});

const SERVICES = {
  registry: {
    file: "ggmodules/registry/v1/registry_service.proto",
    name: "ggmodules.registry.v1.RegistryService",
  },
  modulestore: {
    file: "ggmodules/modulestore/v1/modulestore_service.proto",
    name: "ggmodules.modulestore.v1.ModuleStoreService",
  },
};

export const REQUEST_ID_HEADER = "x-request-id";
const STATUS_DETAILS_KEY = "grpc-status-details-bin";
// Answers after which nothing was applied: the service could not be reached, or refused under contention.
const RETRIED = new Set([grpc.status.UNAVAILABLE, grpc.status.ABORTED]);
const CODE_NAMES = Object.fromEntries(Object.entries(grpc.status).map(([name, code]) => [code, name]));

/** A refused or failed call: the gRPC code, its name, and the ErrorInfo reason when the service sent one. */
export class GgError extends Error {
  constructor({ method, code, message, reason = "", domain = "", metadata = {}, violations = [] }) {
    super(`${method}: ${CODE_NAMES[code] ?? code}${reason ? ` ${reason}` : ""}: ${message}`);
    this.name = "GgError";
    this.method = method;
    this.code = code;
    this.codeName = CODE_NAMES[code] ?? String(code);
    this.details = message;
    this.reason = reason;
    this.domain = domain;
    this.metadata = metadata;
    this.violations = violations;
  }

  toJSON() {
    return {
      method: this.method,
      code: this.codeName,
      reason: this.reason,
      message: this.details,
      ...(this.violations.length ? { violations: this.violations } : {}),
    };
  }
}

let rpcTypes;

function loadRpcTypes() {
  if (!rpcTypes) {
    const root = new protobuf.Root();
    // Imports resolve against the vendored root; google/protobuf/* come bundled with protobufjs.
    root.resolvePath = (_origin, target) => path.join(RPC_PROTOS_ROOT, target);
    root.loadSync(["google/rpc/status.proto", "google/rpc/error_details.proto"], { keepCase: true });
    rpcTypes = {
      Status: root.lookupType("google.rpc.Status"),
      ErrorInfo: root.lookupType("google.rpc.ErrorInfo"),
      BadRequest: root.lookupType("google.rpc.BadRequest"),
    };
  }
  return rpcTypes;
}

/** Reads the google.rpc.Status a service put in the `grpc-status-details-bin` trailer. */
export function statusDetails(metadata) {
  const out = { reason: "", domain: "", metadata: {}, violations: [] };
  const raw = metadata?.get(STATUS_DETAILS_KEY)?.[0];
  if (!raw) return out;
  const { Status, ErrorInfo, BadRequest } = loadRpcTypes();
  const status = Status.decode(Buffer.isBuffer(raw) ? raw : Buffer.from(raw));
  for (const any of status.details) {
    const typeName = any.type_url.slice(any.type_url.lastIndexOf("/") + 1);
    if (typeName === "google.rpc.ErrorInfo") {
      const info = ErrorInfo.decode(any.value);
      out.reason = info.reason;
      out.domain = info.domain;
      out.metadata = { ...info.metadata };
    } else if (typeName === "google.rpc.BadRequest") {
      const bad = BadRequest.decode(any.value);
      out.violations = bad.field_violations.map((v) => ({ field: v.field, description: v.description }));
    }
  }
  return out;
}

function toGgError(method, err) {
  if (typeof err?.code !== "number") return err;
  const message = err.details ?? err.message;
  return new GgError({ method, code: err.code, message, ...statusDetails(err.metadata) });
}

function isMutation(methodDef) {
  return methodDef.requestType.type.field.some((f) => f.name === "request_id");
}

function lowerFirst(name) {
  return name.charAt(0).toLowerCase() + name.slice(1);
}

function callOnce(client, name, req, meta, deadline) {
  return new Promise((resolve, reject) => {
    client[name](req, meta, { deadline }, (err, response) => (err ? reject(err) : resolve(response)));
  });
}

/**
 * Promise-based wrappers for every unary RPC of one service: `wrappers.createRun(request, options)`.
 * `options.deadlineMs` overrides the connection's deadline for one call; `options.requestId` fixes the
 * request id of a mutation (to retry it yourself). A call answered UNAVAILABLE or ABORTED (nothing applied) is
 * retried within its deadline: reads are safe to repeat, and a mutation is retried with the same request id, so
 * it applies once.
 */
function wrapService(client, serviceDef, { deadlineMs, retries, wallet }) {
  const wrappers = {};
  for (const [name, methodDef] of Object.entries(serviceDef)) {
    if (methodDef.requestStream || methodDef.responseStream) continue;
    const mutation = isMutation(methodDef);
    wrappers[lowerFirst(name)] = async (request = {}, options = {}) => {
      const req = { ...request };
      if (mutation && !req.request_id) req.request_id = options.requestId ?? randomUUID();
      const meta = new grpc.Metadata();
      meta.set(REQUEST_ID_HEADER, mutation ? req.request_id : randomUUID());
      const credential = wallet.pick(name, req);
      if (credential) meta.set("authorization", `Bearer ${credential}`);
      const deadline = new Date(Date.now() + (options.deadlineMs ?? deadlineMs));
      for (let attempt = 0; ; attempt += 1) {
        try {
          const response = await callOnce(client, name, req, meta, deadline);
          wallet.learn(name, response);
          return response;
        } catch (err) {
          const backoffMs = 50 * 2 ** attempt;
          const again = RETRIED.has(err?.code) && attempt < retries;
          if (!again || Date.now() + backoffMs >= deadline.getTime()) throw toGgError(name, err);
          await new Promise((resolve) => setTimeout(resolve, backoffMs));
        }
      }
    };
  }
  return wrappers;
}

/**
 * Connects to a Registry and a ModuleStore (either may be omitted).
 *
 * Returns `{ registry, modulestore, close }`; each service object has one promise-returning function per
 * RPC, named in lowerCamelCase (`registry.openInstance`, `modulestore.write`, ...). `deadlineMs` bounds each
 * call, retries included; `retries` is how many times a call answered UNAVAILABLE or ABORTED is tried again.
 */
/**
 * The credentials a connection holds (R50): `token` (an operator credential) for calls not made as an agent,
 * and each agent's credential, kept from the answers that mint agents (OpenInstance, SpawnSubagent,
 * ForkInstance: `credential`; Transition, Exec: `successor_credential`). A call whose request names an acting
 * agent (`agent_id`, or `parent_agent_id` for SpawnSubagent) carries that agent's credential, else `token`.
 */
function makeWallet(token) {
  const agents = new Map();
  const runs = new Map();
  const key = (run, agent) => `${run}\u0000${agent}`;
  return {
    pick(method, req) {
      const acting = method === "SpawnSubagent" ? req.parent_agent_id : req.agent_id;
      return agents.get(key(req.run_id, acting)) ?? token ?? runs.get(req.run_id) ?? "";
    },
    learn(method, res) {
      if (method === "CreateRun" && res?.operator_credential) runs.set(res.run.run_id, res.operator_credential);
      if (res?.credential && res.instance) agents.set(key(res.instance.run_id, res.instance.agent_id), res.credential);
      if (res?.successor_credential && res.transfer) {
        agents.set(key(res.transfer.run_id, res.transfer.successor_agent_id), res.successor_credential);
      }
    },
  };
}

export function connect({ registry, modulestore, deadlineMs = 10_000, retries = 3, credentials, token } = {}) {
  const creds = credentials ?? grpc.credentials.createInsecure();
  const wallet = makeWallet(token);
  const addresses = { registry, modulestore };
  const clients = [];
  const out = {
    close() {
      for (const c of clients) c.close();
    },
  };
  for (const [key, spec] of Object.entries(SERVICES)) {
    if (!addresses[key]) continue;
    const definition = protoLoader.loadSync(spec.file, LOADER_OPTIONS);
    const serviceDef = definition[spec.name];
    const Client = grpc.makeGenericClientConstructor(serviceDef, spec.name.split(".").pop());
    const client = new Client(addresses[key], creds);
    clients.push(client);
    out[key] = wrapService(client, serviceDef, { deadlineMs, retries, wallet });
  }
  return out;
}
