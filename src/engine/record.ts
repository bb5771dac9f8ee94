// A decision's record, built once per answer of /decide, of /inspect and of a filing: the log line
// (docs/operations.md "Logs") and, with DECISION_STORE, the decision store's row (src/records/) are
// this one typed value. The row is queued, or written in the decision's own transaction (Recorder).
// Beyond the outcome it holds what lets a recorded decision be decided again (`gatehouse replay`,
// `gatehouse cases`: docs/policy-changes.md): the environment and the caller's roles always; with
// LOG_ARGS the arguments, the token's claims, the context and the run view, secret-named keys
// redacted in all of them.
import type { CallLog, DecisionRecords } from './parts.js';
import type { JsonObject } from '../json/value.js';
import type { DecideRequest, DecisionResult, Identity, PolicySet } from '../policy/model.js';
import type { InspectRequest } from '../policy/inspect.js';
import type { DecisionLine } from '../policy/record.js';
import type { Metrics } from './metrics.js';
import { redactSecrets } from './redact.js';
import type { TransactionSql } from 'postgres';
import type { AfterCounting } from '../budgets/service.js';
import { insertRecord } from '../records/insert.js';

/** What a record says of one request (a call, or an inspection of what came back), beside its outcome. */
export interface Asked {
  readonly decisionId: string;
  readonly request: DecideRequest | InspectRequest;
  readonly set: PolicySet;
  readonly identity: Identity;
  readonly durationUs: number;
  readonly approvalId: string | undefined;
}

/** What the record adds to the outcome: a replay, a counted call's limits, a require_approval's kind. */
export type Beside = Pick<DecisionLine, 'kind' | 'replayed' | 'replayed_decision_id' | 'budgets'>;

/**
 * An inspection's record (POST /inspect) has its `stage`, and never the value inspected (the result,
 * the model's content), not even with LOG_ARGS: a record is no copy of what a guard withheld. A
 * model stage has no tool: `tool` names the stage.
 */
export function decisionLine(
  asked: Asked,
  decision: DecisionResult['decision'],
  rule: string,
  logArgs: boolean,
  beside?: Beside,
): DecisionLine {
  const { request: req, set, identity } = asked;
  const stage = 'stage' in req ? req.stage : undefined;
  return {
    decision_id: asked.decisionId,
    tool: 'tool' in req ? req.tool : (stage ?? ''),
    decision,
    rule,
    policies: set.digests,
    user: identity.user,
    team: identity.team,
    agent: identity.agent,
    duration_us: Math.round(asked.durationUs * 10) / 10,
    ...(stage !== undefined ? { stage } : {}),
    ...(asked.approvalId !== undefined ? { approval_id: asked.approvalId } : {}),
    ...(req.run?.id !== undefined ? { run_id: req.run.id } : {}),
    ...facts(logArgs, set.env, req, identity), // the set that decided, not one reloaded since
    ...beside,
  };
}

function facts(logArgs: boolean, env: string | null, req: Asked['request'], identity: Identity): Partial<DecisionLine> {
  if (!logArgs) return { env, roles: identity.roles };
  return {
    env,
    roles: identity.roles,
    ...('args' in req ? { args: redactObject(req.args) } : {}),
    claims: redactObject((identity.claims ?? {}) as JsonObject),
    ...(req.context !== undefined ? { context: redactObject(req.context) } : {}),
    ...(req.run !== undefined
      ? { run: redactSecrets(req.run as unknown as JsonObject) as unknown as DecisionLine['run'] }
      : {}), // a run view is JSON data
  };
}

/** An object redacted is an object (redactSecrets keeps every container's kind). */
const redactObject = (value: JsonObject): JsonObject => redactSecrets(value) as JsonObject;

/** A require_approval's approval kind on its record (a test case made from it checks the kind); nothing otherwise. */
export function kindOf(result: DecisionResult): Beside | undefined {
  return result.approval === undefined ? undefined : { kind: result.approval.kind };
}

/** Logs the record (before the answer is sent), queues it for the store, counts it. */
export function writeRecord(
  log: CallLog,
  metrics: Metrics,
  records: DecisionRecords | null,
  line: DecisionLine,
  durationUs: number,
): void {
  count(metrics, line, durationUs);
  log.info(line, 'decision');
  records?.push(line); // DECISION_STORE: queued, written off the hot path (src/records/writer.ts)
}

/** /inspect's are labelled with their stage; /decide's series keep the two labels they always had. */
function count(metrics: Metrics, line: DecisionLine, durationUs: number): void {
  metrics.decisions.inc(
    line.stage === undefined
      ? { decision: line.decision, rule: line.rule }
      : { decision: line.decision, rule: line.rule, stage: line.stage },
  );
  metrics.decideSeconds.observe(durationUs / 1e6);
}

/**
 * The record of one answer whose decision runs a transaction (a redeem, a filing, a counted call):
 * with DECISION_STORE, written in that transaction, so it exists exactly when what the decision did
 * committed, even if the process dies right after; queued as any other when the transaction rolled
 * back, wrote nothing, or cannot carry it (DecisionWriter.rowOf). Logged once either way.
 */
export interface Recorder {
  /** The answer's record (decisionLine, or inspectionLine for /inspect). */
  line(decision: DecisionResult['decision'], rule: string, beside?: Beside): DecisionLine;
  /** Inserts `line` in `tx`, the decision's transaction, as its last statement before COMMIT (none with the store off). */
  insert(tx: TransactionSql, line: DecisionLine): Promise<void>;
  /**
   * `line`'s row for a transaction of the lanes, which inserts the rows of its calls that counted
   * with its COMMIT (src/db/lanes.ts gather); undefined with the store off or when it cannot be.
   */
  statement(line: DecisionLine): AfterCounting | undefined;
  /**
   * Logs `line` (once), counts it, and queues it unless its row went with the decision's transaction
   * (insert() returned, or the lane sent statement()'s): called only once that transaction returned,
   * so it committed (a transaction that fails throws, and its answer is an error, not a decision).
   */
  write(line: DecisionLine): void;
}

export interface RecorderParts {
  readonly records: { readonly writer: DecisionRecords } | null;
  readonly metrics: Metrics;
  readonly logArgs: boolean;
}

/**
 * `kind`: an `answer` of /decide or /inspect counts in the decision metrics; a `filing` is recorded
 * as the decision it made without counting there; an `unrecorded` one (a runtime's crash approval,
 * which decides nothing) writes nothing anywhere.
 */
export function recorderOf(
  parts: RecorderParts,
  log: CallLog,
  asked: Asked,
  kind: 'answer' | 'filing' | 'unrecorded' = 'answer',
): Recorder {
  const store = kind === 'unrecorded' ? null : (parts.records?.writer ?? null);
  let sent = false; // the row went with a transaction
  return {
    line: (decision, rule, beside) => decisionLine(asked, decision, rule, parts.logArgs, beside),
    async insert(tx, line) {
      const row = store?.rowOf(line) ?? null;
      if (row === null) return;
      await insertRecord(tx, row);
      sent = true;
    },
    statement(line) {
      const row = store?.rowOf(line) ?? null;
      if (row === null) return undefined;
      return () => {
        sent = true; // asked for only when the lane sends it
        return row;
      };
    },
    write(line) {
      if (kind === 'unrecorded') return;
      if (kind === 'answer') count(parts.metrics, line, asked.durationUs);
      log.info(line, 'decision');
      if (store === null) return;
      if (sent) parts.metrics.decisionRecordsWritten.inc();
      else store.push(line);
    },
  };
}
