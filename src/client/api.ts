// The routes a client calls, one function each, with the status each answers in (spec sections 5.3,
// 5.4, 5.5). A decision answers 200 (allow) or 403 (the others): anything else, or a body that does
// not say so, is a GatehouseError, never a decision the caller could mistake for one. Bodies go out
// and come back through ./wire.ts, the one place names change case.
import { type Exchange, GatehouseError, type Transport } from './http.js';
import type {
  Approval,
  ApprovalPage,
  DecideCall,
  DecisionBody,
  DenyTexts,
  GrantTexts,
  IdempotentOptions,
  InspectBody,
  InspectRequest,
  ListQuery,
  RequestOptions,
  ApprovalFiling,
  ToolsResponse,
} from './types.js';
import {
  APPROVAL,
  APPROVAL_PAGE,
  DECIDE_REQUEST,
  DECISION,
  DENY_REQUEST,
  fromWire,
  GRANT_REQUEST,
  INSPECT_ANSWER,
  INSPECT_REQUEST,
  LIST_QUERY,
  queryOf,
  APPROVAL_FILING,
  TOOLS_RESPONSE,
  toWire,
} from './wire.js';

/** What POST /approvals answers: the approval filed or found (201, 200), or the decision that needs none (409). */
export type Filing = { approval: Approval; decision?: undefined } | { decision: DecisionBody; approval?: undefined };

/** GET /approvals/{id}: held up to `waitSeconds` (0–60) while the approval is pending. */
export interface GetApprovalOptions extends RequestOptions {
  waitSeconds?: number;
}

const DECISIONS = new Set(['allow', 'deny', 'abort', 'require_approval']);
const INSPECT_DECISIONS = new Set(['allow', 'deny', 'require_approval']);

export function routes(t: Transport) {
  const approvalPath = (id: string, action = ''): string => `/approvals/${encodeURIComponent(id)}${action}`;
  return {
    async decide(call: DecideCall, o: IdempotentOptions = {}): Promise<DecisionBody> {
      const answer = await t.request('POST', '/decide', {
        body: toWire(DECIDE_REQUEST, call),
        ...keyed(o),
        accept: [403],
      });
      return decisionOf(answer.status, answer.body);
    },

    /** POST /decide with an exact wire body, sent again as it was (a redeem retried under its Idempotency-Key). */
    async resend(raw: string, o: IdempotentOptions = {}): Promise<DecisionBody> {
      const answer = await t.request('POST', '/decide', { rawBody: raw, ...keyed(o), accept: [403] });
      return decisionOf(answer.status, answer.body);
    },

    /**
     * POST /inspect: what the guards say of a tool's result or a model's text (200 allow, possibly
     * with `redacted`; 403 deny or require_approval). With `approvalId`, it redeems that approval
     * (under `idempotencyKey`, a retry whose answer was lost is answered the first allow).
     */
    async inspect(request: InspectRequest, o: IdempotentOptions = {}): Promise<InspectBody> {
      const answer = await t.request('POST', '/inspect', {
        body: toWire(INSPECT_REQUEST, request),
        ...keyed(o),
        accept: [403],
      });
      return inspectionOf(answer.status, answer.body);
    },

    /**
     * POST /approvals: 201/200 an approval, 409 the decision that needs none (allow, deny, abort).
     * With `kind: 'interrupted_side_effect'` (a runtime's token only), filed without a decision. With
     * `stage: 'result'`, the review of a tool's result (the /inspect body); 409 is then the inspection
     * as a decision (without the value: POST /inspect answers that).
     */
    async file(call: ApprovalFiling, o: IdempotentOptions = {}): Promise<Filing> {
      const answer = await t.request('POST', '/approvals', {
        body: toWire(APPROVAL_FILING, call),
        ...keyed(o),
        accept: [409],
      });
      if (answer.status === 409) return { decision: decisionOf(409, answer.body) };
      return { approval: approvalOf(answer.body) };
    },

    /** GET /approvals/{id}, held up to `waitSeconds` (0–60) while it is pending. */
    async approval(id: string, o: GetApprovalOptions = {}): Promise<Approval> {
      const { waitSeconds = 0, ...rest } = o;
      const wait = Math.max(0, Math.min(60, Math.floor(waitSeconds)));
      const path = wait > 0 ? `${approvalPath(id)}?wait=${wait}` : approvalPath(id);
      const answer = await t.request('GET', path, { ...passed(rest), holdMs: wait * 1000 });
      return approvalOf(answer.body);
    },

    async list(q: ListQuery = {}, o: RequestOptions = {}): Promise<ApprovalPage> {
      const body = (await t.request('GET', `/approvals${queryOf(LIST_QUERY, q)}`, passed(o))).body as
        | { items?: unknown }
        | undefined;
      if (!Array.isArray(body?.items))
        throw new GatehouseError('Gatehouse answered GET /approvals without a list', 200, 'bad_answer', body);
      return fromWire<ApprovalPage>(APPROVAL_PAGE, body);
    },

    async grant(id: string, texts: GrantTexts = {}, o: RequestOptions = {}): Promise<Approval> {
      return approvalOf(
        (await t.request('POST', approvalPath(id, '/grant'), { body: toWire(GRANT_REQUEST, texts), ...passed(o) }))
          .body,
      );
    },

    async deny(id: string, texts: DenyTexts = {}, o: RequestOptions = {}): Promise<Approval> {
      return approvalOf(
        (await t.request('POST', approvalPath(id, '/deny'), { body: toWire(DENY_REQUEST, texts), ...passed(o) })).body,
      );
    },

    async cancel(id: string, o: RequestOptions = {}): Promise<Approval> {
      return approvalOf((await t.request('POST', approvalPath(id, '/cancel'), { body: {}, ...passed(o) })).body);
    },

    async tools(o: RequestOptions = {}): Promise<ToolsResponse> {
      const body = (await t.request('GET', '/tools', passed(o))).body as { tools?: unknown } | undefined;
      if (!Array.isArray(body?.tools))
        throw new GatehouseError('Gatehouse answered GET /tools without a tool list', 200, 'bad_answer', body);
      return fromWire<ToolsResponse>(TOOLS_RESPONSE, body);
    },
  };
}

