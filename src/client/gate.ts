// gate(): from a tool call to the final word on it, so the host runs the tool exactly when the answer
// is `allow`. It decides; on require_approval it files the approval (or finds the one this run already
// filed for the same call), waits for an operator, redeems a grant and answers with what the server
// said. An approval that expired is reported (status `expired`), never silently replaced by a new one,
// unless the caller asks for that (`onExpired: 'refile'`). It fails closed: an error on the way is a
// `deny` carrying `error`, never `allow`.
//
// A redeem consumes the grant, so its answer must never be lost: the exact body and its
// Idempotency-Key are stored before it is sent, and a retry (in this process or after a restart)
// sends the same again and reads the kept answer (spec section 5.3, Idempotency-Key). What the memory
// gives back is checked before it is used, and so is the answer to a redeem (./entry.ts).
import type { Routes } from './api.js';
import type { Entry } from './entry.js';
import { GatehouseError, retrying } from './http.js';
import { type ApprovalMemory, callKey } from './memory.js';
import type { RunLog } from './runs.js';
import type { Approval, ApprovalStatus, DecisionBody, DecisionKind, RequestOptions, ToolCall } from './types.js';
import { deniedMessageOf } from './wire.js';
import { type Amended, changedPaths } from './amended.js';

/** `timeoutMs` applies to each request gate() makes; `signal` to the whole of it. */
export interface GateOptions extends RequestOptions {
  /** The run this call belongs to: sent as `run.id`, and the scope of "one approval per call". */
  runId?: string;
  /** Aborting it while an approval is pending withdraws the approval (status `cancelled`), unless `onAbort` is `keep`. */
  signal?: AbortSignal;
  /** `keep`: an abort only stops the wait, and the approval stays pending for a later gate(). Default `withdraw`. */
  onAbort?: 'withdraw' | 'keep';
  /**
   * `false`: a look that uses nothing, for a framework that asks "may it run?" before it executes. A
   * granted approval then resolves `require_approval` with status `granted`, left for the gate() that
   * executes the call (same run, same call) to redeem; the look records no step of the run.
   */
  redeem?: boolean;
  /** Called when an approval is filed or found, and after each round of waiting while it is pending. */
  onPending?: (approval: PendingApproval) => void;
  /** How long to wait for an operator. Default 10 minutes; 0 files and returns. */
  maxWaitMs?: number;
  /**
   * How long, from the start of the call, a 503 or a 429 `too_many_waits` is retried as its Retry-After
   * asks, when that is longer than `maxWaitMs` (so a look with `maxWaitMs: 0` still outlasts a brief
   * outage). Default 30,000; 0 retries only within `maxWaitMs`.
   */
  maxRetryMs?: number;
  /**
   * An approval of the call that expired (unanswered, or granted and not used in time). `report` (the
   * default): resolve `require_approval` with the approval's status `expired` and a message saying so,
   * and forget it, so that the same call made again files a new one. `refile`: file a new approval and
   * wait on it while `maxWaitMs` allows (at most 3 approvals in one gate()).
   */
  onExpired?: 'report' | 'refile';
}

export interface PendingApproval {
  id: string;
  status: ApprovalStatus;
  expiresAt: string | null;
  /** Where to read it: GET this path on the Gatehouse URL. */
  url: string;
  /** The model message of the require_approval. */
  message: string;
}

export interface GateResult {
  /** `allow`: run the tool now. Anything else: do not run it, and tell the model `message`. */
  decision: DecisionKind;
  message: string;
  reason: string;
  approval?: { id: string; status: ApprovalStatus; expiresAt: string | null };
  /** The server's last decision, when there was one. */
  body?: DecisionBody;
  /** Why it failed closed (Gatehouse unreachable, a 5xx, an answer that is not one): `decision` is `deny`. */
  error?: { code: string; detail: string };
  /**
   * An operator granted the call amended (spec section 5.4, "Amend and grant"): run the tool with
   * `amended.args`, not the arguments asked for, and tell the model which `paths` changed
   * (amendedNote()). Set with `allow`, and on a look's granted approval.
   */
  amended?: Amended;
}

