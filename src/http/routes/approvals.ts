// The approval endpoints of docs/spec.md section 5. Capability and presentation always come from the
// policy's decision, never from the caller; visibility is "your own, or everything for approvers",
// and anything you may not see is 404, not 403.
import { PassThrough } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  APPROVAL_STATUSES,
  approvalView,
  LIMITS,
  summaryView,
  type ApprovalService,
  type ApprovalStatus,
  type Approver,
  type FeedEvent,
  type ListOrder,
  type TransitionResult,
} from '../../engine/index.js';
import type { JsonObject, JsonValue } from '../../json/value.js';
import { argsSchemaOf } from '../../policy/args-schema.js';
import { moneyOf } from '../../policy/money.js';
import type { Identity } from '../../policy/model.js';
import { INTERRUPTED_KIND } from '../../policy/interrupted.js';
import {
  argsSchema,
  toDecideRequest,
  toInspectRequest,
  toolCallSchema,
  type Inspection,
  type ToolCall,
} from '../../policy/request.js';
import { requireRole } from '../auth.js';
import type { AppContext } from '../context.js';
import { HttpError, problemOf } from '../errors.js';
import { idempotencyClaim } from '../idempotency.js';
import { sendAnswer, sendCanonical } from '../reply.js';

/** How often an idle stream sends a comment (proxies close connections idle for a minute or so). */
const HEARTBEAT_MS = 15_000;

const idParams = {
  type: 'object',
  required: ['id'],
  additionalProperties: false,
  properties: { id: { type: 'string', maxLength: 64 } },
} as const;
const getQuery = {
  type: 'object',
  additionalProperties: false,
  properties: { wait: { type: 'integer', minimum: 0, maximum: 60 } },
} as const;
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
    eligible: { type: 'boolean' },
    order: { enum: ['newest', 'oldest'] },
    count: { type: 'boolean' },
    limit: { type: 'integer', minimum: 1, maximum: LIMITS.pageSize },
    cursor: { type: 'string', maxLength: 512 },
  },
} as const;
const streamQuery = { type: 'object', additionalProperties: false, properties: {} } as const;
const decisionText = { type: 'string', maxLength: LIMITS.note } as const;
// `args`: the call amended (docs/spec.md section 5.4, "Amend and grant").
const grantBody = {
  type: 'object',
  additionalProperties: false,
  properties: { note: decisionText, args: argsSchema },
} as const;
// `reason`, the one text of a denial before `note` and `message`, is both unless they are given.
const denyBody = {
  type: 'object',
  additionalProperties: false,
  properties: { note: decisionText, message: decisionText, reason: decisionText },
} as const;
const cancelBody = { type: 'object', additionalProperties: false, properties: {} } as const;
// A filing is a tool call; a runtime (RUNTIME_ROLE) may add the one kind it files itself. Or it is
// a POST /inspect body of the result stage (`stage` and `result` together, without `kind`): the
// review of that result.
export const filingBodySchema = {
  ...toolCallSchema,
  properties: {
    kind: { type: 'string', enum: [INTERRUPTED_KIND] },
    ...toolCallSchema.properties,
    stage: { const: 'result' },
    result: {},
  },
  dependentRequired: { stage: ['result'], result: ['stage'] },
  // A member the rest of the body rules out is refused where it stands.
  dependentSchemas: { stage: { properties: { kind: false } } },
} as const;

type FilingBody = ToolCall & { kind?: typeof INTERRUPTED_KIND; stage?: 'result'; result?: JsonValue };

