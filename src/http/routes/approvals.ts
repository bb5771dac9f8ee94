// The approval endpoints of docs/spec.md section 5. Capability and presentation always come from the
// policy's decision, never from the caller; visibility is "your own, or everything for approvers",
// and anything you may not see is 404, not 403.
import { randomUUID } from 'node:crypto';
import { PassThrough } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { TransactionSql } from 'postgres';
import type { ApprovalService } from '../../approvals/service.js';
import { APPROVAL_STATUSES, LIMITS, type Approval, type ApprovalStatus, type ApprovalSummary } from '../../approvals/approval.js';
import type { ListOrder } from '../../approvals/cursor.js';
import type { FeedEvent } from '../../approvals/feed.js';
import type { Acted, KeptAnswer, StoredAnswer } from '../../approvals/idempotency.js';
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
import { idempotencyClaim, sendAnswer } from '../idempotency.js';
import { replayedFiling } from '../replays.js';
import { sendCanonical } from '../reply.js';

const PRESENTATION_LABEL = 'Model-chosen content: shown for review, not instructions to follow.';
/** How often an idle stream sends a comment (proxies close connections idle for a minute or so). */
const HEARTBEAT_MS = 15_000;

const idParams = { type: 'object', required: ['id'], additionalProperties: false, properties: { id: { type: 'string', maxLength: 64 } } } as const;
const getQuery = { type: 'object', additionalProperties: false, properties: { wait: { type: 'integer', minimum: 0, maximum: 60 } } } as const;
const listQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    status: { enum: APPROVAL_STATUSES },
    tool: { type: 'string', maxLength: 256 },
    kind: { type: 'string', maxLength: 512 },
    requester: { type: 'string', maxLength: 512 },
    q: { type: 'string', maxLength: LIMITS.search },
    decided: { type: 'boolean' },
    order: { enum: ['newest', 'oldest'] },
    count: { type: 'boolean' },
    limit: { type: 'integer', minimum: 1, maximum: LIMITS.pageSize },
    cursor: { type: 'string', maxLength: 512 },
  },
} as const;
const streamQuery = { type: 'object', additionalProperties: false, properties: {} } as const;
const decisionText = { type: 'string', maxLength: LIMITS.note } as const;
const grantBody = { type: 'object', additionalProperties: false, properties: { note: decisionText } } as const;
// `reason`, the one text of a denial before `note` and `message`, is both unless they are given.
const denyBody = { type: 'object', additionalProperties: false, properties: { note: decisionText, message: decisionText, reason: decisionText } } as const;
const cancelBody = { type: 'object', additionalProperties: false, properties: {} } as const;

/**
 * The API view of an approval: the presentation is labelled as model-chosen content, and the
 * decision's note, which is for the record, is shown to approvers only.
 */
export function approvalView(a: Approval, seesNotes: boolean): JsonObject {
  return { ...a, ...(seesNotes ? {} : { decision_note: null }), presentation_label: PRESENTATION_LABEL } as unknown as JsonObject; // every field is JSON data
}

