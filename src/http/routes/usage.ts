// POST /usage (any caller): spend the runtime reports after the fact, `{tool, run?, usd}`, for model calls
// (`tool: llm`) and tools alike. It is added to every `max_usd` budget that selects the tool and the
// caller (docs/spec.md section 2.9), and once a window's reported spend has reached a budget, the
// calls it selects are refused. A report is idempotent by its Idempotency-Key, which it must carry:
// a retry after a lost answer reads the kept answer and adds nothing again.
import type { FastifyInstance } from 'fastify';
import type { JsonObject } from '../../json/value.js';
import { amountAt, compareAmounts } from '../../policy/amount.js';
import { putAmount, standingObject, usageCharges } from '../../policy/limits.js';
import type { Identity } from '../../policy/model.js';
import { toolNameSchema } from '../../policy/request.js';
import { canonicalize } from '../../json/canonical.js';
import type { AppContext } from '../context.js';
import { answerInTransaction, limitsOf } from '../counted.js';
import { HttpError } from '../errors.js';
import { idempotencyClaim, sendAnswer } from '../idempotency.js';

export const usageBodySchema = {
  type: 'object',
  additionalProperties: false,
  required: ['tool', 'usd'],
  properties: {
    tool: toolNameSchema,
    // The run the spend was for: its id is the counter of a run-scoped budget.
    run: { type: 'object', additionalProperties: false, required: ['id'], properties: { id: { type: 'string', minLength: 1, maxLength: 256 } } },
    usd: { type: 'number', minimum: 0 },
  },
} as const;

interface UsageBody {
  tool: string;
  run?: { id: string };
  usd: number;
}

export function usageRoute(app: FastifyInstance, ctx: AppContext): void {
  app.post('/usage', { schema: { body: usageBodySchema } }, async (request, reply) => {
    const identity = request.identity as Identity;
    const body = request.body as UsageBody;
    const claim = idempotencyClaim(request, 'usage', identity);
    if (claim === undefined) throw new HttpError('bad_request', 'POST /usage needs an Idempotency-Key: a retried report must not count twice');
    const usd = amountAt(body, 'usd', body.usd);
    if (usd === null) {
      throw new HttpError('invalid_body', 'usd is a number a double cannot hold as written', { errors: [{ pointer: '/usd', message: 'not exact' }] });
    }
    const charges = usageCharges(ctx.policies.current(), body.tool, identity, body.run?.id);
    // Spend a budget selects must be counted somewhere: refuse the report rather than lose it.
    const lost = charges.find((c) => c.key === null);
    if (lost !== undefined) {
      const missing = lost.limit.scope === 'run' ? 'the report has no run id (run.id)' : `the caller's token has no ${lost.limit.scope}`;
      throw new HttpError('usage_unattributable', `budget "${lost.limit.id}" counts spend per ${lost.limit.scope}, and ${missing}: nothing was recorded`, {
        errors: [{ pointer: lost.limit.scope === 'run' ? '/run' : '', message: 'unattributable' }],
      });
    }
    const limits = limitsOf(ctx);
    const answer = await answerInTransaction(
      ctx,
      limits,
      claim,
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
          Object.assign(out, standingObject(limit, standing));
          // The calls this budget selects are refused from now on in this window.
          out.reached = limit.type === 'budget' && compareAmounts(standing.counted, limit.max) >= 0;
          return out;
        });
        const result: JsonObject = { recorded };
        putAmount(result, 'usd', usd);
        const text = canonicalize(result);
        // The counters after this report cannot be read again later: the answer is kept as sent.
        return { answer: { status: 200, body: text }, kept: { kind: 'body', status: 200, body: text } };
      },
      async (_tx, kept) => (kept.kind === 'body' ? { status: kept.status, body: kept.body } : null),
    );
    request.log.info({ tool: body.tool, user: identity.user, usd: usd.text, budgets: charges.map((c) => c.limit.id), replayed: answer.replayed }, 'usage');
    return sendAnswer(reply, answer);
  });
}