export interface GateDeps {
  routes: Routes;
  memory: ApprovalMemory;
  runs: RunLog;
}

// The checks of what the memory holds load the strict parser and the canonical form: only once there
// is something to check, so that an allowed call (most of the Claude Code hook's processes) does not.
const loadEntryChecks = () => import('./entry.js');

export const DEFAULT_MAX_WAIT_MS = 600_000;
export const DEFAULT_MAX_RETRY_MS = 30_000;
/** Seconds per long-poll round: onPending hears from the wait at least this often. */
const POLL_SECONDS = 20;
/** Filings per gate(): a policy that keeps asking for a new approval, or approvals that keep expiring, cannot loop forever. */
const MAX_FILINGS = 3;

export async function gate(deps: GateDeps, input: ToolCall, options: GateOptions = {}): Promise<GateResult> {
  const runId = options.runId ?? input.run?.id;
  const { call, record } = deps.runs.view(input, runId);
  const attempt = new Attempt(deps, call, runId, options);
  let result: GateResult;
  try {
    result = await attempt.run();
  } catch (err) {
    return attempt.failed(err);
  }
  if (result.decision !== 'require_approval' && options.redeem !== false)
    record({
      tool: call.tool,
      decision: result.decision,
      ...(result.approval ? { approvalId: result.approval.id } : {}),
    });
  return result;
}

class Attempt {
  /** The end of the wait for an operator. */
  private readonly deadline: number;
  /** The end of retrying what the server asked to be retried: never before the wait's. */
  private readonly retryDeadline: number;
  private pendingId: string | undefined;
  private memoryKey: string | undefined;

  constructor(
    private readonly deps: GateDeps,
    private readonly call: ToolCall,
    private readonly runId: string | undefined,
    private readonly options: GateOptions,
  ) {
    const start = Date.now();
    this.deadline = start + (options.maxWaitMs ?? DEFAULT_MAX_WAIT_MS);
    this.retryDeadline = Math.max(this.deadline, start + (options.maxRetryMs ?? DEFAULT_MAX_RETRY_MS));
  }

  /** Computed only once a call needs an approval: an allowed call never hashes. */
  private async key(): Promise<string> {
    this.memoryKey ??= await callKey(this.runId, this.call);
    return this.memoryKey;
  }

  async run(): Promise<GateResult> {
    const { routes } = this.deps;
    const fresh = await this.retrying(() => routes.decide(this.call, this.per()));
    if (fresh.decision !== 'require_approval') return finalOf(fresh);
    let entry = await this.entry(fresh);
    let expired: GateResult | undefined;
    // A redeem sent before and never answered: repeat it exactly before anything else (a look leaves it
    // for the use), once Gatehouse says its approval is this call's.
    if (entry?.redeem) {
      const approval = await this.read(entry.id, 0);
      if (approval !== undefined && this.isThisCalls(approval, fresh)) {
        // The stored redeem may be of the call as an operator amended it (Gatehouse says to what).
        const amended = this.amendedOf(approval);
        const asAmended =
          amended !== undefined && (await loadEntryChecks()).redeemSends(entry.redeem.body, amended.args);
        if (this.options.redeem === false) return this.granted(fresh, entry.id, null, amended);
        const redeemed = await this.redeem(
          { id: entry.id, redeem: entry.redeem },
          asAmended ? this.consentOf(fresh, approval) : fresh,
        );
        if (redeemed !== undefined && !this.refiles(redeemed))
          return redeemed.decision === 'allow' && asAmended ? { ...redeemed, amended } : redeemed;
        expired = redeemed;
      } else {
        await this.forget();
      }
      entry = undefined; // not this call's approval, its answer not about it, or expired: decided afresh, by filing
    }
    for (let filings = 0; ; ) {
      if (entry === undefined) {
        if (filings++ === MAX_FILINGS) return expired ?? finalOf(fresh);
        const idempotencyKey = `gatehouse-client:${crypto.randomUUID()}`;
        const filed = await this.retrying(() => routes.file(this.call, { idempotencyKey, ...this.per() }));
        if (filed.decision) return finalOf(filed.decision); // the policy changed in between: its answer
        entry = { id: filed.approval.id };
        await this.save(entry);
      }
      const approval = await this.waitFor(entry.id, fresh);
      // Not ours to see (another database, another caller), or not this call's: file anew.
      const outcome = approval === undefined ? undefined : await this.settle(approval, fresh);
      if (outcome !== undefined && !this.refiles(outcome)) return outcome;
      if (outcome !== undefined) expired = outcome;
      entry = undefined;
    }
  }

