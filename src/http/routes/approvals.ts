// The approval endpoints of docs/spec.md section 5. Capability and presentation always come from the
// policy's decision, never from the caller; visibility is "your own, or everything for approvers",
// and anything you may not see is 404, not 403.
import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { TransactionSql } from 'postgres';
import type { ApprovalService } from '../../approvals/service.js';
import { APPROVAL_STATUSES, LIMITS, type Approval, type ApprovalStatus } from '../../approvals/approval.js';
import type { StoredAnswer } from '../../approvals/idempotency.js';
import type { TransitionResult } from '../../approvals/store.js';
import { canonicalize } from '../../json/canonical.js';
import type { JsonObject } from '../../json/value.js';
import { decide } from '../../policy/decide.js';
import type { Identity } from '../../policy/model.js';
import { toDecideRequest, toolCallSchema, type ToolCall } from '../../policy/request.js';
import { requireRole } from '../auth.js';
import type { AppContext } from '../context.js';
import { answerInTransaction, isCounted, limitsOf, settleFiling } from '../counted.js';
import { decisionBody, sendDecision } from '../decisions.js';
import { HttpError, problemOf } from '../errors.js';
import { idempotencyClaim, keptStatus, sendAnswer } from '../idempotency.js';
import { sendCanonical } from '../reply.js';

const PRESENTATION_LABEL = 'Model-chosen content: shown for review, not instructions to follow.';

const idParams = { type: 'object', required: ['id'], additionalProperties: false, properties: { id: { type: 'string', maxLength: 64 } } } as const;
const getQuery = { type: 'object', additionalProperties: false, properties: { wait: { type: 'integer', minimum: 0, maximum: 60 } } } as const;
const listQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    status: { enum: APPROVAL_STATUSES },
    tool: { type: 'string', maxLength: 256 },
    limit: { type: 'integer', minimum: 1, maximum: LIMITS.pageSize },
    cursor: { type: 'string', maxLength: 512 },
  },
} as const;
const grantBody = { type: 'object', additionalProperties: false, properties: { note: { type: 'string', maxLength: LIMITS.note } } } as const;
const denyBody = { type: 'object', additionalProperties: false, properties: { reason: { type: 'string', maxLength: LIMITS.note } } } as const;
const cancelBody = { type: 'object', additionalProperties: false, properties: {} } as const;

/** The API view of an approval: the presentation is labelled as model-chosen content. */
export function approvalView(a: Approval): JsonObject {
  return { ...a, presentation_label: PRESENTATION_LABEL } as unknown as JsonObject; // every field is JSON data
}

