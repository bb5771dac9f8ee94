// The client against openapi.yaml. Its wire shapes (src/client/wire.ts) are held to its TypeScript
// types by the compiler (`satisfies ShapeOf<T>`); here they are held to the document:
//   (a) statically, for every route the client wraps: the request body's fields, the query
//       parameters and the response fields, at every depth, by name and by whether the wire may leave
//       them out, so a field added to (or dropped from) the document fails here until the client
//       follows;
//   (b) against the real server (real PostgreSQL): what each method sends validates against the
//       document's request schema and parameters, and what it answers carries the client's names only.
// openapi.yaml itself is held to the server by test/openapi/openapi.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, type GatehouseClient, type ToolCall } from '../../src/client/index.js';
import type { Fetch } from '../../src/client/http.js';
import {
  APPROVAL,
  APPROVAL_PAGE,
  BUDGETS_QUERY,
  BUDGETS_RESPONSE,
  camelName,
  DECIDE_REQUEST,
  DECISION,
  DECISION_PAGE,
  DECISION_QUERY,
  DENY_REQUEST,
  type Field,
  GRANT_REQUEST,
  INSPECT_ANSWER,
  INSPECT_REQUEST,
  LIST_QUERY,
  type Shape,
  APPROVAL_FILING,
  TOOLS_RESPONSE,
} from '../../src/client/wire.js';
import { createSql } from '../../src/db/connect.js';
import { adminToken, agentToken, approverToken, createTestApp, type TestApp, token } from '../helpers/app.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { listenLoopback } from '../helpers/http.js';
import {
  assertMatchesOpenApi,
  compileDocumentSchema,
  createOpenApiAjv,
  deref,
  findOperation,
  type JsonSchema,
  type MediaTypeObject,
  parameterObjectSchema,
  parametersFor,
  type ResponseObject,
  requestValidatorFor,
} from '../helpers/openapi.js';

// ---- reading the document's schemas as the client sees them ------------------------------------------

interface ObjectView {
  properties: Map<string, JsonSchema>;
  required: Set<string>;
}

/** The properties of an object schema, through $ref and allOf; required only where every branch of `schemas` requires it. */
function objectView(...schemas: JsonSchema[]): ObjectView {
  const views = schemas.map((s) => collect(s));
  const properties = new Map<string, JsonSchema>();
  for (const v of views)
    for (const [name, schema] of v.properties) if (!properties.has(name)) properties.set(name, schema);
  const required = new Set([...properties.keys()].filter((name) => views.every((v) => v.required.has(name))));
  return { properties, required };
}