  /** Expired, and the caller asked for a new approval now (otherwise it hears it: the same call made again files one). */
  private refiles(outcome: GateResult): boolean {
    return (
      outcome.decision === 'require_approval' &&
      outcome.approval?.status === 'expired' &&
      this.options.onExpired === 'refile'
    );
  }

  /**
   * What an approval that left pending (or whose wait ended) comes to: redeemed, reported, or cited for
   * the reason; undefined when a redeem's answer is not about this grant (the call is decided afresh).
   */
  private async settle(approval: Approval, fresh: DecisionBody): Promise<GateResult | undefined> {
    switch (approval.status) {
      case 'pending':
        return {
          decision: 'require_approval',
          message: fresh.message,
          reason: fresh.reason,
          approval: summary(approval),
          body: fresh,
        };
      case 'granted':
      case 'consumed': {
        // consumed: by a redeem whose answer was lost, or by someone else; the server tells
        const amended = this.amendedOf(approval);
        if (this.options.redeem === false) return this.granted(fresh, approval.id, approval.expiresAt, amended);
        // Amended: only the amended call redeems it, and its hash is the one Gatehouse consents to.
        const call = amended === undefined ? this.call : { ...this.call, args: amended.args };
        const redeem = {
          key: `gatehouse-client:${crypto.randomUUID()}`,
          body: (await loadEntryChecks()).redeemBody(call, approval.id),
        };
        const outcome = await this.redeem(
          { id: approval.id, redeem },
          amended === undefined ? fresh : this.consentOf(fresh, approval),
        );
        return outcome?.decision === 'allow' && amended !== undefined ? { ...outcome, amended } : outcome;
      }
      default: {
        // denied, expired, cancelled: deciding again citing it gives the model the reason (or the policy's new answer).
        const cited = await this.retrying(() =>
          this.deps.routes.decide({ ...this.call, approvalId: approval.id }, this.per()),
        );
        await this.forget();
        if (cited.decision === 'require_approval' && approval.status === 'expired') {
          // Granted, then not used in time: an expired approval with a decision (a pending one expires undecided).
          const granted = typeof approval.decidedAt === 'string';
          return expiredResult(this.call.tool, cited, { id: approval.id, expiresAt: approval.expiresAt }, granted);
        }
        return finalOf(cited);
      }
    }
  }

  /**
   * Consume a grant, under a key stored first, and say what came of it; undefined when the answer is
   * not about this approval of this call (an `allow` that is not isConsentFor, a `require_approval`
   * naming no approval or another): the call is then decided afresh, never allowed on it.
   */
  private async redeem(
    entry: Entry & { redeem: { key: string; body: string } },
    fresh: DecisionBody,
  ): Promise<GateResult | undefined> {
    await this.save(entry);
    const answer = await this.retrying(
      () => this.deps.routes.resend(entry.redeem.body, { idempotencyKey: entry.redeem.key, ...this.per() }),
      true,
    );
    // The answer is read (allow, or the reason it cannot be): the grant is settled either way.
    await this.forget();
    const aboutIt =
      answer.decision === 'allow'
        ? (await loadEntryChecks()).isConsentFor(answer, entry.id, fresh)
        : answer.decision !== 'require_approval' || answer.approval?.id === entry.id;
    if (!aboutIt) return undefined;
    // The grant lapsed before this redeem reached the server.
    if (answer.decision === 'require_approval' && answer.approval?.status === 'expired') {
      return expiredResult(this.call.tool, answer, { id: entry.id, expiresAt: answer.next?.expiresAt ?? null }, true);
    }
    return finalOf(answer);
  }

