// The pause for an operator that the framework adapters share (docs/ai-sdk.md, docs/openai-agents.md).
// A framework with its own approval step asks "does this call need a human?" before it runs a tool,
// stops the run while one decides, and resumes once told yes or no. Gatehouse is that human's desk:
// `askGatehouse` answers the framework's question and files the approval; `awaitOperator` waits for the
// operator's answer, so the host can tell the framework yes or no. Neither redeems the grant: the tool's
// wrapped execute does, with gate(), when the run resumes, so one approval is filed, granted and
// consumed once, and nothing runs that Gatehouse did not allow at the moment it runs.
import type { GatehouseClient, PendingApproval } from './index.js';
import type { ApprovalStatus, RequestOptions, ToolCall } from './types.js';

/** A call as the tool will execute it (parsed arguments), and the run it belongs to. */
export interface PausedCall {
  tool: string;
  args: Record<string, unknown>;
  context?: Record<string, unknown>;
  runId?: string;
}

export interface ApprovalRef {
  id: string;
  status: ApprovalStatus;
  expiresAt: string | null;
}

/**
 * What an adapter passes on to every gate() it makes (see GateOptions). `timeoutMs` is each
 * request's timeout; the abort signal of a call is the framework's, where it gives one.
 */
export interface StepOptions extends Pick<RequestOptions, 'timeoutMs'> {
  /** How long a 503 is retried per Retry-After, at least; default 30,000 (gate()'s `maxRetryMs`). */
  maxRetryMs?: number;
  /** An approval that expired: `report` it to the model (default), or `refile` a new one (gate()'s `onExpired`). */
  onExpired?: 'report' | 'refile';
}

/** Gatehouse's answer to "does this call need a human?", before the tool runs. */
export type Ask =
  | { kind: 'run' }
  | { kind: 'refuse'; message: string; approval?: ApprovalRef; error?: { code: string; detail: string } }
  | { kind: 'abort'; message: string }
  | { kind: 'operator'; message: string; approval?: ApprovalRef };

/** What the operator (or the policy, meanwhile) said, while the run was stopped. */
export type Answer =
  | { kind: 'run'; approval?: ApprovalRef }
  | { kind: 'refuse'; message: string; approval?: ApprovalRef; error?: { code: string; detail: string } }
  | { kind: 'abort'; message: string }
  | { kind: 'pending'; message: string; approval: ApprovalRef };

/**
 * Thrown when Gatehouse answers `abort` (a hard limit of the run crossed): the run must end, so this
 * error is made to escape the framework's tool-error handling (each adapter says how).
 */
export class GatehouseAbortError extends Error {
  override readonly name = 'GatehouseAbortError';
  constructor(
    /** The model message: what to tell the user about why the run ended. */
    message: string,
    readonly tool: string,
  ) {
    super(message);
  }

  /** Frameworks show a thrown error to the model as its toString(): the model reads the message alone. */
  override toString(): string {
    return this.message;
  }
}

/** Thrown from a wrapped execute that Gatehouse refused (deny, or an approval not granted): `message` is for the model. */
export class GatehouseRefusalError extends Error {
  override readonly name = 'GatehouseRefusalError';
  constructor(
    message: string,
    readonly tool: string,
    readonly decision: 'deny' | 'require_approval',
  ) {
    super(message);
  }

  override toString(): string {
    return this.message;
  }
}

/**
 * Thrown (or its message given as the tool's output) when Gatehouse withheld what a tool returned: the
 * tool DID run (its effects happened); the model gets `message`, never the value.
 */
export class GatehouseWithheldError extends Error {
  override readonly name = 'GatehouseWithheldError';
  constructor(
    message: string,
    readonly tool: string,
    readonly decision: 'deny' | 'require_approval',
    /** The review an operator was asked for, when there is one. */
    readonly approval?: ApprovalRef,
  ) {
    super(message);
  }

  override toString(): string {
    return this.message;
  }
}

