// The pause for an operator that the framework adapters share (docs/ai-sdk.md, docs/openai-agents.md).
// A framework with its own approval step asks "does this call need a human?" before it runs a tool,
// stops the run while one decides, and resumes once told yes or no. Gatehouse is that human's desk:
// `askGatehouse` answers the framework's question and files the approval; `awaitOperator` waits for the
// operator's answer, so the host can tell the framework yes or no. Neither redeems the grant: the tool's
// wrapped execute does, with gate(), when the run resumes, so one approval is filed, granted and
// consumed once, and nothing runs that Gatehouse did not allow at the moment it runs.
import { GatehouseError, type GatehouseClient } from './index.js';
import type { Approval, ApprovalStatus, DecisionBody, ToolCall } from './types.js';

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

/** Gatehouse's answer to "does this call need a human?", before the tool runs. */
export type Ask =
  | { kind: 'run' }
  | { kind: 'refuse'; message: string; error?: { code: string; detail: string } }
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
 * Before the tool runs: allow → run; deny → refuse with the model message; abort → abort;
 * require_approval → stop for an operator, on the approval already filed for the call (pending, or
 * granted and not yet redeemed: a framework asking again before it executes), else on one filed now
 * (gate() with maxWaitMs 0, so execute's gate() finds it in the client's store). It never redeems: a
 * grant is the tool's gate() to consume. It decides with decide(), which records nothing in the
 * client's run view: only execute's gate() counts as the run's step.
 */
export async function askGatehouse(client: GatehouseClient, call: PausedCall): Promise<Ask> {
  let body: DecisionBody;
  let existing: Approval | undefined;
  try {
    body = await client.decide(toolCall(call));
    if (body.decision === 'allow') return { kind: 'run' };
    if (body.decision === 'deny') return { kind: 'refuse', message: body.message };
    if (body.decision === 'abort') return { kind: 'abort', message: body.message };
    existing = body.approval?.hash === undefined ? undefined : await findApproval(client, call, body.approval.hash, LIVE);
  } catch (err) {
    return failedClosed(call.tool, err);
  }
  if (existing?.status === 'pending' || existing?.status === 'granted') return { kind: 'operator', message: body.message, approval: ref(existing) };
  const filed = await client.gate(toolCall(call), { ...(call.runId !== undefined ? { runId: call.runId } : {}), maxWaitMs: 0 });
  switch (filed.decision) {
    case 'require_approval':
      return { kind: 'operator', message: filed.message, ...(filed.approval ? { approval: filed.approval } : {}) };
    case 'deny':
      return { kind: 'refuse', message: filed.message, ...(filed.error ? { error: filed.error } : {}) };
    case 'abort':
      return { kind: 'abort', message: filed.message };
    case 'allow':
      // Granted in the moment between the look and the filing, and redeemed by gate(): the tool's
      // gate() will not find it and files anew, so the worst case is an operator asked twice.
      return { kind: 'run' };
  }
}

export interface AwaitOptions {
  /** How long to wait for the operator; default 600,000 (10 minutes); 0 looks once. */
  maxWaitMs?: number;
  /** Stops the wait (the approval stays pending: a later call, or another process, resumes it). */
  signal?: AbortSignal;
  /** Called with the approval after each round of waiting (at most 20 s apart) while it is pending. */
  onPending?: (approval: ApprovalRef & { message: string }) => void;
}

const DEFAULT_WAIT_MS = 600_000;
const ROUND_SECONDS = 20;
/** Pages of the caller's approvals read to find the one of a call (200 each). */
const MAX_PAGES = 5;

/**
 * While the run is stopped: find the approval filed for the call (the caller's approval with the
 * call's hash: POST /approvals keeps one live approval per requester and hash, spec 5.4) and wait
 * until an operator answers. granted → run (execute's gate() redeems it); denied, expired, withdrawn
 * → refuse with the model message Gatehouse gives when the approval is cited; still pending →
 * pending. When the policy
 * meanwhile allows, denies or aborts the call, that answer stands. When no approval is found (it was
 * spent or expired, or never filed), the answer is run: the tool's gate() decides, and files if need be.
 */