/** A schema with its reference followed (parameterObjectSchema points references at the registered document). */
function resolved(schema: JsonSchema): JsonSchema {
  const ref = schema['$ref'];
  return typeof ref === 'string' ? deref<JsonSchema>({ $ref: ref.replace(/^openapi#/, '#') }) : schema;
}

function collect(schema: JsonSchema): ObjectView {
  const s = resolved(schema);
  const out: ObjectView = { properties: new Map(), required: new Set() };
  for (const part of (s['allOf'] as JsonSchema[] | undefined) ?? []) {
    const inner = collect(part);
    for (const [name, p] of inner.properties) if (!out.properties.has(name)) out.properties.set(name, p);
    for (const name of inner.required) out.required.add(name);
  }
  for (const [name, p] of Object.entries((s['properties'] as Record<string, JsonSchema> | undefined) ?? {})) {
    // A branch of allOf that only narrows a property (`status: {const: granted}`) leaves the first description.
    if (!out.properties.has(name)) out.properties.set(name, p);
  }
  for (const name of (s['required'] as string[] | undefined) ?? []) out.required.add(name);
  // `if/then` requirements (`next` on a require_approval) hold for some answers only: optional to a reader.
  return out;
}

/** What a property holds, as far as names go: an object with named fields, a list of them, or a value whose keys are data. */
function kindOf(schema: JsonSchema): { nested?: JsonSchema; list?: true } {
  const s = resolved(schema);
  if (collect(s).properties.size > 0) return { nested: s };
  const items = s['items'] as JsonSchema | undefined;
  if (items !== undefined && collect(items).properties.size > 0) return { nested: resolved(items), list: true };
  return {};
}

/** Every disagreement between a client shape and the document's schemas (one per path), `[]` when none. */
function disagreements(shape: Shape, schemas: JsonSchema[], where: string, except: readonly string[] = []): string[] {
  const view = objectView(...schemas);
  const problems: string[] = [];
  const documented = [...view.properties.keys()].filter((n) => !except.includes(n));
  for (const name of documented)
    if (!Object.hasOwn(shape, name)) problems.push(`${where}.${name}: in openapi.yaml, not in the client`);
  for (const [name, field] of Object.entries(shape) as [string, Field][]) {
    const schema = view.properties.get(name);
    if (schema === undefined || except.includes(name)) {
      problems.push(`${where}.${name}: in the client, not in openapi.yaml`);
      continue;
    }
    if (field.optional === view.required.has(name)) {
      problems.push(
        `${where}.${name}: the client has it ${field.optional ? 'optional' : 'required'}, openapi.yaml ${field.optional ? 'required' : 'optional'}`,
      );
    }
    const kind = kindOf(schema);
    if (kind.nested === undefined) {
      if (field.shape !== undefined)
        problems.push(`${where}.${name}: the client reads named fields, openapi.yaml has none`);
      continue;
    }
    if (field.shape === undefined) {
      problems.push(
        `${where}.${name}: openapi.yaml names its fields, the client passes it unread (its names would keep the wire's case)`,
      );
      continue;
    }
    if ((field.list ?? false) !== (kind.list ?? false))
      problems.push(`${where}.${name}: a list in one, not in the other`);
    problems.push(...disagreements(field.shape, [kind.nested], `${where}.${name}${kind.list ? '[]' : ''}`));
  }
  return problems;
}

const requestBody = (method: string, path: string): JsonSchema => {
  const schema = findOperation(method, path).operation.requestBody?.content?.['application/json']?.schema;
  if (schema === undefined) throw new Error(`openapi.yaml: ${method} ${path} has no JSON request body`);
  return schema;
};

const responseBodies = (method: string, path: string, statuses: string[]): JsonSchema[] =>
  statuses.map((status) => {
    const response = deref<ResponseObject>(findOperation(method, path).operation.responses?.[status]);
    const media: MediaTypeObject | undefined = response?.content?.['application/json'];
    if (media?.schema === undefined) throw new Error(`openapi.yaml: ${method} ${path} ${status} has no JSON body`);
    return media.schema;
  });

const queryNames = (method: string, path: string): string[] =>
  parametersFor(method, path)
    .filter((p) => p.in === 'query')
    .map((p) => p.name)
    .sort();

const headerNames = (method: string, path: string): string[] =>
  parametersFor(method, path)
    .filter((p) => p.in === 'header')
    .map((p) => p.name.toLowerCase());

// ---- (a) the shapes against the document --------------------------------------------------------------

/** Each method of the client, the route it wraps, and the shapes it sends and reads. */
const ROUTES = {
  decide: {
    method: 'post',
    path: '/decide',
    body: DECIDE_REQUEST,
    answers: { DECISION: ['200', '403'] },
    idempotent: true,
  },
  gate: {
    method: 'post',
    path: '/decide',
    body: DECIDE_REQUEST,
    answers: { DECISION: ['200', '403'] },
    idempotent: false,
  },
  inspect: {
    method: 'post',
    path: '/inspect',
    body: INSPECT_REQUEST,
    answers: { INSPECT_ANSWER: ['200', '403'] },
    idempotent: true,
  },
  guardResult: {
    method: 'post',
    path: '/inspect',
    body: INSPECT_REQUEST,
    answers: { INSPECT_ANSWER: ['200', '403'] },
    idempotent: false,
  },
  tools: { method: 'get', path: '/tools', answers: { TOOLS_RESPONSE: ['200'] }, idempotent: false },
  decisions: {
    method: 'get',
    path: '/decisions',
    query: DECISION_QUERY,
    answers: { DECISION_PAGE: ['200'] },
    idempotent: false,
  },
  budgets: {
    method: 'get',
    path: '/budgets',
    query: BUDGETS_QUERY,
    answers: { BUDGETS_RESPONSE: ['200'] },
    idempotent: false,
  },
  'approvals.file': {
    method: 'post',
    path: '/approvals',
    body: APPROVAL_FILING,
    answers: { APPROVAL: ['200', '201'], DECISION_WITHOUT_NEXT: ['409'] },
    idempotent: true,
  },
  'approvals.get': { method: 'get', path: '/approvals/x', answers: { APPROVAL: ['200'] }, idempotent: false },
  'approvals.list': {
    method: 'get',
    path: '/approvals',
    query: LIST_QUERY,
    answers: { APPROVAL_PAGE: ['200'] },
    idempotent: false,
  },
  'approvals.grant': {
    method: 'post',
    path: '/approvals/x/grant',
    body: GRANT_REQUEST,
    answers: { APPROVAL: ['200'] },
    idempotent: false,
  },
  'approvals.deny': {
    method: 'post',
    path: '/approvals/x/deny',
    body: DENY_REQUEST,
    answers: { APPROVAL: ['200'] },
    idempotent: false,
  },
  'approvals.cancel': {
    method: 'post',
    path: '/approvals/x/cancel',
    answers: { APPROVAL: ['200'] },
    idempotent: false,
  },
} as const;

// A decision that needs no approval (the 409 of POST /approvals) never says what to do next.
const { next: _next, ...DECISION_WITHOUT_NEXT } = DECISION;
const SHAPES: Record<string, Shape> = {
  DECISION,
  DECISION_WITHOUT_NEXT,
  INSPECT_ANSWER,
  TOOLS_RESPONSE,
  APPROVAL,
  APPROVAL_PAGE,
  DECISION_PAGE,
  BUDGETS_RESPONSE,
};

describe('the client shapes are the schemas of openapi.yaml', () => {
  it('covers every method of the client', () => {
    const client = createClient({ url: 'http://127.0.0.1:1', token: 't' });
    const methods = [
      ...Object.keys(client).filter((k) => k !== 'approvals'),
      ...Object.keys(client.approvals).map((k) => `approvals.${k}`),
    ].sort();
    expect(methods).toEqual(Object.keys(ROUTES).sort());
  });

  for (const [name, route] of Object.entries(ROUTES)) {
    it(`${name}: ${route.method.toUpperCase()} ${route.path}: request and answers`, () => {
      const where = `${route.method.toUpperCase()} ${route.path}`;
      const problems: string[] = [];
      if ('body' in route) {
        // The deny body's `reason` is the one text of older callers (spec section 5.4); this client sends
        // `note` and `message`, which say which text is which.
        const except = name === 'approvals.deny' ? ['reason'] : [];
        problems.push(...disagreements(route.body, [requestBody(route.method, route.path)], `${where} body`, except));
      }
      for (const [shape, statuses] of Object.entries(route.answers)) {
        problems.push(
          ...disagreements(
            SHAPES[shape]!,
            responseBodies(route.method, route.path, [...statuses]),
            `${where} ${statuses.join('/')}`,
          ),
        );
      }
      expect(problems).toEqual([]);
    });
  }

  for (const [name, route] of Object.entries(ROUTES)) {
    if (!('query' in route)) continue;
    it(`${name}: each query parameter of GET ${route.path} is an option of the same name, and no other`, () => {
      const problems = disagreements(
        route.query,
        [parameterObjectSchema('get', route.path, 'query')],
        `GET ${route.path} query`,
      );
      expect(problems).toEqual([]);
      expect(Object.keys(route.query).map(camelName).sort()).toEqual(queryNames('get', route.path));
    });
  }

  it('GET /approvals/{id} takes `wait` alone (the client option `waitSeconds`); the other routes the client wraps without a query take none', () => {
    expect(queryNames('get', '/approvals/x')).toEqual(['wait']);
    for (const [name, route] of Object.entries(ROUTES)) {
      if (name === 'approvals.get' || 'query' in route) continue;
      expect(queryNames(route.method, route.path), name).toEqual([]);
    }
  });

  it('the routes that take an Idempotency-Key are the methods that take `idempotencyKey` (gate() sets its own)', () => {
    for (const [name, route] of Object.entries(ROUTES)) {
      if (name === 'gate' || name === 'guardResult') continue;
      expect(headerNames(route.method, route.path).includes('idempotency-key'), name).toBe(route.idempotent);
    }
  });

  it('the check finds what differs (a field missing, an extra one, optionality, an unread nested object)', () => {
    const schema: JsonSchema = {
      type: 'object',
      required: ['a_b', 'c'],
      properties: {
        a_b: { type: 'string' },
        c: { type: 'object', required: ['d_e'], properties: { d_e: { type: 'string' } } },
        f: { type: 'string' },
      },
    };
    const shape: Shape = { a_b: { optional: true }, c: { optional: false }, g: { optional: true } };
    expect(disagreements(shape, [schema], 'x')).toEqual([
      'x.f: in openapi.yaml, not in the client',
      'x.a_b: the client has it optional, openapi.yaml required',
      "x.c: openapi.yaml names its fields, the client passes it unread (its names would keep the wire's case)",
      'x.g: in the client, not in openapi.yaml',
    ]);
  });
});

// ---- (b) what the client sends and reads, against the real server ---------------------------------------

const SUPPORT = agentToken('agent-7', { team: 'support' });
const OPERATOR = approverToken('operator-1');
/** Keys whose values are data (the caller's or the policy's own names), never renamed. */
const DATA_FIELDS = new Set([
  'args',
  'context',
  'capability',
  'presentation',
  'result',
  'content',
  'redacted',
  'output',
]);

const coercing = createOpenApiAjv({ coerceTypes: true });

interface Sent {
  method: string;
  path: string;
  query: Record<string, string>;
  headers: Record<string, string>;
  body: unknown;
}

/** A fetch that checks each request against openapi.yaml, and each answer too, before the client reads it. */
function checkedFetch(sent: Sent[], problems: string[]): Fetch {
  return async (url, init) => {
    const u = new URL(url);
    const method = init.method.toLowerCase();
    const query = Object.fromEntries(u.searchParams);
    const body = init.body === null ? undefined : (JSON.parse(init.body) as unknown);
    sent.push({ method, path: u.pathname, query, headers: init.headers, body });
    const where = `${init.method} ${u.pathname}${u.search}`;
    const found = findOperation(method, u.pathname);
    const queryCheck = compileDocumentSchema(
      parameterObjectSchema(method, u.pathname, 'query'),
      `query ${method} ${found.path}`,
      coercing,
    );
    if (!queryCheck({ ...query })) problems.push(`${where}: query ${JSON.stringify(queryCheck.errors)}`);
    if (body !== undefined) {
      const bodyCheck = requestValidatorFor(method, u.pathname);
      if (!bodyCheck(body)) problems.push(`${where}: body ${JSON.stringify(bodyCheck.errors)}`);
    }
    const key = init.headers['idempotency-key'];
    if (key !== undefined && !headerNames(method, u.pathname).includes('idempotency-key'))
      problems.push(`${where}: an Idempotency-Key the route does not take`);
    const res = await fetch(url, init);
    const text = await res.text();
    try {
      assertMatchesOpenApi(method, u.pathname, res.status, res.headers.get('content-type') ?? undefined, text);
    } catch (err) {
      problems.push((err as Error).message);
    }
    return { status: res.status, headers: res.headers, text: async () => text };
  };
}

/** Every key of a value the client answered, outside the data fields, as paths. */
function keysOf(value: unknown, path = ''): string[] {
  if (Array.isArray(value)) return value.flatMap((v, i) => keysOf(v, `${path}[${i}]`));
  if (value === null || typeof value !== 'object') return [];
  return Object.entries(value).flatMap(([k, v]) => [
    `${path}.${k}`,
    ...(DATA_FIELDS.has(k) ? [] : keysOf(v, `${path}.${k}`)),
  ]);
}

const snakeKeys = (value: unknown): string[] => keysOf(value).filter((p) => /_/.test(p.split('.').at(-1)!));

describe('what the client sends is what openapi.yaml accepts; what it answers is in its own names', () => {
  let t: TestApp;
  let url: string;
  const sent: Sent[] = [];
  const problems: string[] = [];
  let agent: GatehouseClient;
  let operator: GatehouseClient;
  let orders = 0;
  const refund = (): ToolCall => ({
    tool: 'refund',
    args: { order: `K-${++orders}`, amount: 120, note: 'customer asked twice' },
    context: { tenant_id: 'acme' },
    run: { id: 'run-contract', steps: [{ tool: 'lookup_order', decision: 'allow' }] },
  });

  beforeAll(async () => {
    t = await createTestApp({ database: true, env: 'prod' });
    url = `http://127.0.0.1:${await listenLoopback(t.app)}`;
    agent = createClient({ url, token: SUPPORT, fetch: checkedFetch(sent, problems) });
    operator = createClient({ url, token: OPERATOR, fetch: checkedFetch(sent, problems) });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('decide, file, get, list, grant, deny, cancel and tools: every request valid, every answer camelCase outside the data', async () => {
    const asked = await agent.decide(refund(), { idempotencyKey: 'contract-1' });
    expect(asked).toMatchObject({ decision: 'require_approval', next: { action: 'file', url: '/approvals' } });
    expect(typeof asked.decisionId).toBe('string');

    const call = refund();
    const filed = await agent.approvals.file(call, { idempotencyKey: 'contract-2' });
    const approval = filed.approval!;
    expect(approval).toMatchObject({
      status: 'pending',
      runId: 'run-contract',
      args: call.args,
      context: call.context,
      argsBytes: expect.any(Number),
    });
    expect(await agent.approvals.get(approval.id, { waitSeconds: 1 })).toMatchObject({
      id: approval.id,
      status: 'pending',
    });
    const allowed = await agent.approvals.file({ tool: 'lookup_order', args: { order: 'A1' } });
    expect(allowed.decision?.decision).toBe('allow');

    const page = await operator.approvals.list({
      status: 'pending',
      tool: 'refund',
      kind: 'refund_over_cap',
      requester: 'agent-7',
      q: 'K-',
      decided: false,
      order: 'oldest',
      count: true,
      limit: 1,
    });
    expect(page.count).toBeGreaterThanOrEqual(1);
    expect(page.items).toHaveLength(1);
    if (page.nextCursor !== null)
      await operator.approvals.list({ status: 'pending', order: 'oldest', limit: 1, cursor: page.nextCursor });

    const granted = await operator.approvals.grant(approval.id, { note: 'checked' });
    expect(granted).toMatchObject({ status: 'granted', decisionNote: 'checked', decisionMessage: null });
    const cancelled = await agent.approvals.cancel(approval.id);
    expect(cancelled.status).toBe('cancelled');

    const second = (await agent.approvals.file(refund())).approval!;
    const denied = await operator.approvals.deny(second.id, {
      note: 'card flagged for chargebacks',
      message: 'Declined by an operator.',
    });
    expect(denied).toMatchObject({
      status: 'denied',
      decisionNote: 'card flagged for chargebacks',
      decisionMessage: 'Declined by an operator.',
    });

    const tools = await agent.tools();
    expect(tools.tools.length).toBeGreaterThan(0);

    expect(problems).toEqual([]);
    // The request names went out in wire case: the run's steps, the redeem's approval, the list's filters.
    const answers = [asked, approval, page, granted, cancelled, denied, tools, allowed.decision];
    expect(answers.flatMap((a) => snakeKeys(a))).toEqual([]);
    // The data kept its own names, both ways.
    expect(approval.context).toEqual({ tenant_id: 'acme' });
    expect(sent.find((s) => s.path === '/approvals' && s.method === 'post')?.body).toMatchObject({
      context: { tenant_id: 'acme' },
    });
  });

  it('deny: the note stays with the operators, the message reaches the agent when it cites the approval', async () => {
    const call = refund();
    const id = (await agent.approvals.file(call)).approval!.id;
    await operator.approvals.deny(id, {
      note: 'card flagged for chargebacks',
      message: 'Declined: the order was already refunded.',
    });
    const seen = await agent.approvals.get(id);
    expect(seen).toMatchObject({
      status: 'denied',
      decisionNote: null,
      decisionMessage: 'Declined: the order was already refunded.',
    });
    const cited = await agent.decide({ ...call, approvalId: id });
    expect(cited.decision).toBe('deny');
    expect(cited.message).toContain('Declined: the order was already refunded.');
    expect(cited.message).not.toContain('chargebacks');
    const redeem = sent.findLast((s) => s.path === '/decide');
    expect(redeem?.body).toMatchObject({
      approval_id: id,
      run: { id: 'run-contract', steps: [{ tool: 'lookup_order', decision: 'allow' }] },
    });
    expect(problems).toEqual([]);
  });

  it('gate(): its requests are valid too, run steps it records included', async () => {
    const run = `run-gate-${++orders}`;
    await agent.gate({ tool: 'lookup_order', args: { order: 'A1' } }, { runId: run });
    const result = await agent.gate(refund(), { runId: run, maxWaitMs: 0 });
    expect(result).toMatchObject({ decision: 'require_approval', approval: { status: 'pending' } });
    expect(snakeKeys(result)).toEqual([]);
    expect(problems).toEqual([]);
  });

  it('inspect() and guardResult(): every request valid, every answer camelCase outside the data', async () => {
    const result = { order_id: 'K-1', status: 'shipped' };
    const body = await agent.inspect({
      stage: 'result',
      tool: 'lookup_order',
      args: { order: 'K-1' },
      result,
      context: { tenant_id: 'acme' },
      run: { id: 'run-contract' },
    });
    expect(body).toMatchObject({ decision: 'allow', stage: 'result' });
    const model = await agent.inspect({
      stage: 'llm_response',
      content: { text: 'done' },
      run: { id: 'run-contract' },
    });
    expect(model.stage).toBe('llm_response');
    const verdict = await agent.guardResult({ tool: 'lookup_order', args: { order: 'K-1' }, result }, { runId: 'r' });
    expect(verdict.decision).toBe('allow');
    // A result that needs no review, filed anyway: 409, the inspection as a decision.
    const filed = await agent.approvals.file({ stage: 'result', tool: 'lookup_order', args: { order: 'K-1' }, result });
    expect(filed.decision).toMatchObject({ decision: 'allow' });
    expect([body, model, verdict, filed].flatMap((a) => snakeKeys(a))).toEqual([]);
    // The result's own keys went out as they were.
    expect(sent.findLast((s) => s.path === '/inspect')?.body).toMatchObject({ result: { order_id: 'K-1' } });
    expect(problems).toEqual([]);
  });

  it('a per-call signal and timeout reach the request', async () => {
    const abort = new AbortController();
    abort.abort(new Error('stopped by the caller'));
    await expect(agent.tools({ signal: abort.signal })).rejects.toThrow('stopped by the caller');
    await expect(agent.approvals.list({}, { signal: abort.signal })).rejects.toThrow('stopped by the caller');
    const slow: Fetch = (_u, init) =>
      new Promise((_resolve, reject) =>
        init.signal.addEventListener('abort', () => reject(new Error('aborted')), { once: true }),
      );
    const hanging = createClient({ url, token: SUPPORT, fetch: slow, timeoutMs: 60_000 });
    await expect(hanging.tools({ timeoutMs: 1.5 })).rejects.toThrow(/timeoutMs/);
    expect(() => createClient({ url, token: SUPPORT, timeoutMs: -1 })).toThrow(/timeoutMs/);
    await expect(hanging.tools({ timeoutMs: 50 })).rejects.toMatchObject({
      name: 'GatehouseError',
      code: 'unreachable',
      message: expect.stringContaining('50 ms'),
    });
  });
});

describe("decisions() and budgets(): every filter sent is valid, the answers are in the client's names", () => {
  let db: TestDatabase;
  let t: TestApp;
  const sent: Sent[] = [];
  const problems: string[] = [];
  let agent: GatehouseClient;
  let auditor: GatehouseClient;
  let admin: GatehouseClient;

  beforeAll(async () => {
    db = await createTestDatabase();
    t = await createTestApp({
      policyDir: 'test/cases/budgets',
      env: null,
      database: db,
      logArgs: true,
      decisionStore: { sql: createSql(db.url, { max: 2 }) },
    });
    const url = `http://127.0.0.1:${await listenLoopback(t.app)}`;
    const client = (tok: string) => createClient({ url, token: tok, fetch: checkedFetch(sent, problems) });
    agent = client(agentToken('agent-lists', { team: 'support', agent: 'bot' }));
    auditor = client(token({ sub: 'auditor-1', team: 'audit', roles: ['auditor'] }));
    admin = client(adminToken());
  });
  afterAll(async () => {
    await t?.close();
    await t?.ctx.decisionStore?.sql.end();
    await db?.drop();
  });

  it('decisions(): every filter and the cursor reach the route; records come back camelCase, data as recorded', async () => {
    const since = new Date(Date.now() - 60_000).toISOString();
    const run = { id: 'run-lists', steps: [{ tool: 'lookup_order', decision: 'allow' as const, approvalId: 'a-1' }] };
    for (const order of ['L-1', 'L-2', 'L-3'])
      await agent.decide({ tool: 'refund', args: { order, amount: 10 }, context: { tenant_id: 'acme' }, run });
    await agent.decide({ tool: 'wipe_orders', args: {} });
    await t.writer!.flush();
    const until = new Date(Date.now() + 60_000).toISOString();

    const page = await auditor.decisions({
      tool: 'refund',
      decision: 'allow',
      user: 'agent-lists',
      since,
      until,
      limit: 2,
    });
    expect(page.items).toHaveLength(2);
    expect(page.items[0]).toMatchObject({
      tool: 'refund',
      decision: 'allow',
      rule: 'refunds',
      user: 'agent-lists',
      team: 'support',
      agent: 'bot',
      runId: 'run-lists',
      args: { order: 'L-3', amount: 10 },
      context: { tenant_id: 'acme' },
    });
    expect(typeof page.items[0]!.decisionId).toBe('string');
    // The run is data as recorded: the wire's names inside it.
    expect(page.items[0]!.run).toMatchObject({ steps: [{ approval_id: 'a-1' }] });
    expect(page.nextCursor).not.toBeNull();
    const rest = await auditor.decisions({ tool: 'refund', user: 'agent-lists', limit: 2, cursor: page.nextCursor! });
    expect(rest.items.map((r) => (r.args as { order: string }).order)).toEqual(['L-1']);
    expect(rest.nextCursor).toBeNull();
    const denied = await admin.decisions({ decision: 'deny', user: 'agent-lists' });
    expect(denied.items.map((r) => r.tool)).toEqual(['wipe_orders']);

    const DATA = new Set(['args', 'claims', 'context', 'run']);
    const named = (v: unknown, path = ''): string[] =>
      Array.isArray(v)
        ? v.flatMap((x, i) => named(x, `${path}[${i}]`))
        : v === null || typeof v !== 'object'
          ? []
          : Object.entries(v).flatMap(([k, x]) => [`${path}.${k}`, ...(DATA.has(k) ? [] : named(x, `${path}.${k}`))]);
    expect([page, rest, denied].flatMap((p) => named(p)).filter((k) => k.split('.').at(-1)!.includes('_'))).toEqual([]);
    const query = sent.find((s) => s.path === '/decisions')?.query;
    expect(query).toEqual({ tool: 'refund', decision: 'allow', user: 'agent-lists', since, until, limit: '2' });
    expect(problems).toEqual([]);
  });

  it('decisions(): only for auditors and admins', async () => {
    await expect(agent.decisions()).rejects.toMatchObject({ name: 'GatehouseError', status: 403 });
  });

  it("budgets(): the caller's limits and counters in its names; an admin's `limit` caps the counters per limit", async () => {
    await agent.decide({ tool: 'refund', args: { order: 'B-1', amount: 250 } });
    const mine = await agent.budgets();
    expect(mine.env).toBeNull();
    const perUser = mine.limits.find((l) => l.id === 'refunds-per-user');
    expect(perUser).toMatchObject({
      type: 'budget',
      policy: 'budgets',
      scope: 'user',
      onExceed: 'require_approval',
      counts: 'sum',
      sum: 'amount',
      max: 1000,
      per: 'day',
      tools: ['refund'],
      counters: [{ for: { user: 'agent-lists' }, counted: expect.any(Number) }],
    });
    expect(typeof perUser!.counters[0]!.windowStart).toBe('string');
    expect(mine.limits.find((l) => l.id === 'model-spend')).toMatchObject({ counts: 'usd', maxUsd: 20 });
    expect(mine.limits.find((l) => l.id === 'email-rate')).toMatchObject({ type: 'rate_limit', calls: 10, per: 60 });

    await createClient({
      url: `http://127.0.0.1:${(t.app.server.address() as { port: number }).port}`,
      token: agentToken('agent-other', { team: 'support', agent: 'bot' }),
    }).decide({ tool: 'refund', args: { order: 'B-2', amount: 5 } });
    const all = await admin.budgets({ limit: 1 });
    const everyone = all.limits.find((l) => l.id === 'refunds-per-user')!;
    expect(everyone.counters).toHaveLength(1);
    expect(everyone.more).toBe(true);
    expect(sent.findLast((s) => s.path === '/budgets')?.query).toEqual({ limit: '1' });
    expect(snakeKeys(mine)).toEqual([]);
    expect(snakeKeys(all)).toEqual([]);
    expect(problems).toEqual([]);
  });

  it('an answer that is not the list asked for is a GatehouseError, never an empty list', async () => {
    const notAList: Fetch = async () => ({
      status: 200,
      headers: new Headers({ 'content-type': 'application/json' }),
      text: async () => '{"items": null, "limits": {}}',
    });
    const fooled = createClient({ url: 'http://127.0.0.1:1', token: 't', fetch: notAList });
    await expect(fooled.decisions()).rejects.toMatchObject({ name: 'GatehouseError', code: 'bad_answer' });
    await expect(fooled.budgets()).rejects.toMatchObject({ name: 'GatehouseError', code: 'bad_answer' });
  });

  it('a per-call signal reaches both requests', async () => {
    const abort = new AbortController();
    abort.abort(new Error('stopped by the caller'));
    await expect(auditor.decisions({}, { signal: abort.signal })).rejects.toThrow('stopped by the caller');
    await expect(agent.budgets({}, { signal: abort.signal })).rejects.toThrow('stopped by the caller');
  });
});