/**
 * Before the tool runs: allow → run; deny → refuse with the model message; abort → abort;
 * require_approval → stop for an operator, on the approval the client already holds for the call
 * (pending, or granted and not yet redeemed: a framework asking again before it executes), else on one
 * filed now; expired (the held approval lapsed) → refuse, saying so. A look (gate() with `redeem:
 * false`): it never redeems, and records no step of the run; the tool's gate() does both.
 */
export async function askGatehouse(client: GatehouseClient, call: PausedCall, options: StepOptions = {}): Promise<Ask> {
  const r = await client.gate(toolCall(call), { ...runOf(call), ...stepOptions(options), maxWaitMs: 0, redeem: false });
  switch (r.decision) {
    case 'allow':
      return { kind: 'run' };
    case 'deny':
      return { kind: 'refuse', message: r.message, ...(r.error ? { error: r.error } : {}) };
    case 'abort':
      return { kind: 'abort', message: r.message };
    case 'require_approval':
      // The approval held for this call expired: the model hears so (the same call made again files a new one).
      if (r.approval?.status === 'expired') return { kind: 'refuse', message: r.message, approval: r.approval };
      return { kind: 'operator', message: r.message, ...(r.approval ? { approval: r.approval } : {}) };
  }
}

export interface AwaitOptions extends StepOptions, RequestOptions {
  /** How long to wait for the operator; default 600,000 (10 minutes); 0 looks once. */
  maxWaitMs?: number;
  /** Stops the wait (the approval stays pending: a later call, or another process, resumes it). */
  signal?: AbortSignal;
  /** Called with the approval after each round of waiting (at most 20 s apart) while it is pending. */
  onPending?: (approval: ApprovalRef & { message: string }) => void;
}

/**
 * While the run is stopped: wait for the operator's answer on the call's approval (filing one if the
 * client holds none). granted → run (execute's gate() redeems it); denied, withdrawn → refuse with
 * the model message Gatehouse gives when the approval is cited; expired → refuse, saying so (gate()'s
 * message), or with `onExpired: 'refile'` a new approval and its wait; still pending → pending.
 * When the policy meanwhile allows, denies or aborts the call, that answer stands.
 */
export async function awaitOperator(
  client: GatehouseClient,
  call: PausedCall,
  options: AwaitOptions = {},
): Promise<Answer> {
  const r = await client.gate(toolCall(call), {
    ...runOf(call),
    redeem: false,
    onAbort: 'keep',
    ...stepOptions(options),
    ...(options.maxWaitMs !== undefined ? { maxWaitMs: options.maxWaitMs } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
    ...(options.onPending
      ? {
          onPending: (p: PendingApproval) =>
            options.onPending?.({ id: p.id, status: p.status, expiresAt: p.expiresAt, message: p.message }),
        }
      : {}),
  });
  const approval = r.approval ? { approval: r.approval } : {};
  switch (r.decision) {
    case 'allow':
      return { kind: 'run' };
    case 'deny':
      return { kind: 'refuse', message: r.message, ...approval, ...(r.error ? { error: r.error } : {}) };
    case 'abort':
      return { kind: 'abort', message: r.message };
    case 'require_approval':
      if (r.approval?.status === 'granted') return { kind: 'run', approval: r.approval };
      if (r.approval?.status === 'pending') return { kind: 'pending', message: r.message, approval: r.approval };
      return { kind: 'refuse', message: r.message, ...approval };
  }
}

/** Only the step options given (gate() takes no `undefined` for an option left out). */
export function stepOptions(o: StepOptions): StepOptions {
  return {
    ...(o.maxRetryMs !== undefined ? { maxRetryMs: o.maxRetryMs } : {}),
    ...(o.onExpired !== undefined ? { onExpired: o.onExpired } : {}),
    ...(o.timeoutMs !== undefined ? { timeoutMs: o.timeoutMs } : {}),
  };
}

const runOf = (call: PausedCall): { runId?: string } => (call.runId !== undefined ? { runId: call.runId } : {});

function toolCall(call: PausedCall): ToolCall {
  return {
    tool: call.tool,
    args: call.args,
    ...(call.context !== undefined ? { context: call.context } : {}),
    ...(call.runId !== undefined ? { run: { id: call.runId } } : {}),
  };
}
