// The routes a client calls, one function each, with the status each answers in (spec 5.3, 5.4, 5.5).
// A decision answers 200 (allow) or 403 (the others): anything else, or a body that does not say so,
// is a GatehouseError, never a decision the caller could mistake for one.
import { GatehouseError, type Transport } from './http.js';
import type { Approval, ApprovalPage, ApprovalStatus, DecisionBody, ToolCall, ToolsResponse } from './types.js';

export interface ListQuery {
  status?: ApprovalStatus;
  tool?: string;
  limit?: number;
  cursor?: string;
}

export type Filing = { approval: Approval; decision?: undefined } | { decision: DecisionBody; approval?: undefined };

const DECISIONS = new Set(['allow', 'deny', 'abort', 'require_approval']);

export function routes(t: Transport) {
  const approvalPath = (id: string, action = ''): string => `/approvals/${encodeURIComponent(id)}${action}`;
  return {
    /** POST /decide; `raw` is an exact body to send again (a redeem retried under its Idempotency-Key). */
    async decide(
      call: (ToolCall & { approval_id?: string }) | { raw: string },
      o: { idempotencyKey?: string; signal?: AbortSignal } = {},
    ): Promise<DecisionBody> {
      const headers: Record<string, string> = o.idempotencyKey === undefined ? {} : { 'idempotency-key': o.idempotencyKey };
      const body = 'raw' in call ? { rawBody: call.raw } : { body: call };
      const answer = await t.request('POST', '/decide', { ...body, headers, accept: [403], ...(o.signal ? { signal: o.signal } : {}) });
      return decisionOf(answer.status, answer.body);
    },

    /** POST /approvals: 201/200 an approval, 409 the decision that needs none (allow, deny, abort). */
    async file(call: ToolCall, o: { idempotencyKey?: string; signal?: AbortSignal } = {}): Promise<Filing> {
      const headers: Record<string, string> = o.idempotencyKey === undefined ? {} : { 'idempotency-key': o.idempotencyKey };
      const answer = await t.request('POST', '/approvals', { body: call, headers, accept: [409], ...(o.signal ? { signal: o.signal } : {}) });
      if (answer.status === 409) return { decision: decisionOf(403, answer.body) };
      return { approval: approvalOf(answer.body) };
    },

    /** GET /approvals/{id}, held up to `waitSeconds` (0–60) while it is pending. */
    async approval(id: string, waitSeconds = 0, signal?: AbortSignal): Promise<Approval> {
      const wait = Math.max(0, Math.min(60, Math.floor(waitSeconds)));
      const path = wait > 0 ? `${approvalPath(id)}?wait=${wait}` : approvalPath(id);
      const answer = await t.request('GET', path, { holdMs: wait * 1000, ...(signal ? { signal } : {}) });
      return approvalOf(answer.body);
    },

    async list(q: ListQuery = {}): Promise<ApprovalPage> {
      const query = new URLSearchParams();
      for (const [name, value] of Object.entries(q)) if (value !== undefined) query.set(name, String(value));
      const qs = query.toString();
      return (await t.request('GET', qs ? `/approvals?${qs}` : '/approvals')).body as ApprovalPage;
    },

    async grant(id: string, note?: string): Promise<Approval> {
      return approvalOf((await t.request('POST', approvalPath(id, '/grant'), { body: note === undefined ? {} : { note } })).body);
    },

    async deny(id: string, reason?: string): Promise<Approval> {
      return approvalOf((await t.request('POST', approvalPath(id, '/deny'), { body: reason === undefined ? {} : { reason } })).body);
    },

    async cancel(id: string): Promise<Approval> {
      return approvalOf((await t.request('POST', approvalPath(id, '/cancel'), { body: {} })).body);
    },

    async tools(): Promise<ToolsResponse> {
      const body = (await t.request('GET', '/tools')).body as ToolsResponse | undefined;
      if (!Array.isArray(body?.tools)) throw new GatehouseError('Gatehouse answered GET /tools without a tool list', 200, 'bad_answer');
      return body;
    },
  };
}

export type Routes = ReturnType<typeof routes>;

function decisionOf(status: number, body: unknown): DecisionBody {
  const d = body as Partial<DecisionBody> | undefined;
  const decision = typeof d?.decision === 'string' && DECISIONS.has(d.decision) ? d.decision : undefined;
  // 200 is allow and allow is 200: a body that says otherwise is not trusted either way.
  if (decision === undefined || (decision === 'allow') !== (status === 200) || typeof d?.message !== 'string') {
    throw new GatehouseError(`Gatehouse answered ${status} with a body that is not a decision`, status, 'bad_answer', body);
  }
  return d as DecisionBody;
}

function approvalOf(body: unknown): Approval {
  const a = body as Partial<Approval> | undefined;
  if (typeof a?.id !== 'string' || typeof a.status !== 'string')
    throw new GatehouseError('Gatehouse answered with a body that is not an approval', 200, 'bad_answer', body);
  return a as Approval;
}
