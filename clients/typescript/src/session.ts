// A write session (ModuleStoreService/Session) as one agent: one stream on which each write is a message and
// each answer its durable acknowledgement, in the order sent. `write` resolves with what Write would answer
// or rejects with the GgError Write would throw (the refusal travels inside the answer; the session goes on).
// The stream carries the agent's credential (held by the client since the answer that opened the agent);
// every write gets a request id unless it has one, so a write sent again under it applies once (R49).
//
//   const session = openWriteSession(gg, runId, agentId);
//   const [a, b] = await Promise.all([session.write({ storeId, op: ... }), session.write({ storeId, op: ... })]);
//   await session.close();   // waits for every write sent

import { randomUUID } from "node:crypto";

import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { anyUnpack } from "@bufbuild/protobuf/wkt";
import { Code } from "@connectrpc/connect";

import { ErrorReason, ERROR_DOMAIN, GgError, type ErrorReasonName, type GgClient } from "./index.js";
import {
  SessionRequestSchema,
  WriteRequestSchema,
  type SessionRequest,
  type WriteResponse,
} from "./gen/ggmodules/modulestore/v1/modulestore_service_pb.js";
import { BadRequestSchema, ErrorInfoSchema } from "./gen/google/rpc/error_details_pb.js";
import type { Status } from "./gen/google/rpc/status_pb.js";

/** A write as the session's agent makes it: everything of a WriteRequest but the run and the acting agent. */
export type SessionWrite = Omit<MessageInitShape<typeof WriteRequestSchema>, "runId" | "agentId">;

interface Waiter {
  resolve: (response: WriteResponse) => void;
  reject: (err: GgError) => void;
}

/** The refusal a session answer carries, as the GgError the unary call would throw. */
export function refusalError(status: Status): GgError {
  let info, bad;
  for (const detail of status.details) {
    info ??= anyUnpack(detail, ErrorInfoSchema);
    bad ??= anyUnpack(detail, BadRequestSchema);
  }
  const reason = info && info.domain === ERROR_DOMAIN && info.reason in ErrorReason
    ? (info.reason as ErrorReasonName) : "";
  return new GgError(status.code as Code, reason, status.message, { ...(info?.metadata ?? {}) },
    (bad?.fieldViolations ?? []).map((v) => ({ field: v.field, description: v.description })));
}

export class WriteSession {
  private readonly outbox: SessionRequest[] = [];
  private readonly waiters: Waiter[] = [];
  private wake: (() => void) | undefined;
  private closing = false;
  private failure: GgError | undefined;
  private readonly finished: Promise<void>;

  constructor(gg: GgClient, readonly runId: string, readonly agentId: string) {
    const credential = gg.credentials.for(runId, agentId);
    const headers = credential ? { authorization: `Bearer ${credential}` } : undefined;
    const answers = gg.modulestore.session(this.requests(), { headers });
    this.finished = (async () => {
      try {
        for await (const answer of answers) {
          const waiter = this.waiters.shift();
          if (answer.outcome.case === "written") waiter?.resolve(answer.outcome.value);
          else if (answer.outcome.case === "refused") waiter?.reject(refusalError(answer.outcome.value));
        }
        if (this.waiters.length) this.fail(new GgError(Code.Internal, "", "the write session ended early"));
      } catch (cause) {
        this.fail(GgError.from(cause));
      }
    })();
  }

  private async *requests(): AsyncGenerator<SessionRequest> {
    for (;;) {
      while (this.outbox.length) yield this.outbox.shift()!;
      if (this.closing || this.failure) return;
      await new Promise<void>((resolve) => (this.wake = resolve));
    }
  }

  private fail(err: GgError): void {
    this.failure = err;
    for (const waiter of this.waiters.splice(0)) waiter.reject(err);
    this.wake?.();
  }

  /** Sends one write; resolves once it is durable (in the order sent), rejects with its refusal. */
  write(write: SessionWrite): Promise<WriteResponse> {
    if (this.failure) return Promise.reject(this.failure);
    if (this.closing) return Promise.reject(new GgError(Code.FailedPrecondition, "", "the write session is closed"));
    const value = create(WriteRequestSchema, write as MessageInitShape<typeof WriteRequestSchema>);
    value.runId = this.runId;
    value.agentId = this.agentId;
    value.requestId ||= randomUUID();
    return new Promise<WriteResponse>((resolve, reject) => {
      this.waiters.push({ resolve, reject });
      this.outbox.push(create(SessionRequestSchema, { item: { case: "write", value } }));
      this.wake?.();
    });
  }

  /** Ends the session once every write sent is answered. */
  async close(): Promise<void> {
    this.closing = true;
    this.wake?.();
    await this.finished;
  }
}

/** A write session of `agentId` (its credential must be held by `gg`: it opened the agent, or was given it). */
export function openWriteSession(gg: GgClient, runId: string, agentId: string): WriteSession {
  return new WriteSession(gg, runId, agentId);
}