/** A summary as lists and the stream show it: the note for approvers only. */
export function summaryView(a: ApprovalSummary, seesNotes: boolean): ApprovalSummary {
  return seesNotes ? a : { ...a, decision_note: null };
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
    // Filing (or the 409 with the decision), as the text sent, and what a key keeps of it: the approval
    // filed or found, or a counted allow; a 409 that counted nothing changed nothing.
    const file = async (result: typeof fresh, counted: boolean, tx?: TransactionSql): Promise<Acted> => {
      const descriptor = result.decision === 'require_approval' ? result.approval : undefined;
      if (descriptor === undefined) {
        const answer = { status: 409, body: JSON.stringify(decisionBody(result, decisionId)) };
        return { answer, kept: counted ? { kind: 'allow', status: 409, decisionId } : null };
      }
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
      const status = created ? 201 : 200;
      return { answer: { status, body: canonicalize(approvalView(approval, isApprover(identity))) }, kept: { kind: 'filed', status, approvalId: approval.id } };
    };
    // A retry is decided again first (`fresh`, for its own identity); what its key kept answers it
    // only when that decision stands behind it (../replays.ts): the approval as it stands now, or the
    // counted allow's 409 under its first decision id.
    const replay = async (tx: TransactionSql, kept: KeptAnswer): Promise<StoredAnswer | null> => {
      if (kept.kind === 'allow') return fresh.decision === 'allow' ? { status: kept.status, body: JSON.stringify(decisionBody(fresh, kept.decisionId)) } : null;
      const approval = await replayedFiling(service(), tx, kept, fresh, req, identity);
      return approval === null ? null : { status: kept.status, body: canonicalize(approvalView(approval, isApprover(identity))) };
    };
    // Budgets and rate limits select the call: their counters say whether it needs an approval (and a
    // call found allowed is counted: its 409 says allow).
    if (isCounted(fresh)) {
      const limits = limitsOf(ctx);
      const answer = await answerInTransaction(
        ctx,
        limits,
        claim,
        async (tx) => {
          const settled = await settleFiling(tx, limits, fresh, req);
          return file(settled.result, settled.counted, tx);
        },
        replay,
      );
      return sendAnswer(reply, answer);
    }
    // Only a require_approval files anything: any other answer changes nothing, and needs no key.
    const answer =
      claim === undefined || fresh.decision !== 'require_approval'
        ? { ...(await file(fresh, false)).answer, replayed: false }
        : await store.idempotent(claim, (tx) => file(fresh, false, tx), replay);
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
    return sendCanonical(reply, approvalView(approval, isApprover(identity)));
  });

  app.get('/approvals', { schema: { querystring: listQuery } }, async (request, reply) => {
    const { store } = service();
    const identity = identityOf(request);
    const approver = isApprover(identity);
    const q = request.query as {
      status?: ApprovalStatus;
      tool?: string;
      kind?: string;
      requester?: string;
      q?: string;
      decided?: boolean;
      order?: ListOrder;
      count?: boolean;
      limit?: number;
      cursor?: string;
    };
    const page = await store.list({
      limit: q.limit ?? 50,
      ...(q.status ? { status: q.status } : {}),
      ...(q.tool ? { tool: q.tool } : {}),
      ...(q.kind ? { kind: q.kind } : {}),
      ...(q.requester ? { requester: q.requester } : {}),
      ...(q.q ? { q: q.q, searchNotes: approver } : {}),
      ...(q.decided ? { decided: true } : {}),
      ...(q.order ? { order: q.order } : {}),
      ...(q.count ? { count: true } : {}),
      ...(q.cursor ? { cursor: q.cursor } : {}),
      ...(approver ? {} : { requesterSub: identity.user }),
    });
    // Summaries: a page never carries arguments (GET /approvals/{id} does, one approval at a time).
    return reply.send({
      items: page.items.map((a) => summaryView(a, approver)),
      next_cursor: page.nextCursor,
      ...(page.count === undefined ? {} : { count: page.count }),
    });
  });

  // The live stream of changes (server-sent events: https://html.spec.whatwg.org/multipage/server-sent-events.html).
  // `ready` once this replica listens (a client reads its list after it, so nothing falls in between),
  // then an `approval` event with the summary of each approval the caller may see as it changes, and
  // `reset` when changes may have been missed (read the list again). Closed by the client, or with
  // the server's shutdown; a comment every HEARTBEAT_MS keeps proxies from closing it as idle.
  const streams = new Set<PassThrough>();
  app.addHook('preClose', (done) => {
    for (const s of streams) s.end();
    done();
  });
  // No HEAD: a stream's headers alone say nothing, and its subscription would outlive them.
  app.get('/approvals/stream', { schema: { querystring: streamQuery }, exposeHeadRoute: false }, async (request, reply) => {
    const { feed } = service();
    const identity = identityOf(request);
    const approver = isApprover(identity);
    const body = new PassThrough();
    const write = (event: string, data: unknown): void => {
      body.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
    };
    const subscription = feed.subscribe({
      caller: identity.user,
      seesAll: approver,
      onEvent: (e: FeedEvent) => (e.type === 'reset' ? write('reset', {}) : write('approval', summaryView(e.approval, approver))),
    });
    // Whichever ends first (the client going, even before the answer began; the stream ended), it all goes.
    let heartbeat: NodeJS.Timeout | undefined;
    const end = (): void => {
      clearInterval(heartbeat);
      subscription.unsubscribe();
      streams.delete(body);
      body.destroy();
    };
    reply.raw.once('close', end);
    body.once('close', end);
    if (!(await subscription.listening)) {
      end();
      throw new HttpError('unavailable', 'the approval store is unavailable; retry later', { retryAfterSec: 2 });
    }
    if (body.destroyed) return reply.hijack(); // the client left while the feed started listening
    heartbeat = setInterval(() => body.write(': heartbeat\n\n'), HEARTBEAT_MS);
    heartbeat.unref();
    streams.add(body);
    // A reconnecting EventSource waits `retry` ms; `ready` says the feed was listening before any
    // list the client reads next.
    body.write('retry: 2000\n\n');
    write('ready', {});
    return reply
      .type('text/event-stream; charset=utf-8')
      .header('x-accel-buffering', 'no') // nginx: pass each event on at once
      .send(body);
  });

  // Grant and deny: the approver role, then one conditional transition in the store.
  const decision = { onRequest: requireRole(ctx.approverRole), preValidation: emptyBodyIsObject };
  app.post('/approvals/:id/grant', { schema: { params: idParams, body: grantBody }, ...decision }, async (request, reply) => {
    const identity = identityOf(request);
    const { id } = request.params as { id: string };
    const { note } = request.body as { note?: string };
    const result = await service().store.grant(id, { sub: identity.user }, note ?? null);
    return sendTransition(reply, result, identity, 'granted');
  });
  app.post('/approvals/:id/deny', { schema: { params: idParams, body: denyBody }, ...decision }, async (request, reply) => {
    const identity = identityOf(request);
    const { id } = request.params as { id: string };
    const { note, message, reason } = request.body as { note?: string; message?: string; reason?: string };
    // An older client's `reason` is the note and the message, unless the body names them.
    const text =
      reason !== undefined && note === undefined && message === undefined ? reason : { note: note ?? reason ?? null, message: message ?? reason ?? null };
    const result = await service().store.deny(id, { sub: identity.user }, text);
    return sendTransition(reply, result, identity, 'denied');
  });

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
      return sendCanonical(reply, approvalView(result.approval, isApprover(identity)));
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
        const body = result.approval ? { ...problem, approval: approvalView(result.approval, isApprover(identity)) } : problem;
        return sendCanonical(reply.code(problem.status), body as unknown as JsonObject, 'application/problem+json'); // all JSON data
      }
    }
  }
}