export type Routes = ReturnType<typeof routes>;

/** Only the options given: the transport takes no `undefined` for one left out. */
export function passed(o: RequestOptions): Pick<Exchange, 'signal' | 'timeoutMs'> {
  return {
    ...(o.signal ? { signal: o.signal } : {}),
    ...(o.timeoutMs !== undefined ? { timeoutMs: o.timeoutMs } : {}),
  };
}

function keyed(o: IdempotentOptions): Pick<Exchange, 'signal' | 'timeoutMs' | 'headers'> {
  return { ...passed(o), headers: o.idempotencyKey === undefined ? {} : { 'idempotency-key': o.idempotencyKey } };
}

/**
 * The decision in an answer, when the status agrees with it: on /decide 200 is allow and allow is 200,
 * and a body that says otherwise is not trusted either way; a 409 of POST /approvals is a decision that
 * needs no approval (allow, counted when limits select the call; deny; abort).
 */
function decisionOf(status: number, body: unknown): DecisionBody {
  const d = body as { decision?: unknown; message?: unknown } | undefined;
  const decision = typeof d?.decision === 'string' && DECISIONS.has(d.decision) ? d.decision : undefined;
  const agrees = status === 409 ? decision !== 'require_approval' : (decision === 'allow') === (status === 200);
  if (decision === undefined || !agrees || typeof d?.message !== 'string') {
    throw new GatehouseError(
      `Gatehouse answered ${status} with a body that is not a decision`,
      status,
      'bad_answer',
      body,
    );
  }
  return fromWire<DecisionBody>(DECISION, body);
}

/** An answer of POST /inspect, when its status agrees with its decision (200 is allow, and allow is 200). */
function inspectionOf(status: number, body: unknown): InspectBody {
  const d = body as { decision?: unknown; message?: unknown } | undefined;
  const decision = typeof d?.decision === 'string' && INSPECT_DECISIONS.has(d.decision) ? d.decision : undefined;
  if (decision === undefined || (decision === 'allow') !== (status === 200) || typeof d?.message !== 'string') {
    throw new GatehouseError(
      `Gatehouse answered ${status} with a body that is not an inspection`,
      status,
      'bad_answer',
      body,
    );
  }
  return fromWire<InspectBody>(INSPECT_ANSWER, body);
}

function approvalOf(body: unknown): Approval {
  const a = body as { id?: unknown; status?: unknown } | undefined;
  if (typeof a?.id !== 'string' || typeof a.status !== 'string')
    throw new GatehouseError('Gatehouse answered with a body that is not an approval', 200, 'bad_answer', body);
  return fromWire<Approval>(APPROVAL, body);
}
