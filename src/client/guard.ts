// guardResult(): from a tool's result to what the model may see of it, as gate() is for the call. It
// asks POST /inspect; on require_approval it files the result's review (POST /approvals with the same
// body), waits for an operator, and once the review is answered cites it (POST /inspect with
// `approval_id`), which redeems a grant once. It fails closed: an error on the way withholds the
// result (`deny` carrying `error`), never hands it on.
//
// Unlike gate() it keeps no memory: filing the same result again finds the review already pending
// (POST /approvals answers it, 200), so a retry waits on the same one, and a redeem whose answer is
// lost leaves the result withheld (the tool's output is gone with the process anyway).
import type { Routes } from './api.js';
import { GatehouseError, retrying } from './http.js';
import type { PendingApproval } from './gate.js';
import type {
  ApprovalStatus,
  InspectBody,
  InspectFinding,
  RequestOptions,
  ResultInspection,
  RunView,
} from './types.js';

/** A tool's result and the call that produced it. `result` is what the tool returned, as JSON. */
export interface ToolResult {
  tool: string;
  args?: Record<string, unknown>;
  result: unknown;
  run?: RunView;
  context?: Record<string, unknown>;
}

export interface GuardOptions extends RequestOptions {
  /** The run this call belongs to: sent as `run.id`. */
  runId?: string;
  /** Aborting it while a review is pending withdraws it (`cancelled`); the result is withheld. */
  signal?: AbortSignal;
  /** How long to wait for an operator to review a result. Default 10 minutes; 0 files and returns. */
  maxWaitMs?: number;
  /** How long, from the start, a 503 is retried per its Retry-After when that is longer than `maxWaitMs`; default 30,000. */
  maxRetryMs?: number;
  /** Called when a review is filed or found, and after each round of waiting while it is pending. */
  onPending?: (approval: PendingApproval) => void;
}

export type GuardResult =
  | {
      /** Hand `output` to the model: the result as it was, or with the findings redacted. */
      decision: 'allow';
      output: unknown;
      /** Whether `output` is the redacted result. */
      redacted: boolean;
      findings: InspectFinding[];
      message: string;
      reason: string;
      approval?: { id: string; status: ApprovalStatus; expiresAt: string | null };
      body: InspectBody;
    }
  | {
      /** Withhold the result: the model gets `message` (what was withheld and why), never the value. */
      decision: 'deny' | 'require_approval';
      message: string;
      reason: string;
      approval?: { id: string; status: ApprovalStatus; expiresAt: string | null };
      body?: InspectBody;
      /** Why it failed closed (Gatehouse unreachable, a 5xx, an answer that is not one). */
      error?: { code: string; detail: string };
    };

const DEFAULT_MAX_WAIT_MS = 600_000;
const DEFAULT_MAX_RETRY_MS = 30_000;
const POLL_SECONDS = 20;