export function approvalRoutes(app: FastifyInstance, ctx: AppContext): void {
  const service = (): ApprovalService => ctx.engine.approvals();
  const identityOf = (request: FastifyRequest): Identity => request.identity as Identity;
  const isApprover = (identity: Identity): boolean => identity.roles.includes(ctx.approverRole);
  // Who answers, for the requirements' eligibility, with the display name the token gives (if any).
  const approverOf = (identity: Identity): Approver => ({
    sub: identity.user,
    team: identity.team,
    roles: identity.roles,
    name: identity.name ?? null,
  });
  // A body is optional on grant, deny and cancel: an absent one is `{}`.
  const emptyBodyIsObject = async (request: FastifyRequest): Promise<void> => {
    if (request.body === undefined || request.body === null) request.body = {};
  };

  // Filing: the engine decides the call again and files what its decision describes (src/engine/file.ts).
  app.post('/approvals', { schema: { body: filingBodySchema } }, async (request, reply) => {
    const identity = identityOf(request);
    const body = request.body as FilingBody;
    const interrupted = body.kind !== undefined;
    if (interrupted && !identity.roles.includes(ctx.runtimeRole))
      throw new HttpError('forbidden', `only a runtime (role ${ctx.runtimeRole}) files an approval of its own kind`);
    // The schema makes `result` go with `stage`; the body itself keeps a root number's lexeme.
    const inspection = body.stage === 'result' ? toInspectRequest(body as Inspection) : undefined;
    const answer = await ctx.engine.file({
      request: toDecideRequest(body),
      interrupted,
      ...(inspection?.stage === 'result' ? { inspection } : {}),
      identity,
      claim: () => idempotencyClaim(request, 'approvals', identity),
      log: request.log,
      seesNotes: isApprover(identity),
    });
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
        (await waiter
          .waitForChange(held, wait * 1000, { caller: identity.user, signal: abort.signal })
          .catch((err: unknown) => {
            if (abort.signal.aborted) return held; // the client left; nobody reads this answer
            throw err;
          })) ?? held;
    }
    // How the page shows its amounts (docs/spec.md section 5.4): the serving catalogue's money
    // annotations for the tool, a display hint that the hash does not cover.
    const set = ctx.engine.parts.policies.current();
    const money = moneyOf(set, approval.tool);
    const view = approvalView(approval, isApprover(identity));
    // For approvers, the tool's argument schema the page checks an edited call against before
    // "Edit and grant" sends it (docs/spec.md section 5.4); not hashed, and the grant decides again.
    const schema = isApprover(identity) ? argsSchemaOf(set, approval.tool) : null;
    return sendCanonical(reply, {
      ...view,
      ...(money.length === 0 ? {} : { money: money as unknown as JsonValue[] }),
      ...(schema === null ? {} : { args_schema: schema }),
    });
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
      eligible?: boolean;
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
      // Only an approver can be eligible: anyone else's list is empty.
      ...(q.eligible ? { eligibleFor: approver ? approverOf(identity) : ('none' as const) } : {}),
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
  app.get(
    '/approvals/stream',
    { schema: { querystring: streamQuery }, exposeHeadRoute: false },
    async (request, reply) => {
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
        onEvent: (e: FeedEvent) =>
          e.type === 'reset' ? write('reset', {}) : write('approval', summaryView(e.approval, approver)),
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
    },
  );

  // Grant and deny: the approver role, then one conditional transition in the store.
  const decision = { onRequest: requireRole(ctx.approverRole), preValidation: emptyBodyIsObject };
  app.post(
    '/approvals/:id/grant',
    { schema: { params: idParams, body: grantBody }, ...decision },
    async (request, reply) => {
      const identity = identityOf(request);
      const { id } = request.params as { id: string };
      const { note, args } = request.body as { note?: string; args?: JsonObject };
      service(); // the approvals ready, or 503
      const result = await ctx.engine.grant({ id, approver: approverOf(identity), note: note ?? null, args });
      return sendTransition(reply, result, identity, 'granted');
    },
  );
  app.post(
    '/approvals/:id/deny',
    { schema: { params: idParams, body: denyBody }, ...decision },
    async (request, reply) => {
      const identity = identityOf(request);
      const { id } = request.params as { id: string };
      const { note, message, reason } = request.body as { note?: string; message?: string; reason?: string };
      // An older client's `reason` is the note and the message, unless the body names them.
      const text =
        reason !== undefined && note === undefined && message === undefined
          ? reason
          : { note: note ?? reason ?? null, message: message ?? reason ?? null };
      const result = await service().store.deny(id, approverOf(identity), text);
      return sendTransition(reply, result, identity, 'denied');
    },
  );

  // Cancel: the requester withdraws its own approval; anyone else is told it does not exist.
  app.post(
    '/approvals/:id/cancel',
    { schema: { params: idParams, body: cancelBody }, preValidation: emptyBodyIsObject },
    async (request, reply) => {
      const identity = identityOf(request);
      const { id } = request.params as { id: string };
      const result = await service().store.cancel(id, { sub: identity.user });
      return sendTransition(reply, result, identity, 'cancelled');
    },
  );

  function sendTransition(
    reply: FastifyReply,
    result: TransitionResult,
    identity: Identity,
    verb: string,
  ): FastifyReply {
    if (result.ok) {
      ctx.engine.parts.log.info(
        { approval_id: result.approval.id, status: result.approval.status, by: identity.user },
        `approval ${verb}`,
      );
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
        const body = result.approval
          ? { ...problem, approval: approvalView(result.approval, isApprover(identity)) }
          : problem;
        return sendCanonical(reply.code(problem.status), body as unknown as JsonObject, 'application/problem+json'); // all JSON data
      }
    }
  }
}