  /** What a look answers for a grant it leaves to the call's use. */
  private granted(fresh: DecisionBody, id: string, expiresAt: string | null = null, amended?: Amended): GateResult {
    return {
      decision: 'require_approval',
      message: fresh.message,
      reason: fresh.reason,
      approval: { id, status: 'granted', expiresAt },
      body: fresh,
      ...(amended !== undefined ? { amended } : {}),
    };
  }

  /** What an `allow` of the amended call must say it consumed: the amended call's hash, as Gatehouse gave it. */
  private consentOf(fresh: DecisionBody, approval: Approval): DecisionBody {
    if (fresh.approval === undefined) return fresh;
    return { ...fresh, approval: { ...fresh.approval, hash: approval.amendedHash ?? '' } };
  }

  /** The amendment of a granted approval of this call: its arguments and what changed. */
  private amendedOf(approval: Approval): Amended | undefined {
    const args = approval.amendedArgs;
    if (args === null || args === undefined || typeof approval.amendedHash !== 'string') return undefined;
    return { args, paths: changedPaths(this.call.args ?? {}, args) };
  }

  /**
   * The approval's state once it leaves pending or the wait is over; undefined when not found, or
   * when it is not this call's (its entry then removed).
   */
  private async waitFor(id: string, fresh: DecisionBody): Promise<Approval | undefined> {
    this.pendingId = id;
    let approval = await this.read(id, 0);
    // Filed for another call (an entry planted in the memory), or before the policy changed what this
    // call needs: never waited on, redeemed or reported for this one.
    if (approval !== undefined && !this.isThisCalls(approval, fresh)) approval = undefined;
    while (approval?.status === 'pending') {
      this.options.onPending?.({
        id,
        status: approval.status,
        expiresAt: approval.expiresAt,
        url: `/approvals/${encodeURIComponent(id)}`,
        message: fresh.message,
      });
      const left = this.deadline - Date.now();
      if (left < 1000) break;
      approval = await this.read(id, Math.min(POLL_SECONDS, Math.floor(left / 1000)));
    }
    this.pendingId = undefined;
    if (approval === undefined) await this.forget();
    return approval;
  }

  /** GET /approvals/{id}, held up to `seconds` while pending; undefined when not found (not ours to see). */
  private async read(id: string, seconds: number): Promise<Approval | undefined> {
    try {
      return await this.retrying(() => this.deps.routes.approval(id, { waitSeconds: seconds, ...this.per() }));
    } catch (err) {
      if (err instanceof GatehouseError && err.status === 404) return undefined;
      throw err;
    }
  }

  /** Whether Gatehouse says `approval` is for this call: its tool, and the hash of the fresh decision (tool, args, context, requirements). */
  private isThisCalls(approval: Approval, fresh: DecisionBody): boolean {
    const hash = fresh.approval?.hash;
    return approval.tool === this.call.tool && typeof hash === 'string' && approval.hash === hash;
  }

  /**
   * Why no answer came, as a refusal: aborted (the pending approval withdrawn), refused by the server
   * for a reason of its own (a recent denial, too many pending), or unreachable.
   */
  async failed(err: unknown): Promise<GateResult> {
    const tool = this.call.tool;
    if (this.options.signal?.aborted && this.pendingId !== undefined && this.options.onAbort === 'keep') {
      return {
        decision: 'require_approval',
        message: `The "${tool}" action was not run: its approval is still pending.`,
        reason: 'the wait was stopped',
        approval: { id: this.pendingId, status: 'pending', expiresAt: null },
      };
    }
    if (this.options.signal?.aborted && this.pendingId !== undefined) {
      const id = this.pendingId;
      // Not under the aborted signal, which would stop the withdrawal itself.
      const withdrawn = await this.deps.routes.cancel(id, this.timeout()).catch(() => undefined);
      if (withdrawn) await this.forget().catch(() => undefined);
      return {
        decision: 'require_approval',
        message: `The "${tool}" action was not run: its approval was withdrawn before an operator answered.`,
        reason: 'the wait was cancelled',
        approval: { id, status: withdrawn?.status ?? 'pending', expiresAt: withdrawn?.expiresAt ?? null },
      };
    }
    const code = err instanceof GatehouseError ? err.code : this.options.signal?.aborted ? 'aborted' : 'client_error';
    const detail = err instanceof Error ? err.message : String(err);
    if (code === 'recently_denied') {
      // The operator's message for the agent (the note is for the record: the server never sends it here).
      const said = err instanceof GatehouseError ? deniedMessageOf(err.problem) : undefined;
      const why = said !== undefined && said !== '' ? ` Reason: ${said}.` : '';
      return {
        decision: 'deny',
        reason: 'an operator recently denied this exact call',
        message: `The "${tool}" action was not approved: an operator recently denied this exact call.${why} Tell the user it was declined; do not retry it unchanged.`,
        error: { code, detail },
      };
    }
    const why =
      code === 'too_many_pending'
        ? "it needs an approval, and too many of this caller's approvals are already waiting"
        : `Gatehouse could not check it against policy (${code})`;
    return {
      decision: 'deny',
      reason: why,
      message: `The "${tool}" action was not run: ${why}. Tell the user; do not work around it.`,
      error: { code, detail },
    };
  }