export async function guardResult(routes: Routes, input: ToolResult, options: GuardOptions = {}): Promise<GuardResult> {
  const runId = options.runId ?? input.run?.id;
  const request: ResultInspection = {
    stage: 'result',
    tool: input.tool,
    ...(input.args !== undefined ? { args: input.args } : {}),
    // A tool that returned nothing returned null, as JSON has it.
    result: input.result === undefined ? null : input.result,
    ...(input.run !== undefined || runId !== undefined
      ? { run: { ...input.run, ...(runId ? { id: runId } : {}) } }
      : {}),
    ...(input.context !== undefined ? { context: input.context } : {}),
  };
  const start = Date.now();
  const deadline = start + (options.maxWaitMs ?? DEFAULT_MAX_WAIT_MS);
  const retryDeadline = Math.max(deadline, start + (options.maxRetryMs ?? DEFAULT_MAX_RETRY_MS));
  const per: RequestOptions = {
    ...(options.signal ? { signal: options.signal } : {}),
    ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
  };
  const send = <T>(request: () => Promise<T>): Promise<T> => retrying(request, retryDeadline, options.signal);

  let pendingId: string | undefined;
  try {
    const fresh = await send(() => routes.inspect(request, per));
    if (fresh.decision !== 'require_approval') return finalOf(fresh, input.result);
    const filed = await send(() =>
      routes.file(request, { idempotencyKey: `gatehouse-client:${crypto.randomUUID()}`, ...per }),
    );
    // The policy changed in between and no review is needed: ask again for the whole answer (the
    // 409 carries no value, redacted or not).
    if (filed.approval === undefined) return finalOf(await send(() => routes.inspect(request, per)), input.result);
    const id = filed.approval.id;
    pendingId = id;
    let approval = filed.approval;
    while (approval.status === 'pending') {
      options.onPending?.({
        id,
        status: approval.status,
        expiresAt: approval.expiresAt,
        url: `/approvals/${encodeURIComponent(id)}`,
        message: fresh.message,
      });
      const left = deadline - Date.now();
      if (left < 1000) break;
      approval = await send(() =>
        routes.approval(id, { waitSeconds: Math.min(POLL_SECONDS, Math.floor(left / 1000)), ...per }),
      );
    }
    pendingId = undefined;
    const summary = { id, status: approval.status, expiresAt: approval.expiresAt };
    if (approval.status === 'pending')
      return {
        decision: 'require_approval',
        message: fresh.message,
        reason: fresh.reason,
        approval: summary,
        body: fresh,
      };
    // Granted: citing it redeems it (once) for this very result. Denied, expired, withdrawn: citing
    // it gives the model the reason (the operator's message, or what to do). One key for every
    // attempt: a retry whose answer was lost is answered the first allow, not a spent grant.
    const idempotencyKey = `gatehouse-client:${crypto.randomUUID()}`;
    const cited = await send(() => routes.inspect({ ...request, approvalId: id }, { idempotencyKey, ...per }));
    return {
      ...finalOf(cited, input.result),
      approval: { ...summary, status: cited.approval?.status ?? approval.status },
    };
  } catch (err) {
    return failed(routes, input.tool, err, pendingId, options);
  }
}

function finalOf(body: InspectBody, result: unknown): GuardResult {
  const approval =
    body.approval?.id === undefined
      ? undefined
      : { id: body.approval.id, status: body.approval.status ?? 'pending', expiresAt: body.next?.expiresAt ?? null };
  if (body.decision === 'allow') {
    const redacted = Object.hasOwn(body, 'redacted');
    return {
      decision: 'allow',
      output: redacted ? body.redacted : result,
      redacted,
      findings: body.findings ?? [],
      message: body.message,
      reason: body.reason,
      ...(approval ? { approval } : {}),
      body,
    };
  }
  return {
    decision: body.decision,
    message: body.message,
    reason: body.reason,
    ...(approval ? { approval } : {}),
    body,
  };
}

/** Why no answer came, as a withheld result (a pending review withdrawn when the caller aborted). */
async function failed(
  routes: Routes,
  tool: string,
  err: unknown,
  pendingId: string | undefined,
  options: GuardOptions,
): Promise<GuardResult> {
  if (options.signal?.aborted && pendingId !== undefined) {
    const timeout = options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {};
    // Not under the aborted signal, which would stop the withdrawal itself.
    const withdrawn = await routes.cancel(pendingId, timeout).catch(() => undefined);
    return {
      decision: 'require_approval',
      message: `The output of the "${tool}" action was withheld: its review was withdrawn before an operator answered.`,
      reason: 'the wait was cancelled',
      approval: { id: pendingId, status: withdrawn?.status ?? 'pending', expiresAt: withdrawn?.expiresAt ?? null },
    };
  }
  const code = err instanceof GatehouseError ? err.code : options.signal?.aborted ? 'aborted' : 'client_error';
  const detail = err instanceof Error ? err.message : String(err);
  const why =
    code === 'too_many_pending'
      ? "it needs an operator's review, and too many of this caller's approvals are already waiting"
      : `Gatehouse could not check it against policy (${code})`;
  return {
    decision: 'deny',
    reason: why,
    message: `The output of the "${tool}" action was withheld: ${why}. Tell the user; do not work around it.`,
    error: { code, detail },
  };
}