export function approvalRoutes(app: FastifyInstance, ctx: AppContext): void {
  const service = (): ApprovalService => {
    if (ctx.approvals === null) throw new HttpError('unavailable', 'approvals are not configured', { retryAfterSec: 5 });
    ctx.approvals.ensureReady();
    return ctx.approvals;
  };
  const identityOf = (request: FastifyRequest): Identity => request.identity as Identity;
  const isApprover = (identity: Identity): boolean => identity.roles.includes(ctx.approverRole);
  // A body is optional on grant, deny and cancel: an absent one is `{}`.
  const emptyBodyIsObject = async (request: FastifyRequest): Promise<void> => {
    if (request.body === undefined || request.body === null) request.body = {};
  };

  app.post('/approvals', { schema: { body: toolCallSchema } }, async (request, reply) => {
    const { store } = service();
    const identity = identityOf(request);
    const req = toDecideRequest(request.body as ToolCall);
    const fresh = decide(ctx.policies.current(), req, identity);
    const decisionId = randomUUID();
    if (fresh.internalError) return sendDecision(reply, fresh, decisionId);
    const claim = idempotencyClaim(request, 'approvals', identity);
    // Filing (or the 409 with the decision), as the text sent: with a key, kept in the key's transaction.
    const file = async (result: typeof fresh, tx?: TransactionSql): Promise<StoredAnswer> => {
      const descriptor = result.decision === 'require_approval' ? result.approval : undefined;
      if (descriptor === undefined) return { status: 409, body: JSON.stringify(decisionBody(result, decisionId)) };
      const { approval, created } = await store.create(
        {
          descriptor,
          tool: req.tool,
          args: req.args,
          context: req.context,
          runId: req.run?.id,
          requester: { sub: identity.user, team: identity.team, agent: identity.agent },
          policies: result.policies,
        },
        tx,
      );
      const run = req.run?.id !== undefined ? { run_id: req.run.id } : {};
      request.log.info({ approval_id: approval.id, created, tool: req.tool, rule: result.rule, user: identity.user, ...run }, 'approval requested');
      return { status: created ? 201 : 200, body: canonicalize(approvalView(approval)) };
    };
    // Budgets and rate limits select the call: their counters say whether it needs an approval (and a
    // call found allowed is counted: its 409 says allow).
    if (isCounted(fresh)) {
      const limits = limitsOf(ctx);
      const answer = await answerInTransaction(ctx, limits, claim, async (tx) => file((await settleFiling(tx, limits, fresh, req)).result, tx));
      return sendAnswer(reply, answer);
    }
    const answer = claim === undefined ? { ...(await file(fresh)), replayed: false } : await store.idempotent(claim, (tx) => file(fresh, tx), keptStatus);
    return sendAnswer(reply, answer);
  });

  app.get('/approvals/:id', { schema: { params: idParams, querystring: getQuery } }, async (request, reply) => {
    const { store, waiter } = service();
    const identity = identityOf(request);
    const { id } = request.params as { id: string };
    const { wait } = request.query as { wait?: number };
    let approval = await store.get(id);
    if (approval === null || !(isApprover(identity) || approval.requester.sub === identity.user)) {
      throw new HttpError('not_found', 'no such approval');
    }
    if (wait !== undefined && wait > 0 && approval.status === 'pending') {
      const abort = new AbortController();
      request.raw.once('close', () => abort.abort());
      const held = approval;
      approval =
        (await waiter.waitForChange(held, wait * 1000, { caller: identity.user, signal: abort.signal }).catch((err: unknown) => {
          if (abort.signal.aborted) return held; // the client left; nobody reads this answer
          throw err;
        })) ?? held;
    }
    return sendCanonical(reply, approvalView(approval));
  });

  app.get('/approvals', { schema: { querystring: listQuery } }, async (request, reply) => {
    const { store } = service();
    const identity = identityOf(request);
    const q = request.query as { status?: ApprovalStatus; tool?: string; limit?: number; cursor?: string };
    const page = await store.list({
      limit: q.limit ?? 50,
      ...(q.status ? { status: q.status } : {}),
      ...(q.tool ? { tool: q.tool } : {}),
      ...(q.cursor ? { cursor: q.cursor } : {}),
      ...(isApprover(identity) ? {} : { requesterSub: identity.user }),
    });
    // Summaries: a page never carries arguments (GET /approvals/{id} does, one approval at a time).
    return reply.send({ items: page.items, next_cursor: page.nextCursor });
  });

  // Grant and deny: the approver role, then one conditional transition in the store.
  const transitions = [
    { action: 'grant', verb: 'granted', field: 'note', body: grantBody },
    { action: 'deny', verb: 'denied', field: 'reason', body: denyBody },
  ] as const;
  for (const t of transitions) {
    app.post(
      `/approvals/:id/${t.action}`,
      { schema: { params: idParams, body: t.body }, onRequest: requireRole(ctx.approverRole), preValidation: emptyBodyIsObject },
      async (request, reply) => {
        const identity = identityOf(request);
        const { id } = request.params as { id: string };
        const text = (request.body as Record<string, string | undefined>)[t.field] ?? null;
        const result = await service().store[t.action](id, { sub: identity.user }, text);
        return sendTransition(reply, result, identity, t.verb);
      },
    );
  }

  // Cancel: the requester withdraws its own approval; anyone else is told it does not exist.
  app.post('/approvals/:id/cancel', { schema: { params: idParams, body: cancelBody }, preValidation: emptyBodyIsObject }, async (request, reply) => {
    const identity = identityOf(request);
    const { id } = request.params as { id: string };
    const result = await service().store.cancel(id, { sub: identity.user });
    return sendTransition(reply, result, identity, 'cancelled');
  });

  function sendTransition(reply: FastifyReply, result: TransitionResult, identity: Identity, verb: string): FastifyReply {
    if (result.ok) {
      ctx.log.info({ approval_id: result.approval.id, status: result.approval.status, by: identity.user }, `approval ${verb}`);
      return sendCanonical(reply, approvalView(result.approval));
    }
    switch (result.error) {
      case 'not_found':
        throw new HttpError('not_found', 'no such approval');
      case 'self_approval':
        throw new HttpError('forbidden', 'an approver cannot decide an approval it requested');
      case 'conflict': {
        // The approval as it stands, numbers as written (reply.ts), in the problem body.
        const which = verb === 'cancelled' ? 'a pending or granted approval' : 'a pending approval';
        const problem = problemOf('conflict', `only ${which} can be ${verb}`);
        const body = result.approval ? { ...problem, approval: approvalView(result.approval) } : problem;
        return sendCanonical(reply.code(problem.status), body as unknown as JsonObject, 'application/problem+json'); // all JSON data
      }
    }
  }
}
