// Reported spend (POST /usage, docs/spec.md section 5.9): counted in every `max_usd` budget it falls
// in, at most once per Idempotency-Key. The route has checked who may report what; this counts it.
import type { IdempotencyClaim } from '../db/idempotency.js';
import { canonicalize } from '../json/canonical.js';
import { assignMembers, type JsonObject } from '../json/value.js';
import { compareAmounts } from '../policy/amount.js';
import { putAmount, standingObject } from '../policy/limits.js';
import type { Amount, Charge } from '../policy/model.js';
import type { Answer } from './answer.js';
import { answerInTransaction, limitsOf } from './limits.js';
import type { EngineParts } from './parts.js';

export interface UsageReport {
  readonly claim: IdempotencyClaim;
  /** The budgets the spend falls in, each with its counter's key. */
  readonly charges: readonly Charge[];
  readonly usd: Amount;
  /** Whose spend it is, when a trusted reporter named it. */
  readonly for?: Readonly<Record<string, string>>;
}

export async function recordUsage(parts: EngineParts, report: UsageReport): Promise<Answer & { kind: 'text' }> {
  const limits = limitsOf(parts.limits);
  const { charges, usd } = report;
  const answer = await answerInTransaction(
    parts.keys,
    limits,
    report.claim,
    async (tx) => {
      const after = await limits.store.record(tx, charges, usd);
      const recorded = charges.map((c): JsonObject => {
        const limit = c.limit;
        const standing = after.get(c)!; // recorded: every charge has a key here
        const out: JsonObject = { id: limit.id, policy: limit.policy, scope: limit.scope };
        if (limit.type === 'budget') {
          putAmount(out, 'max_usd', limit.max);
          out.per = limit.per.text;
        }
        assignMembers(out, standingObject(limit, standing));
        // The calls this budget selects are refused from now on in this window.
        out.reached = limit.type === 'budget' && compareAmounts(standing.counted, limit.max) >= 0;
        return out;
      });
      const result: JsonObject = { recorded };
      // The amount counted, in plain decimal (`1e1` was counted as 10).
      putAmount(result, 'usd', { ...usd, written: usd.text });
      if (report.for !== undefined) result.for = { ...report.for };
      const text = canonicalize(result);
      // The counters after this report cannot be read again later: the answer is kept as sent.
      return { answer: { status: 200, body: text }, kept: { kind: 'body', status: 200, body: text } };
    },
    async (_tx, kept) => (kept.kind === 'body' ? { status: kept.status, body: kept.body } : null),
  );
  return { kind: 'text', ...answer };
}