export async function awaitOperator(client: GatehouseClient, call: PausedCall, options: AwaitOptions = {}): Promise<Answer> {
  const deadline = Date.now() + (options.maxWaitMs ?? DEFAULT_WAIT_MS);
  let message = '';
  let approval: Approval | undefined;
  try {
    const body = await client.decide(toolCall(call));
    if (body.decision === 'allow') return { kind: 'run' };
    if (body.decision === 'deny') return { kind: 'refuse', message: body.message };
    if (body.decision === 'abort') return { kind: 'abort', message: body.message };
    message = body.message;
    approval = body.approval?.hash === undefined ? undefined : await findApproval(client, call, body.approval.hash, [...LIVE, 'denied']);
    if (approval === undefined) return { kind: 'run' };
    while (approval.status === 'pending') {
      options.onPending?.({ ...ref(approval), message });
      const left = deadline - Date.now();
      if (left < 1000 || options.signal?.aborted) return { kind: 'pending', message, approval: ref(approval) };
      approval = await client.approvals.get(approval.id, {
        waitSeconds: Math.min(ROUND_SECONDS, Math.floor(left / 1000)),
        ...(options.signal ? { signal: options.signal } : {}),
      });
    }
    // consumed meanwhile: by this call's own redeem whose answer was lost, which the tool's gate()
    // repeats under its stored key, or by another; the tool's gate() tells which.
    if (approval.status === 'granted' || approval.status === 'consumed') return { kind: 'run', approval: ref(approval) };
    // denied, expired, cancelled: citing it gives the model the operator's reason or why a
    // new approval is needed (spec 5.3, "With approval_id"); citing consumes nothing that is not granted.
    const cited = await client.decide({ ...toolCall(call), approval_id: approval.id } as ToolCall);
    if (cited.decision === 'abort') return { kind: 'abort', message: cited.message };
    if (cited.decision === 'allow') return { kind: 'run', approval: ref(approval) }; // only a grant redeems: not reached
    return { kind: 'refuse', message: cited.message, approval: ref(approval) };
  } catch (err) {
    // The wait was stopped by the caller: the approval stays as it is, for a later wait to resume.
    if (options.signal?.aborted && approval?.status === 'pending') return { kind: 'pending', message, approval: ref(approval) };
    return failedClosed(call.tool, err);
  }
}

/** The states of an approval that can still let its call run. */
const LIVE = ['pending', 'granted'] as const;

/**
 * The approval of this call, by the first of `statuses` that has one: the caller's approval with the
 * call's hash (this run's first, else the newest); a denial counts only when it is of this run.
 */
async function findApproval(
  client: GatehouseClient,
  call: PausedCall,
  hash: string,
  statuses: readonly ('pending' | 'granted' | 'denied')[],
): Promise<Approval | undefined> {
  for (const status of statuses) {
    const found: Approval[] = [];
    for (let page = 0, cursor: string | undefined; page < MAX_PAGES; page++) {
      const res = await client.approvals.list({ status, tool: call.tool, limit: 200, ...(cursor !== undefined ? { cursor } : {}) });
      found.push(...res.items.filter((a) => a.hash === hash));
      if (res.next_cursor === null) break;
      cursor = res.next_cursor;
    }
    const runs = found.find((a) => a.run_id === (call.runId ?? null));
    // Another run's old denial is not this call's answer (a live approval is shared: spec 5.4).
    const ours = status === 'denied' ? runs : (runs ?? found[0]);
    if (ours) return ours;
  }
  return undefined;
}

function toolCall(call: PausedCall): ToolCall {
  return {
    tool: call.tool,
    args: call.args,
    ...(call.context !== undefined ? { context: call.context } : {}),
    ...(call.runId !== undefined ? { run: { id: call.runId } } : {}),
  };
}

function ref(a: Approval): ApprovalRef {
  return { id: a.id, status: a.status, expiresAt: a.expires_at };
}

/** The client's own wording when Gatehouse could not be asked: nothing runs. */
function failedClosed(tool: string, err: unknown): { kind: 'refuse'; message: string; error: { code: string; detail: string } } {
  const code = err instanceof GatehouseError ? err.code : 'client_error';
  const detail = err instanceof Error ? err.message : String(err);
  return {
    kind: 'refuse',
    message: `The "${tool}" action was not run: Gatehouse could not check it against policy (${code}). Tell the user; do not work around it.`,
    error: { code, detail },
  };
}
