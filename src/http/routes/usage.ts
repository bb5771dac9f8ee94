// POST /usage: spend the runtime reports after the fact, `{tool, run?, usd, for?}`, for model calls
// (`tool: llm`) and tools alike. It is added to every `max_usd` budget that selects the tool and the
// identity it is reported for (docs/spec.md section 5.9), and once a window's reported spend has
// reached a budget, the calls it selects are refused. A report is idempotent by its Idempotency-Key,
// which it must carry: a retry after a lost answer reads the kept answer and adds nothing again.
//
// Reported spend is the caller's word, counted whatever the standing, so who may report where is
// bounded (docs/design.md "Budgets and rate limits"): USAGE_ROLE counts only into the counters the caller's
// own calls of the tool count, and never into a `global` one, which one report could fill for every
// caller; USAGE_ANY_ROLE (a billing pipeline) may also count into `global` counters and report for
// another identity (`for`). One report carries at most USAGE_MAX_USD.
import type { FastifyInstance } from 'fastify';
import { reportedSpend } from '../../policy/amount.js';
import { usageCharges } from '../../policy/limits.js';
import type { Identity } from '../../policy/model.js';
import { toolNameSchema } from '../../policy/request.js';
import { requireRole } from '../auth.js';
import type { AppContext } from '../context.js';
import { HttpError } from '../errors.js';
import { idempotencyClaim } from '../idempotency.js';
import { sendAnswer } from '../reply.js';

const NAME = { type: 'string', minLength: 1, maxLength: 256 } as const;

export const usageBodySchema = {
  type: 'object',
  additionalProperties: false,
  required: ['tool', 'usd'],
  properties: {
    tool: toolNameSchema,
    // The run the spend was for: its id is the counter of a run-scoped budget.
    run: {
      type: 'object',
      additionalProperties: false,
      required: ['id'],
      properties: { id: { type: 'string', minLength: 1, maxLength: 256 } },
    },
    // Its rules are checked on the number as written (reportedSpend), not on the double ajv sees.
    usd: { type: 'number' },
    // USAGE_ANY_ROLE only: whose spend it is, as its token would name it (`sub`, team, agent).
    for: {
      type: 'object',
      additionalProperties: false,
      required: ['user'],
      properties: { user: NAME, team: NAME, agent: NAME },
    },
  },
} as const;

interface UsageBody {
  tool: string;
  run?: { id: string };
  usd: number;
  for?: { user: string; team?: string; agent?: string };
}

// What a verified token's team, agent and sub may not hold either (src/http/auth.ts): a counter key
// and a log line are made of them.
const UNFIT = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u;

export function usageRoute(app: FastifyInstance, ctx: AppContext): void {
  const { role, anyRole, maxUsd } = ctx.usage;
  app.post(
    '/usage',
    { onRequest: requireRole(role, anyRole), schema: { body: usageBodySchema } },
    async (request, reply) => {
      const caller = request.identity as Identity;
      const body = request.body as UsageBody;
      const claim = idempotencyClaim(request, 'usage', caller);
      if (claim === undefined)
        throw new HttpError(
          'bad_request',
          'POST /usage needs an Idempotency-Key: a retried report must not count twice',
        );
      const spend = reportedSpend(body, 'usd', body.usd, maxUsd);
      if ('rule' in spend) {
        throw new HttpError(
          'invalid_body',
          `usd ${spend.rule}: a report is a finite decimal above 0, at most USAGE_MAX_USD`,
          {
            errors: [{ pointer: '/usd', message: spend.rule }],
          },
        );
      }
      const trusted = caller.roles.includes(anyRole);
      if (body.for !== undefined && !trusted) {
        throw new HttpError(
          'forbidden',
          `reporting spend for another identity ("for") needs the role "${anyRole}" (USAGE_ANY_ROLE)`,
        );
      }
      const identity = body.for === undefined ? caller : identityOf(body.for);
      const charges = usageCharges(ctx.engine.parts.policies.current(), body.tool, identity, body.run?.id);
      const shared = trusted ? undefined : charges.find((c) => c.limit.scope === 'global');
      if (shared !== undefined) {
        throw new HttpError(
          'forbidden',
          `budget "${shared.limit.id}" counts the spend of every caller: reporting into it needs the role "${anyRole}" (USAGE_ANY_ROLE); nothing was recorded`,
        );
      }
      // Spend a budget selects must be counted somewhere: refuse the report rather than lose it.
      const lost = charges.find((c) => c.key === null);
      if (lost !== undefined) {
        const whose = body.for === undefined ? "the caller's token has" : '`for` has';
        const missing =
          lost.limit.scope === 'run' ? 'the report has no run id (run.id)' : `${whose} no ${lost.limit.scope}`;
        throw new HttpError(
          'usage_unattributable',
          `budget "${lost.limit.id}" counts spend per ${lost.limit.scope}, and ${missing}: nothing was recorded`,
          {
            errors: [
              {
                pointer: lost.limit.scope === 'run' ? '/run' : body.for === undefined ? '' : '/for',
                message: 'unattributable',
              },
            ],
          },
        );
      }
      const usd = spend.amount;
      const answer = await ctx.engine.report({
        claim,
        charges,
        usd,
        ...(body.for !== undefined ? { for: body.for } : {}),
      });
      request.log.info(
        {
          tool: body.tool,
          user: caller.user,
          ...(body.for !== undefined ? { for: body.for } : {}),
          usd: usd.text,
          budgets: charges.map((c) => c.limit.id),
          replayed: answer.replayed,
        },
        'usage',
      );
      return sendAnswer(reply, answer);
    },
  );
}

/** The identity a trusted reporter names (`for`): its team and agent as given, no roles (no limit selects by role). */
function identityOf(named: NonNullable<UsageBody['for']>): Identity {
  for (const key of ['user', 'team', 'agent'] as const) {
    const text = named[key];
    if (text !== undefined && (UNFIT.test(text) || !text.isWellFormed())) {
      throw new HttpError(
        'invalid_body',
        `for.${key} holds a control, invisible or unpaired character, as no token's claim may`,
        {
          errors: [{ pointer: `/for/${key}`, message: 'must not contain control, invisible or unpaired characters' }],
        },
      );
    }
  }
  return { user: named.user, team: named.team ?? null, agent: named.agent ?? null, roles: [] };
}