  /** Sends again what the server asked to be sent again, until the retry deadline (http.ts retrying). */
  private retrying<T>(send: () => Promise<T>, keyed = false): Promise<T> {
    return retrying(send, this.retryDeadline, this.options.signal, keyed);
  }

  /** The caller's options every request of this gate() carries. */
  private per(): RequestOptions {
    return { ...(this.options.signal ? { signal: this.options.signal } : {}), ...this.timeout() };
  }

  private timeout(): RequestOptions {
    return this.options.timeoutMs !== undefined ? { timeoutMs: this.options.timeoutMs } : {};
  }

  /**
   * The memory's entry for this call, when it passes entryFor(); one that does not is removed. A
   * stored redeem of other arguments passes only when Gatehouse says an operator amended this call's
   * approval to exactly those (a redeem sent, then its answer lost, and the process restarted).
   */
  private async entry(fresh: DecisionBody): Promise<Entry | undefined> {
    const text = await this.deps.memory.get(await this.key());
    if (text === undefined) return undefined;
    const checks = await loadEntryChecks();
    let entry = checks.entryFor(text, this.call);
    const id = entry === undefined ? checks.entryIdOf(text) : undefined;
    if (id !== undefined) {
      const approval = await this.read(id, 0);
      if (approval !== undefined && this.isThisCalls(approval, fresh) && approval.amendedArgs != null)
        entry = checks.entryFor(text, this.call, approval.amendedArgs);
    }
    if (entry === undefined) await this.forget();
    return entry;
  }

  private async save(entry: Entry): Promise<void> {
    return this.deps.memory.set(await this.key(), JSON.stringify(entry));
  }

  private async forget(): Promise<void> {
    return this.deps.memory.delete(await this.key());
  }
}

function finalOf(body: DecisionBody): GateResult {
  const approval =
    body.approval?.id === undefined
      ? undefined
      : { id: body.approval.id, status: body.approval.status ?? 'pending', expiresAt: body.next?.expiresAt ?? null };
  return {
    decision: body.decision,
    message: body.message,
    reason: body.reason,
    ...(approval ? { approval } : {}),
    body,
  };
}

/**
 * An approval that expired before it was used, as the model reads it: not run, why, and what to do (the
 * same call made again files a new approval: gate() forgot this one).
 */
function expiredResult(
  tool: string,
  body: DecisionBody,
  approval: { id: string; expiresAt: string | null },
  granted: boolean,
): GateResult {
  const why = granted
    ? 'an operator granted its approval, but the grant expired before the call could use it'
    : 'the approval requested for it expired before an operator answered';
  return {
    decision: 'require_approval',
    reason: granted ? 'the granted approval expired unused' : 'the approval expired unanswered',
    message: `The "${tool}" action was not run: it needs an operator's approval (${body.reason}), and ${why}. Tell the user; if the action is still wanted, make the same call again to request a new approval.`,
    approval: { id: approval.id, status: 'expired', expiresAt: approval.expiresAt },
    body,
  };
}

function summary(a: Approval): { id: string; status: ApprovalStatus; expiresAt: string | null } {
  return { id: a.id, status: a.status, expiresAt: a.expiresAt };
}
