// openapi.yaml against the code: (a) the document is a sound OpenAPI 3.1 document that lists exactly
// the app's routes; (b) its request schemas accept and refuse the same bodies and queries as the
// routes; (c) every response of a long series of real calls (every route, every documented status)
// validates against it. A change of the code that the document does not follow fails here.
import { randomUUID } from 'node:crypto';
import { copyFile, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { LIMITS } from '../../src/approvals/approval.js';
import { WaitLimitError } from '../../src/approvals/notify.js';
import { OutcomeUnknownError, StoreUnavailableError } from '../../src/db/errors.js';
import { ERRORS } from '../../src/http/errors.js';
import { SESSION_ROUTES } from '../../src/http/session.js';
import { createJwksKeys } from '../../src/http/jwks.js';
import { filingBodySchema } from '../../src/http/routes/approvals.js';
import { decideBodySchema } from '../../src/http/routes/decide.js';
import { inspectBodySchema } from '../../src/http/routes/inspect.js';
import { createStrictAjv } from '../../src/policy/ajv.js';
import { explain } from '../../src/policy/decide.js';
import { buildPolicySet } from '../../src/policy/load.js';
import type { PolicySet } from '../../src/policy/model.js';
import { TOOL_NAME_PATTERN } from '../../src/policy/request.js';
import {
  adminToken,
  agentToken,
  approverToken,
  bearer,
  createTestApp,
  post,
  signJwt,
  token,
  type TestApp,
} from '../helpers/app.js';
import { createTestDatabase } from '../helpers/db.js';
import { listenLoopback } from '../helpers/http.js';
import { startJwksServer } from '../helpers/jwks.js';
import {
  assertMatchesOpenApi,
  assertResponseMatchesOpenApi,
  compileDocumentSchema,
  createOpenApiAjv,
  deref,
  findOperation,
  HTTP_METHODS,
  openApi,
  openApiOperations,
  openApiText,
  parameterObjectSchema,
  parametersFor,
  requestSchemaFor,
  requestValidatorFor,
  resolvePointer,
  type JsonSchema,
  type MediaTypeObject,
  type ResponseObject,
} from '../helpers/openapi.js';

// biome-ignore lint/suspicious/noExplicitAny: response bodies are checked against openapi.yaml at run time, then read freely
type Body = any;

const OPEN_ROUTES = [
  '/',
  '/healthz',
  '/readyz',
  '/metrics',
  '/openapi.yaml',
  '/ui',
  '/ui/money.js',
  '/ui/card.js',
  '/ui/edit.js',
  '/ui/page.js',
  '/ui/page.css',
  '/ui/session.js',
  '/auth/config',
  '/auth/login',
  '/auth/callback',
];
/** Sign-in's routes: their responses are checked against this document by test/http/signin.test.ts, with a real provider. */
const isSigninRoute = (path: string): boolean => path.startsWith('/auth/');
/** The routes the session cookie authenticates instead of a bearer token (src/http/session.ts), as openapi paths. */
const SESSION_OPERATIONS = new Set([...SESSION_ROUTES].map((r) => r.toLowerCase().replace(/:([a-z_]+)/g, '{$1}')));
/** The only error statuses whose body is not problem+json. */
const NON_PROBLEM_ERRORS = [
  'post /decide 403 application/json', // deny, abort, require_approval
  'post /explain 403 application/json',
  'post /inspect 403 application/json', // withheld, or held for review
  'post /approvals 409 application/json', // the decision that needs no approval
  'get /readyz 503 application/json', // a readiness report
];
const SUPPORT = { sub: 'agent-7', team: 'support', agent: 'billing-bot' };
const REFUND = {
  tool: 'refund',
  args: { order: 'A1', amount: 120, note: 'customer asked twice' },
  run: { id: 'run-7', steps: [{ tool: 'lookup_order', decision: 'allow' }] },
};
const supportToken = (sub = SUPPORT.sub): string => token({ ...SUPPORT, sub });
/** The same caller holding a policy reader role, for /explain and /policies (no rule selects roles). */
const supportReaderToken = (): string => token({ ...SUPPORT, roles: ['approver'] });

/** Every value in the document, with its JSON pointer. */
function* walk(node: unknown, pointer = ''): Generator<[string, unknown]> {
  yield [pointer, node];
  if (node !== null && typeof node === 'object') {
    for (const [k, v] of Object.entries(node))
      yield* walk(v, `${pointer}/${k.replace(/~/g, '~0').replace(/\//g, '~1')}`);
  }
}

/** Each media type object of the document (operations and component responses), with where it is. */
function mediaTypes(): { where: string; media: MediaTypeObject }[] {
  const out: { where: string; media: MediaTypeObject }[] = [];
  for (const { path, method, operation } of openApiOperations()) {
    for (const [mt, media] of Object.entries(operation.requestBody?.content ?? {}))
      out.push({ where: `${method} ${path} request ${mt}`, media });
    for (const [status, r] of Object.entries(operation.responses ?? {})) {
      if (r.$ref) continue; // checked once below, as a component
      for (const [mt, media] of Object.entries(r.content ?? {}))
        out.push({ where: `${method} ${path} ${status} ${mt}`, media });
    }
  }
  for (const [name, r] of Object.entries(openApi.components['responses'] as Record<string, ResponseObject>)) {
    for (const [mt, media] of Object.entries(r.content ?? {}))
      out.push({ where: `components/responses/${name} ${mt}`, media });
  }
  return out;
}

/** A schema with every $ref inlined and annotations dropped, to compare with the code's schema objects. */
function inlined(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(inlined);
  if (schema === null || typeof schema !== 'object') return schema;
  const s = schema as Record<string, unknown>;
  if (typeof s['$ref'] === 'string') return inlined(resolvePointer(s['$ref'].replace(/^openapi#/, '#')));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(s)) {
    if (k === 'description' || k === 'examples' || k === 'title' || k === 'default') continue;
    out[k] =
      k === 'properties'
        ? Object.fromEntries(Object.entries(v as object).map(([p, ps]) => [p, inlined(ps)]))
        : inlined(v);
  }
  return out;
}

/** "METHOD /path" for every route the app serves (HEAD excluded: Fastify adds it for every GET). */
function appRoutes(app: FastifyInstance): string[] {
  const routes: string[] = [];
  const stack: string[] = [];
  for (const line of app.printRoutes({ commonPrefix: false }).split('\n')) {
    const m = /^([│ ]*)[├└]── (\S+)(?: \(([^)]*)\))?/.exec(line);
    if (!m) continue;
    const depth = m[1]!.length / 4;
    stack.length = depth;
    stack.push(m[2]!);
    const path = stack.join('').replace(/:([A-Za-z_]+)/g, '{$1}');
    for (const method of (m[3] ?? '')
      .split(',')
      .map((x) => x.trim())
      .filter((x) => x !== '' && x !== 'HEAD'))
      routes.push(`${method} ${path}`);
  }
  return routes.sort();
}

const documentedRoutes = (): string[] =>
  openApiOperations()
    .map((o) => `${o.method.toUpperCase()} ${o.path}`)
    .sort();

let db: TestApp;
let plain: TestApp;
beforeAll(async () => {
  // With sign-in on, so that its routes are served (nothing here reaches the provider: signin.test.ts does).
  const signin = {
    oidc: {
      issuer: 'http://127.0.0.1:9',
      clientId: 'gatehouse',
      clientSecret: 'secret',
      scopes: 'openid',
      rolesClaim: 'roles',
    },
    publicUrl: 'https://gatehouse.example.com',
    sessionSecret: 'session-secret-for-tests-0123456789abcdef',
    sessionTtlMs: 3_600_000,
    claims: { team: 'team', agent: 'agent', roles: 'roles' },
  };
  [db, plain] = await Promise.all([createTestApp({ database: true, signin }), createTestApp()]);
});
afterAll(async () => {
  await Promise.all([db?.close(), plain?.close()]);
});

// ---- (a) the document ------------------------------------------------------------------------------

describe('openapi.yaml is a sound OpenAPI 3.1 document', () => {
  it('parses as OpenAPI 3.1.0 with info, paths, components and the bearer JWT scheme', () => {
    expect(openApi.openapi).toBe('3.1.0');
    expect(Object.keys(openApi.paths).length).toBeGreaterThanOrEqual(11);
    expect(openApi.components['securitySchemes']).toEqual({
      bearerAuth: expect.objectContaining({ type: 'http', scheme: 'bearer', bearerFormat: 'JWT' }),
      sessionCookie: expect.objectContaining({ type: 'apiKey', in: 'cookie', name: '__Host-gatehouse-session' }),
    });
    expect(openApi.security).toEqual([{ bearerAuth: [] }]);
    for (const name of [
      'Decision',
      'DecisionResponse',
      'ApprovalDescriptor',
      'Approval',
      'ApprovalList',
      'Problem',
      'Trace',
      'FileTrace',
      'RuleTrace',
      'GuardTrace',
      'DecideRequest',
      'RunView',
      'ToolsResponse',
      'ToolStatus',
    ]) {
      expect(openApi.components['schemas'], name).toHaveProperty(name);
    }
  });

  it('every $ref resolves inside the document', () => {
    const refs = [...walk(openApi)]
      .filter(([p, v]) => p.endsWith('/$ref') && typeof v === 'string')
      .map(([p, v]) => [p, v as string]);
    expect(refs.length).toBeGreaterThan(100);
    for (const [where, ref] of refs) expect(() => resolvePointer(ref!), `${where}: ${ref}`).not.toThrow();
  });

  it('every component is used', () => {
    const refs = new Set([...walk(openApi)].filter(([p]) => p.endsWith('/$ref')).map(([, v]) => v as string));
    for (const kind of ['schemas', 'responses', 'parameters', 'headers', 'examples']) {
      for (const name of Object.keys(openApi.components[kind] ?? {})) {
        expect(refs.has(`#/components/${kind}/${name}`), `#/components/${kind}/${name} is never referenced`).toBe(true);
      }
    }
  });

  it('every operation has a unique operationId, a summary and responses, each with a description', () => {
    const ids = new Set<string>();
    for (const { path, method, operation } of openApiOperations()) {
      const where = `${method} ${path}`;
      expect(operation.operationId, where).toMatch(/^[a-z][A-Za-z]+$/);
      expect(ids.has(operation.operationId!), `${where}: duplicate operationId`).toBe(false);
      ids.add(operation.operationId!);
      expect((operation as { summary?: string }).summary, where).toBeTruthy();
      const responses = Object.entries(operation.responses ?? {});
      expect(responses.length, where).toBeGreaterThan(0);
      for (const [status, r] of responses) {
        expect(status, where).toMatch(/^[1-5][0-9][0-9]$/);
        expect(deref<ResponseObject>(r).description, `${where} ${status}`).toBeTruthy();
        for (const mt of Object.keys(deref<ResponseObject>(r).content ?? {})) {
          // Errors are problem+json, except decision bodies, readiness and the router's own refusals.
          if (Number(status) < 400 || mt === 'application/problem+json') continue;
          expect(NON_PROBLEM_ERRORS, `${where} ${status} ${mt}`).toContain(`${where} ${status} ${mt}`);
        }
      }
    }
  });

  it('path templates and path parameters agree', () => {
    for (const { path, method } of openApiOperations()) {
      const inTemplate = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]).sort();
      const declared = parametersFor(method, path.replace(/\{[^}]+\}/g, 'x')).filter((p) => p.in === 'path');
      expect(declared.map((p) => p.name).sort(), `${method} ${path}`).toEqual(inTemplate);
      for (const p of declared) expect(p.required, `${method} ${path} ${p.name}`).toBe(true);
    }
  });

  it('every operation needs the bearer token except the open routes', () => {
    for (const { path, method, operation } of openApiOperations()) {
      if (OPEN_ROUTES.includes(path)) expect(operation.security, `${method} ${path}`).toEqual([]);
      else if (isSigninRoute(path)) expect(operation.security, `${method} ${path}`).toEqual([{ sessionCookie: [] }]);
      else if (SESSION_OPERATIONS.has(`${method} ${path}`)) {
        expect(operation.security, `${method} ${path} takes the bearer token or the session`).toEqual([
          { bearerAuth: [] },
          { sessionCookie: [] },
        ]);
      } else {
        expect(operation.security, `${method} ${path} inherits the global bearer requirement`).toBeUndefined();
        expect(operation.responses?.['401'], `${method} ${path} documents 401`).toBeDefined();
      }
    }
  });

  it('every schema compiles under strict ajv (a misspelt keyword fails)', () => {
    for (const name of Object.keys(openApi.components['schemas'] as object)) {
      expect(() => compileDocumentSchema({ $ref: `#/components/schemas/${name}` }), name).not.toThrow();
    }
    for (const { where, media } of mediaTypes()) {
      if (media.schema) expect(() => compileDocumentSchema(media.schema!), where).not.toThrow();
    }
  });

  it('the Trace schema holds the traces of scoped files (in scope, out of scope, none answering) and confirm-only rules', () => {
    const enc = (text: string): Uint8Array => new TextEncoder().encode(text);
    const set = buildPolicySet([
      {
        path: 'a.yaml',
        bytes: enc(
          'policy: a\nscope: {tools: "t*", users: [u1, u2]}\ndefault: allow\nrules:\n  - {tools: t1, confirm: "amount > 5"}\n',
        ),
      },
      { path: 'b.yaml', bytes: enc('policy: b\nscope: {agents: bot}\ndefault: deny\n') },
    ]);
    const validate = compileDocumentSchema({ $ref: '#/components/schemas/Trace' });
    const who = { user: 'u1', team: null, agent: null, roles: [] };
    for (const [tool, caller] of [
      ['t1', who],
      ['t1', { ...who, agent: 'bot' }],
      ['x', who],
    ] as const) {
      const { trace } = explain(set, { tool, args: { amount: 9 } }, caller);
      expect(validate(trace), `${tool}: ${JSON.stringify(validate.errors)}`).toBe(true);
    }
    expect(explain(set, { tool: 't1', args: { amount: 9 } }, who).trace.files[0]!.rules[0]!.effect).toBe('confirm');
  });

  it('every example is valid against its schema', () => {
    let count = 0;
    for (const { where, media } of mediaTypes()) {
      for (const [name, ex] of Object.entries(media.examples ?? {})) {
        const validate = compileDocumentSchema(media.schema!);
        const value = deref<{ value: unknown }>(ex).value;
        expect(value, `${where} example ${name}`).toBeDefined();
        expect(validate(value), `${where} example ${name}: ${JSON.stringify(validate.errors)}`).toBe(true);
        count++;
      }
    }
    expect(count).toBeGreaterThan(20);
  });

  it('every request body and the main responses have examples', () => {
    for (const { path, method, operation } of openApiOperations()) {
      for (const [mt, media] of Object.entries(operation.requestBody?.content ?? {})) {
        expect(Object.keys(media.examples ?? {}).length, `${method} ${path} request ${mt}`).toBeGreaterThan(0);
      }
    }
    const examplesOf = (method: string, path: string, status: string): number =>
      Object.values(
        deref<ResponseObject>(findOperation(method, path).operation.responses![status]!).content ?? {},
      ).reduce((n, m) => n + Object.keys(m.examples ?? {}).length, 0);
    for (const [m, p, s] of [
      ['post', '/decide', '200'],
      ['post', '/decide', '403'],
      ['post', '/explain', '403'],
      ['post', '/approvals', '201'],
      ['get', '/approvals/x', '200'],
      ['post', '/approvals/x/grant', '200'],
      ['get', '/policies', '200'],
      ['get', '/tools', '200'],
    ] as const) {
      expect(examplesOf(m, p, s), `${m} ${p} ${s}`).toBeGreaterThan(0);
    }
  });

  it('the problem codes are the catalogue of src/http/errors.ts, each under its own status and type', () => {
    const codes = (resolvePointer('#/components/schemas/ProblemCode') as { enum: string[] }).enum;
    expect([...codes].sort()).toEqual(Object.keys(ERRORS).sort());
    // Every schema node that pins a problem's status must only allow codes of that status, and their types.
    let pinned = 0;
    for (const [where, node] of walk(openApi)) {
      const props = (node as { properties?: Record<string, { const?: unknown; enum?: unknown[] }> } | null)?.properties;
      if (!props?.['status']?.const || !props['code'] || !props['type']) continue;
      const status = props['status'].const;
      const allowed = (props['code'].enum ?? [props['code'].const]) as (keyof typeof ERRORS)[];
      for (const code of allowed) expect(ERRORS[code]?.status, `${where}: ${code}`).toBe(status);
      expect(props['type'].enum ?? [props['type'].const], where).toEqual(
        allowed.map((c) => `urn:gatehouse:problem:${c}`),
      );
      pinned++;
    }
    expect(pinned).toBeGreaterThanOrEqual(12);
  });

  it('documents exactly the routes the app serves', () => {
    const served = appRoutes(db.app);
    expect(served.length).toBeGreaterThanOrEqual(13);
    expect(documentedRoutes()).toEqual(served);
  });

  it('GET /openapi.yaml serves this very file', async () => {
    const res = await plain.app.inject({ method: 'GET', url: '/openapi.yaml' });
    expect(res.statusCode).toBe(200);
    expect(res.body).toBe(openApiText);
    assertResponseMatchesOpenApi('GET', '/openapi.yaml', res);
  });

  it('the helper refuses what the document does not say', () => {
    expect(() => assertMatchesOpenApi('GET', '/nowhere', 200, 'application/json', {})).toThrow(/no path matching/);
    expect(() => assertMatchesOpenApi('DELETE', '/approvals', 200, 'application/json', {})).toThrow(/no DELETE/);
    expect(() => assertMatchesOpenApi('GET', '/healthz', 404, 'application/json', {})).toThrow(/no 404 response/);
    expect(() => assertMatchesOpenApi('GET', '/healthz', 200, 'text/html', '<p>')).toThrow(/not documented/);
    expect(() => assertMatchesOpenApi('GET', '/healthz', 200, 'application/json', { status: 'ok', extra: 1 })).toThrow(
      /does not match/,
    );
    expect(() =>
      assertMatchesOpenApi(
        'POST',
        '/approvals/abc/grant',
        503,
        'application/problem+json',
        {
          type: 'urn:gatehouse:problem:unavailable',
          title: 'A dependency is unavailable',
          status: 503,
          detail: 'x',
          code: 'unavailable',
        },
        {},
      ),
    ).toThrow(/Retry-After/);
    expect(() => assertMatchesOpenApi('GET', '/approvals/abc', 200, 'application/json', { id: 'abc' })).toThrow(
      /does not match/,
    );
    const allow = deref<{ value: Body }>(
      (openApi.components['examples'] as Record<string, { value: Body }>)['AllowDecision']!,
    ).value;
    expect(() =>
      assertMatchesOpenApi('POST', '/decide', 200, 'application/json', allow, { 'x-content-type-options': 'nosniff' }),
    ).toThrow(/Cache-Control is missing/);
    expect(() =>
      assertMatchesOpenApi('POST', '/decide', 200, 'application/json', allow, {
        'cache-control': 'no-cache',
        'x-content-type-options': 'nosniff',
      }),
    ).toThrow(/Cache-Control/);
    expect(() =>
      assertMatchesOpenApi('POST', '/decide', 200, 'application/json', allow, {
        'cache-control': 'no-store',
        'x-content-type-options': 'nosniff',
      }),
    ).not.toThrow();
    expect(findOperation('GET', '/approvals?limit=5').path).toBe('/approvals');
    expect(findOperation('GET', '/approvals/0190c0de-0000-7000-8000-000000000000').params).toEqual({
      id: '0190c0de-0000-7000-8000-000000000000',
    });
  });
});

// ---- (b) request schemas: the document and the code accept and refuse the same ------------------------

interface Sample {
  name: string;
  body: unknown;
  valid: boolean;
  schemaOnly?: boolean;
}

const DECIDE_SAMPLES: Sample[] = [
  { name: 'tool only', body: { tool: 'refund' }, valid: true },
  { name: 'tool and args', body: { tool: 'refund', args: { order: 'A1', amount: 120 } }, valid: true },
  { name: 'the README example', body: REFUND, valid: true },
  { name: 'empty args and run', body: { tool: 'github__create_issue', args: {}, run: {} }, valid: true },
  {
    name: 'identity-named keys inside args are data',
    body: { tool: 'lookup_order', args: { user: 'u', team: 't', roles: [] } },
    valid: true,
  },
  {
    name: 'full run view',
    body: {
      tool: 'lookup_order',
      run: {
        id: 'r',
        steps: [
          { tool: 'lookup_order', decision: 'allow' },
          { tool: 'refund', decision: 'require_approval', approval_id: 'a1' },
        ],
        approvals: [{ id: 'a1', kind: 'refund_over_cap', status: 'granted' }],
      },
    },
    valid: true,
  },
  { name: 'tool of 128 characters', body: { tool: `a${'b'.repeat(127)}` }, valid: true },
  { name: 'tool with every allowed punctuation', body: { tool: '_mcp:server/tool.v1-2' }, valid: true },
  { name: 'approval_id of 64', body: { tool: 'refund', approval_id: '0'.repeat(64) }, valid: true },
  {
    name: 'run id of 256 and step tool of 256',
    body: { tool: 'refund', run: { id: 'r'.repeat(256), steps: [{ tool: 't'.repeat(256) }] } },
    valid: true,
  },
  { name: 'no tool', body: {}, valid: false },
  { name: 'empty tool', body: { tool: '' }, valid: false },
  { name: 'tool of 129', body: { tool: 'a'.repeat(129) }, valid: false },
  { name: 'tool starting with -', body: { tool: '-x' }, valid: false },
  { name: 'tool with a space', body: { tool: 'a b' }, valid: false },
  { name: 'tool with a non-ASCII letter', body: { tool: 'réfund' }, valid: false },
  { name: 'tool with a zero-width space', body: { tool: 'refund\u200b' }, valid: false },
  { name: 'tool with a newline', body: { tool: 'refund\n' }, valid: false },
  { name: 'tool with a .. path segment', body: { tool: 'lookup_/../wipe_orders' }, valid: false },
  { name: 'tool with a . path segment', body: { tool: 'a/./b' }, valid: false },
  { name: 'tool ending in a .. segment', body: { tool: 'a/..' }, valid: false },
  { name: 'tool ending in a . segment', body: { tool: 'a/.' }, valid: false },
  { name: 'tool with dots inside a segment', body: { tool: 'github.get_issue' }, valid: true },
  { name: 'tool with a version number', body: { tool: 'v1.2' }, valid: true },
  { name: 'tool with a segment starting with dots', body: { tool: 'a/..b/.c' }, valid: true },
  { name: 'tool a number', body: { tool: 1 }, valid: false },
  { name: 'args an array', body: { tool: 'refund', args: [] }, valid: false },
  { name: 'args null', body: { tool: 'refund', args: null }, valid: false },
  { name: 'args a string', body: { tool: 'refund', args: 'x' }, valid: false },
  { name: 'unknown field', body: { tool: 'refund', extra: 1 }, valid: false },
  { name: 'user in body', body: { tool: 'refund', user: 'u' }, valid: false },
  { name: 'sub in body', body: { tool: 'refund', sub: 'u' }, valid: false },
  { name: 'team in body', body: { tool: 'refund', team: 'support' }, valid: false },
  { name: 'agent in body', body: { tool: 'refund', agent: 'a' }, valid: false },
  { name: 'roles in body', body: { tool: 'refund', roles: ['approver'] }, valid: false },
  { name: 'run an array', body: { tool: 'refund', run: [] }, valid: false },
  { name: 'run with an unknown field', body: { tool: 'refund', run: { other: 1 } }, valid: false },
  { name: 'run id empty', body: { tool: 'refund', run: { id: '' } }, valid: false },
  { name: 'run id of 257', body: { tool: 'refund', run: { id: 'r'.repeat(257) } }, valid: false },
  { name: 'step without tool', body: { tool: 'refund', run: { steps: [{ decision: 'allow' }] } }, valid: false },
  {
    name: 'step with an unknown decision',
    body: { tool: 'refund', run: { steps: [{ tool: 'a', decision: 'maybe' }] } },
    valid: false,
  },
  {
    name: 'step with an unknown field',
    body: { tool: 'refund', run: { steps: [{ tool: 'a', extra: 1 }] } },
    valid: false,
  },
  { name: 'step tool of 257', body: { tool: 'refund', run: { steps: [{ tool: 't'.repeat(257) }] } }, valid: false },
  {
    name: 'step approval_id of 65',
    body: { tool: 'refund', run: { steps: [{ tool: 'a', approval_id: 'x'.repeat(65) }] } },
    valid: false,
  },
  { name: 'run approval without id', body: { tool: 'refund', run: { approvals: [{ kind: 'k' }] } }, valid: false },
  {
    name: 'run approval with an unknown status',
    body: { tool: 'refund', run: { approvals: [{ id: 'a', status: 'weird' }] } },
    valid: false,
  },
  {
    name: 'run approval kind of 65',
    body: { tool: 'refund', run: { approvals: [{ id: 'a', kind: 'k'.repeat(65) }] } },
    valid: false,
  },
  { name: 'empty approval_id', body: { tool: 'refund', approval_id: '' }, valid: false },
  { name: 'approval_id of 65', body: { tool: 'refund', approval_id: 'x'.repeat(65) }, valid: false },
  { name: 'approval_id a number', body: { tool: 'refund', approval_id: 5 }, valid: false },
  { name: 'an array body', body: [], valid: false },
  { name: 'a string body', body: 'refund', valid: false },
  { name: 'a null body', body: null, valid: false },
  {
    name: '10001 steps',
    body: { tool: 'refund', run: { steps: Array.from({ length: 10_001 }, () => ({ tool: 'a' })) } },
    valid: false,
    schemaOnly: true,
  },
  {
    name: '10000 steps',
    body: { tool: 'refund', run: { steps: Array.from({ length: 10_000 }, () => ({ tool: 'a' })) } },
    valid: true,
    schemaOnly: true,
  },
];

const withApprovalId = (s: Sample): boolean =>
  s.body !== null && typeof s.body === 'object' && !Array.isArray(s.body) && 'approval_id' in s.body;

describe('request schemas: openapi.yaml and the code agree', () => {
  it('DecideRequest is decideBodySchema, keyword for keyword', () => {
    expect(inlined(requestSchemaFor('post', '/decide'))).toEqual(decideBodySchema);
    const { approval_id: _omit, ...rest } = decideBodySchema.properties;
    expect(inlined(requestSchemaFor('post', '/approvals'))).toEqual(filingBodySchema);
    expect(filingBodySchema.properties).toEqual({
      kind: { type: 'string', enum: ['interrupted_side_effect'] },
      ...rest,
      stage: { const: 'result' },
      result: {},
    });
    expect(inlined(requestSchemaFor('post', '/explain'))).toEqual({ ...decideBodySchema, properties: rest });
    expect((resolvePointer('#/components/schemas/ToolName') as { pattern: string }).pattern).toBe(TOOL_NAME_PATTERN);
  });

  it('the limits the store enforces are the limits documented', () => {
    const grant = resolvePointer('#/components/schemas/GrantRequest') as {
      properties: { note: { maxLength: number } };
    };
    const deny = resolvePointer('#/components/schemas/DenyRequest') as {
      properties: { reason: { maxLength: number } };
    };
    expect(grant.properties.note.maxLength).toBe(LIMITS.note);
    expect(deny.properties.reason.maxLength).toBe(LIMITS.note);
    const limit = parametersFor('get', '/approvals').find((p) => p.name === 'limit')!;
    expect(limit.schema).toMatchObject({ minimum: 1, maximum: LIMITS.pageSize, default: 50 });
  });

  const codeDecide = createStrictAjv(false).compile(decideBodySchema);
  for (const s of DECIDE_SAMPLES) {
    it(`decide body, ${s.valid ? 'accepted' : 'refused'} by both: ${s.name}`, () => {
      expect(codeDecide(s.body)).toBe(s.valid);
      expect(requestValidatorFor('post', '/decide')(s.body)).toBe(s.valid);
      expect(requestValidatorFor('post', '/explain')(s.body)).toBe(s.valid && !withApprovalId(s));
      expect(requestValidatorFor('post', '/approvals')(s.body)).toBe(s.valid && !withApprovalId(s));
    });
  }

  // The routes themselves: 422 exactly where the document's schema refuses. (/decide with an
  // approval_id needs the database; /explain refuses approval_id in its handler, as documented.)
  it('POST /decide, /explain and /approvals refuse (422) exactly the bodies the document refuses', async () => {
    let checked = 0;
    for (const s of DECIDE_SAMPLES.filter((x) => !x.schemaOnly)) {
      for (const url of ['/decide', '/explain', '/approvals']) {
        const res = await post(db.app, url, s.body, url === '/explain' ? supportReaderToken() : supportToken());
        const docValid = requestValidatorFor('post', url)(s.body);
        expect(res.statusCode === 422, `${url} ${s.name}: ${res.statusCode} ${res.body.slice(0, 200)}`).toBe(!docValid);
        assertResponseMatchesOpenApi('POST', url, res);
        checked++;
      }
    }
    expect(checked).toBe(DECIDE_SAMPLES.filter((x) => !x.schemaOnly).length * 3);
  });

  const NOTE_SAMPLES = (field: 'note' | 'message' | 'reason'): Sample[] => [
    { name: 'no body', body: undefined, valid: true },
    { name: 'a null body', body: null, valid: true },
    { name: 'empty object', body: {}, valid: true },
    { name: `empty ${field}`, body: { [field]: '' }, valid: true },
    { name: `${field} of 2000`, body: { [field]: 'x'.repeat(2000) }, valid: true },
    { name: `${field} of 2000 astral code points`, body: { [field]: '\u{1F600}'.repeat(2000) }, valid: true },
    { name: `${field} of 2001`, body: { [field]: 'x'.repeat(2001) }, valid: false },
    { name: `${field} with U+0000`, body: { [field]: 'a\u0000b' }, valid: false },
    { name: `${field} a number`, body: { [field]: 1 }, valid: false },
    { name: `${field} null`, body: { [field]: null }, valid: false },
    { name: 'an unknown field', body: { [field]: 'x', extra: 1 }, valid: false },
    { name: 'an array', body: [], valid: false },
    { name: 'a string', body: 'ok', valid: false },
  ];
  // A grant has a note only; a denial a note, a message, and the older reason, in any combination.
  const EXTRA_SAMPLES: Record<'grant' | 'deny', Sample[]> = {
    grant: [
      { name: 'a message (denials only)', body: { note: 'x', message: 'y' }, valid: false },
      { name: 'a reason (denials only)', body: { reason: 'x' }, valid: false },
    ],
    deny: [
      { name: 'note and message', body: { note: 'for the record', message: 'for the agent' }, valid: true },
      { name: 'all three', body: { note: 'n', message: 'm', reason: 'r' }, valid: true },
    ],
  };

  for (const [verb, fields] of [
    ['grant', ['note']],
    ['deny', ['note', 'message', 'reason']],
  ] as const) {
    it(`POST /approvals/{id}/${verb} refuses (422) exactly the bodies the document refuses`, async () => {
      const validate = requestValidatorFor('post', `/approvals/x/${verb}`);
      for (const s of [...fields.flatMap((f) => NOTE_SAMPLES(f)), ...EXTRA_SAMPLES[verb]]) {
        const url = `/approvals/${randomUUID()}/${verb}`;
        const res =
          s.body === undefined
            ? await db.app.inject({ method: 'POST', url, headers: bearer(approverToken()) })
            : await post(db.app, url, s.body, approverToken());
        // Accepted: the body passes and the (unknown) approval is not found. Refused: 422.
        expect(res.statusCode, `${verb} ${s.name}: ${res.body.slice(0, 200)}`).toBe(s.valid ? 404 : 422);
        expect(s.body === undefined || validate(s.body), `${verb} ${s.name} in openapi.yaml`).toBe(s.valid);
        assertResponseMatchesOpenApi('POST', url, res);
      }
    });
  }

  const coercing = createOpenApiAjv({ coerceTypes: true });
  const queryObject = (qs: string): Record<string, string | string[]> => {
    const out: Record<string, string | string[]> = {};
    for (const [k, v] of new URLSearchParams(qs)) {
      const prev = out[k];
      out[k] = prev === undefined ? v : Array.isArray(prev) ? [...prev, v] : [prev, v];
    }
    return out;
  };

  it('GET /approvals refuses (400) exactly the query strings the document refuses', async () => {
    const validate = compileDocumentSchema(parameterObjectSchema('get', '/approvals', 'query'), 'list query', coercing);
    const samples: [string, boolean][] = [
      ['', true],
      ['status=pending', true],
      ['status=consumed', true],
      ['status=weird', false],
      ['status=pending&status=granted', false],
      ['limit=1', true],
      ['limit=200', true],
      ['limit=0', false],
      ['limit=201', false],
      ['limit=abc', false],
      ['limit=1.5', false],
      ['limit=', false],
      ['tool=refund', true],
      ['tool=', true],
      [`tool=${'t'.repeat(256)}`, true],
      [`tool=${'t'.repeat(257)}`, false],
      [`cursor=${'c'.repeat(513)}`, false],
      ['unknown=1', false],
      ['wait=5', false],
      ['kind=refund_over_cap', true],
      [`kind=${'k'.repeat(513)}`, false],
      ['requester=agent-7', true],
      [`requester=${'r'.repeat(513)}`, false],
      ['q=A1', true],
      ['q=', true],
      [`q=${'q'.repeat(200)}`, true],
      [`q=${'q'.repeat(201)}`, false],
      ['decided=true', true],
      ['decided=false', true],
      ['decided=yes', false],
      ['order=oldest', true],
      ['order=newest', true],
      ['order=random', false],
      ['count=true', true],
      ['count=1', false],
      ['status=denied&decided=true&order=oldest&count=true&q=x&kind=k&requester=r&tool=t', true],
    ];
    for (const [qs, valid] of samples) {
      const res = await db.app.inject({ method: 'GET', url: `/approvals?${qs}`, headers: bearer(agentToken()) });
      expect(res.statusCode, `?${qs}: ${res.body.slice(0, 200)}`).toBe(valid ? 200 : 400);
      expect(validate(queryObject(qs)), `?${qs} in openapi.yaml`).toBe(valid);
      assertResponseMatchesOpenApi('GET', `/approvals?${qs}`, res);
    }
  });

  it('GET /approvals/{id} refuses (400) exactly the ids and query strings the document refuses', async () => {
    const query = compileDocumentSchema(parameterObjectSchema('get', '/approvals/x', 'query'), 'get query', coercing);
    const path = compileDocumentSchema(parameterObjectSchema('get', '/approvals/x', 'path'), 'get path', coercing);
    const samples: [string, string, boolean][] = [
      [randomUUID(), '', true],
      [randomUUID(), 'wait=0', true],
      [randomUUID(), 'wait=60', true],
      [randomUUID(), 'wait=61', false],
      [randomUUID(), 'wait=-1', false],
      [randomUUID(), 'wait=abc', false],
      [randomUUID(), 'wait=1.5', false],
      [randomUUID(), 'x=1', false],
      ['x'.repeat(64), '', true],
      ['x'.repeat(65), '', false],
      ['not-a-uuid', 'wait=3', true],
    ];
    for (const [id, qs, valid] of samples) {
      const url = `/approvals/${id}?${qs}`;
      const res = await db.app.inject({ method: 'GET', url, headers: bearer(agentToken()) });
      expect(res.statusCode, `${url}: ${res.body.slice(0, 200)}`).toBe(valid ? 404 : 400);
      expect(query(queryObject(qs)) && path({ id }), `${url} in openapi.yaml`).toBe(valid);
      assertResponseMatchesOpenApi('GET', url, res);
    }
  });
});

// ---- (c) conformance: real calls, every response validated ------------------------------------------

const covered = new Set<string>();

interface Call {
  method?: string;
  url: string;
  token?: string | null;
  body?: unknown;
  payload?: string | Buffer;
  headers?: Record<string, string>;
}

function hasGet(url: string): boolean {
  try {
    findOperation('GET', url);
    return true;
  } catch {
    return false;
  }
}

/** Send a request, check its status, validate the response against openapi.yaml, return the body. */
async function call(t: TestApp, c: Call, status: number): Promise<Body> {
  // Without a body: GET where the document has one for the path, else POST (grant, deny, reload).
  const method = c.method ?? (c.body !== undefined || c.payload !== undefined || !hasGet(c.url) ? 'POST' : 'GET');
  const headers: Record<string, string> = { ...(c.token ? bearer(c.token) : {}) };
  let payload = c.payload;
  if (payload === undefined && c.body !== undefined) {
    payload = JSON.stringify(c.body);
    headers['content-type'] = 'application/json';
  }
  Object.assign(headers, c.headers);
  const res = await t.app.inject({
    method: method as 'GET',
    url: c.url,
    headers,
    ...(payload !== undefined ? { payload } : {}),
  });
  expect(res.statusCode, `${method} ${c.url}: ${res.body.slice(0, 400)}`).toBe(status);
  const body = assertResponseMatchesOpenApi(method, c.url, res);
  if (String(res.headers['content-type']).startsWith('application/problem+json')) {
    expect((body as Body).type).toBe(`urn:gatehouse:problem:${(body as Body).code}`);
    expect((body as Body).status).toBe(res.statusCode);
  }
  covered.add(`${method.toLowerCase()} ${findOperation(method, c.url).path} ${status}`);
  return body;
}

/** A policy set whose evaluation throws: decide() must fail closed. */
function brokenSet(real: PolicySet): PolicySet {
  return {
    ...real,
    plan: () => {
      throw new Error('boom');
    },
  };
}

describe('conformance: every response of the app matches openapi.yaml', () => {
  it('the open routes', async () => {
    expect((await call(plain, { url: '/' }, 200)).links).toMatchObject({ ui: '/ui', openapi: '/openapi.yaml' });
    expect(await call(db, { url: '/healthz' }, 200)).toEqual({ status: 'ok' });
    expect((await call(db, { url: '/readyz' }, 200)).database).toBe('ok');
    expect((await call(plain, { url: '/readyz' }, 503)).database).toBe('not_configured');
    const ping = vi.spyOn(db.ctx.approvals!, 'ping').mockResolvedValueOnce(false);
    expect((await call(db, { url: '/readyz' }, 503)).database).toBe('unavailable');
    ping.mockRestore();
    expect(await call(db, { url: '/metrics' }, 200)).toContain('gatehouse_policy_files');
    expect(await call(plain, { url: '/ui' }, 200)).toContain('<title>Gatehouse approvals</title>');
    expect(await call(plain, { url: '/ui/money.js' }, 200)).toContain('function formatMoney');
    expect(await call(plain, { url: '/ui/card.js' }, 200)).toContain('function cardView');
    expect(await call(plain, { url: '/ui/edit.js' }, 200)).toContain('function checkArgs');
    expect(await call(plain, { url: '/ui/page.js' }, 200)).toContain('textContent');
    expect(await call(plain, { url: '/ui/page.css' }, 200)).toContain('.approval');
    expect(await call(plain, { url: '/ui/session.js' }, 200)).toContain('gatehouseSession');
    expect(await call(plain, { url: '/auth/config' }, 200)).toEqual({ signin: null });
    expect(await call(db, { url: '/openapi.yaml' }, 200)).toBe(openApiText);
  });

  it('every secured operation answers 401 to a missing, malformed, expired, unsigned or mistyped token', async () => {
    const now = Math.floor(Date.now() / 1000);
    const bad: (string | null)[] = [
      null,
      'not-a-jwt',
      signJwt({ sub: 'a', exp: now - 3600 }),
      signJwt({ sub: 'a', exp: now + 3600 }, { alg: 'none' }),
      signJwt({ sub: 'a', exp: now + 3600 }, { key: 'another-secret-0123456789abcdef0123' }),
      signJwt({ sub: 'a', team: 5, exp: now + 3600 }),
      signJwt({ sub: 'a', roles: 'approver', exp: now + 3600 }),
      signJwt({ team: 'support', exp: now + 3600 }),
    ];
    let n = 0;
    for (const { path, method } of openApiOperations().filter((o) => !OPEN_ROUTES.includes(o.path))) {
      const url = path.replace('{id}', randomUUID());
      for (const tok of bad) {
        const res = await db.app.inject({
          method: method.toUpperCase() as 'GET',
          url,
          headers: tok === null ? {} : { authorization: tok === 'not-a-jwt' ? 'Basic dXNlcjpwYXNz' : `Bearer ${tok}` },
        });
        expect(res.statusCode, `${method} ${url}`).toBe(401);
        assertResponseMatchesOpenApi(method, url, res);
        covered.add(`${method} ${path} 401`);
        n++;
      }
    }
    expect(n).toBe(21 * bad.length);
  });

  it('with a JWKS not fetched yet: every secured operation answers 503 with Retry-After; /readyz says jwt_keys not_loaded', async () => {
    const server = await startJwksServer();
    const url = server.url;
    await server.close(); // nothing listens there: the first fetch fails
    const keys = createJwksKeys({ url, refreshMs: 3_600_000, retryMs: 3_600_000 });
    const pending = await createTestApp({ jwks: keys });
    try {
      expect(await keys.start()).toBe(false);
      expect(await call(pending, { url: '/readyz' }, 503)).toMatchObject({
        jwt_keys: 'not_loaded',
        database: 'not_configured',
      });
      for (const { path, method } of openApiOperations().filter(
        (o) => !OPEN_ROUTES.includes(o.path) && !isSigninRoute(o.path),
      )) {
        const target = path.replace('{id}', randomUUID());
        const res = await pending.app.inject({
          method: method.toUpperCase() as 'GET',
          url: target,
          headers: bearer(supportToken()),
        });
        expect(res.statusCode, `${method} ${target}`).toBe(503);
        expect(res.headers['retry-after']).toBe('2');
        assertResponseMatchesOpenApi(method, target, res);
        covered.add(`${method} ${path} 503`);
      }
    } finally {
      keys.close();
      await pending.close();
    }
  });

  it('POST /decide: the four decisions, redacted reasons, strict bodies', async () => {
    const lookup = await call(
      db,
      { url: '/decide', token: supportToken(), body: { tool: 'lookup_order', args: { order: 'A1' } } },
      200,
    );
    expect(lookup.decision).toBe('allow');
    expect(lookup).not.toHaveProperty('approval');

    const example = deref<{ value: Body }>(
      (openApi.components['examples'] as Record<string, { value: Body }>)['RequireApprovalDecision']!,
    ).value;
    const refund = await call(db, { url: '/decide', token: supportToken(), body: REFUND }, 403);
    expect(refund).toMatchObject({
      decision: 'require_approval',
      rule: example.rule,
      reason: example.reason,
      message: example.message,
      approval: example.approval,
    });

    expect(
      (
        await call(
          db,
          { url: '/decide', token: supportToken(), body: { tool: 'refund', args: { order: 'A1', amount: 80 } } },
          200,
        )
      ).decision,
    ).toBe('allow');
    expect(
      (
        await call(
          db,
          {
            url: '/decide',
            token: token({ team: 'sales' }),
            body: { tool: 'refund', args: { order: 'A1', amount: 80 } },
          },
          403,
        )
      ).decision,
    ).toBe('deny');
    const schema = await call(
      db,
      { url: '/decide', token: supportToken(), body: { tool: 'refund', args: { order: 'A1' } } },
      403,
    );
    expect(schema).toMatchObject({ decision: 'deny', rule: 'payments#tools.refund.schema' });
    expect(schema.message).toContain('Correct the arguments');
    expect(
      (await call(db, { url: '/decide', token: supportToken(), body: { tool: 'wipe_orders' } }, 403)).decision,
    ).toBe('abort');
    const steps = Array.from({ length: 200 }, () => ({ tool: 'lookup_order', decision: 'allow' }));
    expect(
      (await call(db, { url: '/decide', token: supportToken(), body: { tool: 'lookup_order', run: { steps } } }, 403))
        .rule,
    ).toBe('payments#limits.max_calls');
    const pii = await call(
      db,
      {
        url: '/decide',
        token: supportToken(),
        body: { tool: 'send_note', args: { text: 'write to jane@example.com' } },
      },
      403,
    );
    expect(pii).toMatchObject({
      decision: 'require_approval',
      approval: { kind: 'pii', capability: { tool: 'send_note' } },
    });
    expect(`${pii.reason} ${pii.message}`).not.toContain('jane@example.com');
    expect(
      (await call(db, { url: '/decide', token: supportToken(), body: { tool: 'no_such_tool' } }, 403)).decision,
    ).toBe('deny');

    // Every request example of the document, through the real route.
    for (const [name, ex] of Object.entries(
      findOperation('post', '/decide').operation.requestBody!.content!['application/json']!.examples!,
    )) {
      const body = await call(
        db,
        { url: '/decide', token: supportToken(), body: deref<{ value: unknown }>(ex).value },
        name === 'lookup' ? 200 : 403,
      );
      expect(body.decision, name).toBe(name === 'lookup' ? 'allow' : 'require_approval');
    }

    const bad = await call(
      db,
      {
        url: '/decide',
        token: supportToken(),
        payload: '{"tool":"a","tool":"b"}',
        headers: { 'content-type': 'application/json' },
      },
      400,
    );
    expect(bad.code).toBe('bad_json');
    await call(
      db,
      {
        url: '/decide',
        token: supportToken(),
        payload: '{"tool":"a"} x',
        headers: { 'content-type': 'application/json' },
      },
      400,
    );
    await call(
      db,
      {
        url: '/decide',
        token: supportToken(),
        payload: '{"tool":"\\ud800"}',
        headers: { 'content-type': 'application/json' },
      },
      400,
    );
    await call(
      db,
      {
        url: '/decide',
        token: supportToken(),
        payload: Buffer.from([0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d]),
        headers: { 'content-type': 'application/json' },
      },
      400,
    );
    await call(
      db,
      {
        url: '/decide',
        token: supportToken(),
        payload: '{"tool":"refund"}',
        headers: { 'content-type': 'text/plain' },
      },
      415,
    );
    await call(
      db,
      {
        url: '/decide',
        token: supportToken(),
        payload: '{"tool":"refund"}',
        headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
      },
      415,
    );
    await call(
      db,
      { url: '/decide', token: supportToken(), body: { tool: 'refund', args: { blob: 'x'.repeat(1_100_000) } } },
      413,
    );
    expect(
      (await call(db, { url: '/decide', token: supportToken(), body: { tool: 'refund', team: 'support' } }, 422)).code,
    ).toBe('identity_in_body');
    expect(
      (await call(db, { url: '/decide', token: supportToken(), body: { tool: 'réfund' } }, 422)).errors[0].pointer,
    ).toBe('/tool');
  });

  it('POST /decide and /explain fail closed: 500 with decision deny', async () => {
    const broken = brokenSet(db.ctx.policies.current());
    const spy = vi.spyOn(db.ctx.policies, 'current').mockReturnValue(broken);
    try {
      for (const url of ['/decide', '/explain', '/approvals']) {
        const body = await call(
          db,
          {
            url,
            token: url === '/explain' ? supportReaderToken() : supportToken(),
            body: { tool: 'refund', args: { order: 'A1', amount: 120 } },
          },
          500,
        );
        expect(body).toMatchObject({ code: 'internal', decision: 'deny' });
        expect(JSON.stringify(body)).not.toContain('boom');
      }
    } finally {
      spy.mockRestore();
    }
  });

  it('POST /inspect: allow, redact, withhold, hold for review, strict bodies, fail closed, 503 to redeem without a database', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'gatehouse-openapi-inspect-'));
    await writeFile(
      join(dir, 'guards.yaml'),
      `policy: guards
tools:
  read_file: {kind: read_only}
  crm_lookup: {kind: read_only}
guards:
  - {guard: secrets, tools: [read_file], on: [result]}
  - {guard: pii, tools: [crm_lookup], on: [result], action: require_approval}
  - guard: pattern
    on: [llm_request]
    action: redact
    patterns: [{name: ticket, regex: "TCK-[0-9]{4,8}"}]
`,
    );
    const t = await createTestApp({ policyDir: dir });
    try {
      const example = (name: string): Body =>
        deref<{ value: Body }>(
          findOperation('post', '/inspect').operation.requestBody!.content!['application/json']!.examples![name]!,
        ).value;
      const clean = await call(t, { url: '/inspect', token: supportToken(), body: example('llmRequest') }, 200);
      expect(clean).toMatchObject({ decision: 'allow', stage: 'llm_request', rule: 'guards#guards.2' });
      expect(clean.redacted.messages[0].content).toBe('my ticket [REDACTED:ticket] is still open');
      const none = await call(
        t,
        { url: '/inspect', token: supportToken(), body: { stage: 'llm_response', content: 'fine' } },
        200,
      );
      expect(none).not.toHaveProperty('redacted');
      expect((await call(t, { url: '/inspect', token: supportToken(), body: example('result') }, 403)).decision).toBe(
        'deny',
      );
      const { approval_id: _cited, ...held } = example('redeem');
      const review = await call(t, { url: '/inspect', token: supportToken(), body: held }, 403);
      expect(review).toMatchObject({ decision: 'require_approval', next: { action: 'file' } });
      // Redeeming needs the approval database.
      await call(t, { url: '/inspect', token: supportToken(), body: example('redeem') }, 503);
      await call(
        t,
        {
          url: '/inspect',
          token: supportToken(),
          payload: '{"stage":',
          headers: { 'content-type': 'application/json' },
        },
        400,
      );
      await call(
        t,
        { url: '/inspect', token: supportToken(), payload: '{}', headers: { 'content-type': 'text/plain' } },
        415,
      );
      await call(
        t,
        { url: '/inspect', token: supportToken(), body: { stage: 'llm_request', content: 'x'.repeat(1_100_000) } },
        413,
      );
      expect(
        (
          await call(
            t,
            {
              url: '/inspect',
              token: supportToken(),
              body: { stage: 'result', tool: 'read_file', result: 1, content: 1 },
            },
            422,
          )
        ).errors[0].pointer,
      ).toBe('/content');
      // With the approval database: a keyed redeem, 429 past IDEMPOTENCY_MAX_KEYS, 504 when the
      // consume's outcome could not be learned.
      const keyed = await createTestApp({
        policyDir: dir,
        database: db.db!,
        keyCaps: { maxKeys: 1, maxBytes: 1_048_576 },
      });
      try {
        const review = async (n: number): Promise<Body> => {
          const body = { ...held, args: { customer: `K-${n}` } };
          const filed = await call(keyed, { url: '/approvals', token: supportToken('agent-keyed'), body }, 201);
          await call(keyed, { url: `/approvals/${filed.id}/grant`, token: approverToken() }, 200);
          return { ...body, approval_id: filed.id };
        };
        const key = (k: string) => ({ 'idempotency-key': k });
        const first = await review(1);
        const got = await call(
          keyed,
          { url: '/inspect', token: supportToken('agent-keyed'), body: first, headers: key('k1') },
          200,
        );
        expect(got.approval.status).toBe('consumed');
        const retried = await call(
          keyed,
          { url: '/inspect', token: supportToken('agent-keyed'), body: first, headers: key('k1') },
          200,
        );
        expect(retried.decision_id).toBe(got.decision_id);
        const second = await review(2);
        expect(
          (
            await call(
              keyed,
              { url: '/inspect', token: supportToken('agent-keyed'), body: second, headers: key('k2') },
              429,
            )
          ).code,
        ).toBe('too_many_idempotency_keys');
        const consume = vi
          .spyOn(keyed.ctx.approvals!.store, 'consume')
          .mockRejectedValueOnce(new OutcomeUnknownError());
        try {
          await call(keyed, { url: '/inspect', token: supportToken('agent-keyed'), body: second }, 504);
        } finally {
          consume.mockRestore();
        }
      } finally {
        await keyed.close();
      }
      const spy = vi.spyOn(t.ctx.policies, 'current').mockReturnValue(brokenSet(t.ctx.policies.current()));
      try {
        const body = await call(t, { url: '/inspect', token: supportToken(), body: example('result') }, 500);
        expect(body).toMatchObject({ code: 'internal', decision: 'deny' });
        expect(JSON.stringify(body)).not.toContain('ghp_');
      } finally {
        spy.mockRestore();
      }
    } finally {
      await t.close();
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('InspectRequest is inspectBodySchema, keyword for keyword', () => {
    expect(inlined(requestSchemaFor('post', '/inspect'))).toEqual(inspectBodySchema);
  });

  it('POST /explain needs a policy reader role: an agent gets 403 problem+json, before its body is read', async () => {
    const example = deref<{ value: Body }>(
      (openApi.components['examples'] as Record<string, { value: Body }>)['ReaderRoleForbidden']!,
    ).value;
    expect(await call(db, { url: '/explain', token: supportToken(), body: REFUND }, 403)).toEqual(example);
    expect(
      (
        await call(
          db,
          { url: '/explain', token: agentToken(), payload: '[', headers: { 'content-type': 'application/json' } },
          403,
        )
      ).code,
    ).toBe('forbidden');
    expect((await call(db, { url: '/explain', token: adminToken(), body: REFUND }, 403)).trace).toBeDefined();
  });

  it('POST /explain: the decision with its trace', async () => {
    const refund = await call(db, { url: '/explain', token: supportReaderToken(), body: REFUND }, 403);
    expect(refund.trace.files[0].rules.map((r: Body) => r.id)).toContain('refund-support');
    const allow = await call(db, { url: '/explain', token: supportReaderToken(), body: { tool: 'lookup_order' } }, 200);
    expect(allow.trace.catalogue).toEqual({ entry: 'lookup_*', policy: 'payments', kind: 'read_only', tags: [] });
    const pii = await call(
      db,
      {
        url: '/explain',
        token: supportReaderToken(),
        body: { tool: 'send_note', args: { to: { email: 'jane@example.com' } } },
      },
      403,
    );
    expect(pii.trace.files[0].guards[0].finding).toMatchObject({ kind: 'email' });
    const failed = await call(
      db,
      { url: '/explain', token: supportReaderToken(), body: { tool: 'refund', args: {} } },
      403,
    );
    expect(failed.trace).toMatchObject({ schema: 'failed', files: [] });
    const vendor = await call(
      db,
      {
        url: '/explain',
        token: supportReaderToken(),
        body: { tool: 'dispatch_vendor', args: { unitId: 'u', estimateUsd: 2000 } },
      },
      403,
    );
    expect(vendor.rule).toBe('vendor-hard-cap');
    const refused = await call(
      db,
      { url: '/explain', token: supportReaderToken(), body: { ...REFUND, approval_id: randomUUID() } },
      422,
    );
    expect(refused.errors).toEqual([{ pointer: '/approval_id', message: 'unknown field' }]);
    await call(
      db,
      { url: '/explain', token: supportReaderToken(), payload: '[', headers: { 'content-type': 'application/json' } },
      400,
    );
    await call(
      db,
      {
        url: '/explain',
        token: supportReaderToken(),
        payload: 'tool=refund',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      },
      415,
    );
    await call(
      db,
      { url: '/explain', token: supportReaderToken(), body: { tool: 'refund', args: { blob: 'x'.repeat(1_100_000) } } },
      413,
    );
  });

  it('POST /explain when two catalogues describe a tool differently: every description, and the one each file answered under', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'gatehouse-openapi-views-'));
    await writeFile(
      join(dir, 'a.yaml'),
      'policy: a\ndefault: allow\ntools:\n  send_wire: {kind: remote_mutation}\nrules:\n  - {id: no-remote, kinds: [remote_mutation], allow: false}\n',
    );
    await writeFile(
      join(dir, 'b.yaml'),
      'policy: b\ndefault: allow\ntools:\n  "send_*": {kind: destructive, tags: [money]}\n',
    );
    const t = await createTestApp({ policyDir: dir, env: null });
    try {
      const got = await call(t, { url: '/explain', token: supportReaderToken(), body: { tool: 'send_wire' } }, 403);
      expect(got).toMatchObject({ decision: 'deny', rule: 'no-remote' });
      expect(got.trace.catalogue.views).toEqual([
        { entry: 'send_wire', policy: 'a', kind: 'remote_mutation', tags: [] },
        { entry: 'send_*', policy: 'b', kind: 'destructive', tags: ['money'] },
      ]);
      expect(got.trace.files.map((f: Body) => [f.policy, f.view, f.decision])).toEqual([
        ['a', 0, 'deny'],
        ['b', 0, 'allow'],
      ]);
    } finally {
      await t.close();
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('POST /explain on other policy sets: the built-in default and the dev environment', async () => {
    const empty = await mkdtemp(join(tmpdir(), 'gatehouse-openapi-empty-'));
    const none = await createTestApp({ policyDir: empty, env: null });
    const dev = await createTestApp({ env: 'dev' });
    try {
      const builtin = await call(none, { url: '/explain', token: supportReaderToken(), body: { tool: 'refund' } }, 403);
      expect(builtin).toMatchObject({ decision: 'deny', rule: 'builtin#default', policies: [] });
      expect(builtin.trace.files[0]).toMatchObject({ policy: 'builtin', digest: '', default: 'side_effects' });
      expect((await call(none, { url: '/policies', token: supportReaderToken() }, 200)).files).toEqual([]);
      const remote = await call(
        dev,
        { url: '/decide', token: supportToken(), body: { tool: 'github__create_issue', args: { title: 't' } } },
        403,
      );
      expect(remote).toMatchObject({ decision: 'require_approval', approval: { kind: 'remote_mutation' } });
      expect(
        (await call(dev, { url: '/explain', token: supportReaderToken(), body: { tool: 'wipe_orders' } }, 403))
          .decision,
      ).toBe('deny');
    } finally {
      await Promise.all([none.close(), dev.close()]);
      await rm(empty, { recursive: true, force: true });
    }
  });

  it('GET /tools: any caller, its own statuses; the example is the payments policy for team support in prod', async () => {
    const example = deref<{ value: Body }>(
      (openApi.components['examples'] as Record<string, { value: Body }>)['PaymentsTools']!,
    ).value;
    expect(await call(db, { url: '/tools', token: supportToken() }, 200)).toEqual(example);
    const sales = await call(db, { url: '/tools', token: token({ team: 'sales' }) }, 200);
    expect(sales.tools.find((t: Body) => t.name === 'refund')).toMatchObject({
      status: 'deny',
      rules: ['payments#default'],
    });
    expect((await call(db, { url: '/tools', token: approverToken() }, 200)).env).toBe('prod');
    const empty = await mkdtemp(join(tmpdir(), 'gatehouse-openapi-tools-'));
    const none = await createTestApp({ policyDir: empty, env: null });
    try {
      expect(await call(none, { url: '/tools', token: supportToken() }, 200)).toEqual({ env: null, tools: [] });
    } finally {
      await none.close();
      await rm(empty, { recursive: true, force: true });
    }
    const current = vi.spyOn(db.ctx.policies, 'current').mockImplementationOnce(() => {
      throw new Error('boom');
    });
    try {
      expect((await call(db, { url: '/tools', token: supportToken() }, 500)).detail).not.toContain('boom');
    } finally {
      current.mockRestore();
    }
  });

  it('GET /policies and POST /admin/reload', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'gatehouse-openapi-policies-'));
    await copyFile('test/cases/payments/payments.yaml', join(dir, 'payments.yaml'));
    const t = await createTestApp({ policyDir: dir });
    try {
      const before = await call(t, { url: '/policies', token: approverToken() }, 200);
      expect(before).toMatchObject({
        env: 'prod',
        last_reload_error: null,
        files: [{ path: 'payments.yaml', policy: 'payments', version: '3' }],
      });
      expect((await call(t, { url: '/policies', token: adminToken() }, 200)).files).toEqual(before.files);
      expect((await call(t, { url: '/policies', token: agentToken() }, 403)).code).toBe('forbidden');
      expect(await call(t, { url: '/admin/reload', method: 'POST', token: adminToken() }, 200)).toMatchObject({
        reloaded: true,
      });
      await call(t, { url: '/admin/reload', method: 'POST', token: agentToken() }, 403);
      await call(t, { url: '/admin/reload', method: 'POST', token: approverToken() }, 403);
      await call(t, { url: '/admin/reload', token: adminToken(), body: {} }, 200);
      await call(
        t,
        {
          url: '/admin/reload',
          token: adminToken(),
          payload: '{"a":1,"a":2}',
          headers: { 'content-type': 'application/json' },
        },
        400,
      );
      await call(
        t,
        { url: '/admin/reload', token: adminToken(), payload: 'reload', headers: { 'content-type': 'text/plain' } },
        415,
      );
      await call(t, { url: '/admin/reload', token: adminToken(), body: { pad: 'x'.repeat(1_100_000) } }, 413);

      await writeFile(join(dir, 'zz-broken.yaml'), 'policy: broken\nrules: [{tools: [], allow: true}]\n');
      const failed = await call(t, { url: '/admin/reload', method: 'POST', token: adminToken() }, 422);
      expect(failed.code).toBe('reload_failed');
      expect(failed.last_reload_error.problems.length).toBeGreaterThan(0);
      expect(failed.files).toHaveLength(1); // the previous set keeps serving
      expect((await call(t, { url: '/policies', token: approverToken() }, 200)).last_reload_error).not.toBeNull();
      expect((await call(t, { url: '/readyz' }, 503)).policies.reload_error).toBe(true);
      await rm(join(dir, 'zz-broken.yaml'));
      expect(
        (await call(t, { url: '/admin/reload', method: 'POST', token: adminToken() }, 200)).last_reload_error,
      ).toBeNull();

      const reload = vi.spyOn(t.ctx.policies, 'reload').mockRejectedValueOnce(new Error('boom'));
      expect((await call(t, { url: '/admin/reload', method: 'POST', token: adminToken() }, 500)).detail).not.toContain(
        'boom',
      );
      reload.mockRestore();
      const loadedAt = vi.spyOn(t.ctx.policies, 'loadedAt').mockImplementationOnce(() => {
        throw new Error('boom');
      });
      await call(t, { url: '/policies', token: approverToken() }, 500);
      loadedAt.mockRestore();
    } finally {
      await t.close();
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('the approval lifecycle: create, idempotent create, wait, grant, redeem, deny, conflicts', async () => {
    const requester = supportToken('agent-lifecycle');
    const created = await call(db, { url: '/approvals', token: requester, body: REFUND }, 201);
    expect(created).toMatchObject({
      status: 'pending',
      kind: 'refund_over_cap',
      capability: { order: 'A1', amount: 120 },
    });
    const again = await call(db, { url: '/approvals', token: requester, body: REFUND }, 200);
    expect(again.id).toBe(created.id);
    for (const [name, ex] of Object.entries(
      findOperation('post', '/approvals').operation.requestBody!.content!['application/json']!.examples!,
    )) {
      const value = deref<{ value: Record<string, unknown> }>(ex).value;
      if ('kind' in value) {
        // A runtime's own approval (RUNTIME_ROLE), filed without a decision.
        const runtime = token({ ...SUPPORT, sub: 'runtime-example', roles: ['runtime'] });
        expect((await call(db, { url: '/approvals', token: runtime, body: value }, 201)).kind, name).toBe(
          'interrupted_side_effect',
        );
        continue;
      }
      expect((await call(db, { url: '/approvals', token: requester, body: value }, 200)).id, name).toBe(created.id);
    }

    // Pending: /decide with the id says where it stands.
    const pending = await call(
      db,
      { url: '/decide', token: requester, body: { ...REFUND, approval_id: created.id } },
      403,
    );
    expect(pending.approval).toMatchObject({ id: created.id, status: 'pending' });

    // A long-poll answered by a grant (whichever comes first, the answer is the granted approval).
    const waiting = call(db, { url: `/approvals/${created.id}?wait=30`, token: requester }, 200);
    const granted = await call(
      db,
      { url: `/approvals/${created.id}/grant`, token: approverToken(), body: { note: 'checked the order' } },
      200,
    );
    expect(granted).toMatchObject({ status: 'granted', decided_by: 'operator-1', decision_note: 'checked the order' });
    expect((await waiting).status).toBe('granted');
    expect((await call(db, { url: `/approvals/${created.id}?wait=5`, token: requester }, 200)).status).toBe('granted');

    // The loser of a second decision gets 409 with the current state.
    expect(
      (await call(db, { url: `/approvals/${created.id}/grant`, token: approverToken('operator-2') }, 409)).approval
        .status,
    ).toBe('granted');
    expect(
      (await call(db, { url: `/approvals/${created.id}/deny`, token: approverToken(), body: { reason: 'late' } }, 409))
        .approval.status,
    ).toBe('granted');

    // Redeem once: allow; a second time: require_approval, consumed.
    const redeemed = await call(
      db,
      { url: '/decide', token: requester, body: { ...REFUND, approval_id: created.id } },
      200,
    );
    expect(redeemed).toMatchObject({ decision: 'allow', approval: { id: created.id, status: 'consumed' } });
    const reused = await call(
      db,
      { url: '/decide', token: requester, body: { ...REFUND, approval_id: created.id } },
      403,
    );
    expect(reused).toMatchObject({ decision: 'require_approval', approval: { id: created.id, status: 'consumed' } });
    // A changed presentation is a different hash: a new approval is needed.
    const changed = await call(
      db,
      {
        url: '/decide',
        token: requester,
        body: { ...REFUND, args: { ...REFUND.args, note: 'urgent' }, approval_id: created.id },
      },
      403,
    );
    expect(changed.approval.id).toBeUndefined();

    // Deny: the operator's reason reaches the model.
    const second = await call(
      db,
      { url: '/approvals', token: requester, body: { tool: 'refund', args: { order: 'B2', amount: 500 } } },
      201,
    );
    const denied = await call(
      db,
      { url: `/approvals/${second.id}/deny`, token: approverToken(), body: { reason: 'already refunded' } },
      200,
    );
    expect(denied).toMatchObject({ status: 'denied', decision_note: 'already refunded' });
    const refusal = await call(
      db,
      {
        url: '/decide',
        token: requester,
        body: { tool: 'refund', args: { order: 'B2', amount: 500 }, approval_id: second.id },
      },
      403,
    );
    expect(refusal.decision).toBe('deny');
    expect(refusal.reason).toContain('already refunded');
    await call(db, { url: `/approvals/${second.id}/grant`, token: approverToken() }, 409);

    // The default shape (a guard's approval): capability and presentation are {tool, args}.
    const pii = await call(
      db,
      { url: '/approvals', token: requester, body: { tool: 'send_note', args: { text: 'call +33 6 12 34 56 78' } } },
      201,
    );
    expect(pii).toMatchObject({ kind: 'pii', capability: { tool: 'send_note' }, presentation: { tool: 'send_note' } });
    expect(pii.presentation_label).toMatch(/Model-chosen/);
    await call(db, { url: `/approvals/${pii.id}/deny`, token: approverToken() }, 200);

    // Cancel: the requester withdraws; citing it then says a new approval is needed.
    const third = await call(
      db,
      {
        url: '/approvals',
        token: requester,
        body: { tool: 'refund', args: { order: 'C3', amount: 500 }, run: { id: 'run-c3' } },
      },
      201,
    );
    expect(third.run_id).toBe('run-c3');
    const cited = await call(
      db,
      {
        url: '/decide',
        token: requester,
        body: { tool: 'refund', args: { order: 'C3', amount: 500 }, approval_id: third.id },
      },
      403,
    );
    expect(cited.next).toEqual({ action: 'wait', url: `/approvals/${third.id}?wait=60`, expires_at: third.expires_at });
    expect(await call(db, { url: `/approvals/${third.id}/cancel`, token: requester }, 200)).toMatchObject({
      id: third.id,
      status: 'cancelled',
    });
    expect(
      (await call(db, { url: `/approvals/${third.id}/cancel`, token: requester, body: {} }, 409)).approval.status,
    ).toBe('cancelled');
    const spent = await call(
      db,
      {
        url: '/decide',
        token: requester,
        body: { tool: 'refund', args: { order: 'C3', amount: 500 }, approval_id: third.id },
      },
      403,
    );
    expect(spent).toMatchObject({
      decision: 'require_approval',
      approval: { id: third.id, status: 'cancelled' },
      next: { action: 'file_new', url: '/approvals' },
    });
    await call(db, { url: `/approvals/${third.id}/grant`, token: approverToken() }, 409);
  });

  it('approvals: visibility, roles, self-approval, not found, list and pagination', async () => {
    const mine = supportToken('agent-visibility');
    const a = await call(
      db,
      { url: '/approvals', token: mine, body: { tool: 'refund', args: { order: 'V1', amount: 300 } } },
      201,
    );
    const b = await call(
      db,
      { url: '/approvals', token: mine, body: { tool: 'refund', args: { order: 'V2', amount: 300 } } },
      201,
    );
    await call(db, { url: `/approvals/${a.id}`, token: mine }, 200);
    await call(db, { url: `/approvals/${a.id}`, token: approverToken() }, 200);
    await call(db, { url: `/approvals/${a.id}`, token: supportToken('someone-else') }, 404);
    await call(db, { url: `/approvals/${randomUUID()}`, token: approverToken() }, 404);
    await call(db, { url: '/approvals/not-a-uuid', token: approverToken() }, 404);
    expect(
      (await call(db, { url: `/approvals/${'x'.repeat(65)}`, token: approverToken() }, 400)).errors[0].pointer,
    ).toBe('/id');
    await call(db, { url: `/approvals/${a.id}?wait=61`, token: mine }, 400);
    await call(db, { url: `/approvals/${a.id}?since=1`, token: mine }, 400);
    // Refused by the router itself (before authentication), in its own format.
    expect((await call(db, { url: '/approvals/%zz', token: approverToken() }, 400)).code).toBe('bad_request');
    expect((await call(db, { url: '/approvals/%zz/grant', method: 'POST', token: approverToken() }, 400)).code).toBe(
      'bad_request',
    );
    for (const [method, suffix] of [
      ['GET', ''],
      ['POST', '/grant'],
      ['POST', '/deny'],
      ['POST', '/cancel'],
    ] as const) {
      expect(
        (await call(db, { url: `/approvals/${'x'.repeat(200)}${suffix}`, method, token: approverToken() }, 414)).code,
      ).toBe('uri_too_long');
    }

    // Roles: only approvers decide, never their own request.
    await call(db, { url: `/approvals/${a.id}/grant`, token: mine }, 403);
    await call(db, { url: `/approvals/${a.id}/deny`, token: mine }, 403);
    const selfToken = token({ sub: 'operator-self', team: 'support', roles: ['approver'] });
    const own = await call(
      db,
      { url: '/approvals', token: selfToken, body: { tool: 'refund', args: { order: 'S1', amount: 999 } } },
      201,
    );
    expect((await call(db, { url: `/approvals/${own.id}/grant`, token: selfToken }, 403)).detail).toMatch(/requested/);
    await call(db, { url: `/approvals/${own.id}/deny`, token: selfToken, body: { reason: 'no' } }, 403);
    await call(db, { url: `/approvals/${randomUUID()}/grant`, token: approverToken() }, 404);
    await call(db, { url: `/approvals/${randomUUID()}/deny`, token: approverToken() }, 404);
    await call(db, { url: `/approvals/${'x'.repeat(65)}/grant`, token: approverToken() }, 400);
    await call(db, { url: `/approvals/${'x'.repeat(65)}/deny`, token: approverToken() }, 400);
    // Cancel: the requester's alone; to anyone else, approvers included, it does not exist.
    await call(db, { url: `/approvals/${a.id}/cancel`, token: approverToken() }, 404);
    await call(db, { url: `/approvals/${a.id}/cancel`, token: supportToken('someone-else') }, 404);
    await call(db, { url: `/approvals/${'x'.repeat(65)}/cancel`, token: mine }, 400);
    expect((await call(db, { url: `/approvals/${a.id}/cancel`, token: mine, body: { reason: 'x' } }, 422)).code).toBe(
      'invalid_body',
    );
    await call(
      db,
      { url: `/approvals/${a.id}/cancel`, token: mine, payload: 'ok', headers: { 'content-type': 'text/plain' } },
      415,
    );
    await call(
      db,
      {
        url: `/approvals/${a.id}/cancel`,
        token: mine,
        payload: JSON.stringify({ pad: 'x'.repeat(1_100_000) }),
        headers: { 'content-type': 'application/json' },
      },
      413,
    );

    // Bodies of grant and deny.
    for (const verb of ['grant', 'deny']) {
      const field = verb === 'grant' ? 'note' : 'reason';
      await call(
        db,
        { url: `/approvals/${b.id}/${verb}`, token: approverToken(), body: { [field]: 'x'.repeat(2001) } },
        422,
      );
      const nul = await call(
        db,
        { url: `/approvals/${b.id}/${verb}`, token: approverToken(), body: { [field]: 'a\u0000b' } },
        422,
      );
      expect(nul.code).toBe('invalid_body');
      await call(
        db,
        {
          url: `/approvals/${b.id}/${verb}`,
          token: approverToken(),
          payload: '{"note":"a","note":"b"}',
          headers: { 'content-type': 'application/json' },
        },
        400,
      );
      await call(
        db,
        {
          url: `/approvals/${b.id}/${verb}`,
          token: approverToken(),
          payload: 'ok',
          headers: { 'content-type': 'text/plain' },
        },
        415,
      );
      await call(
        db,
        { url: `/approvals/${b.id}/${verb}`, token: approverToken(), body: { [field]: 'x'.repeat(1_100_000) } },
        413,
      );
    }

    // POST /approvals: only require_approval creates; the rest is 409 with the decision.
    expect((await call(db, { url: '/approvals', token: mine, body: { tool: 'lookup_order' } }, 409)).decision).toBe(
      'allow',
    );
    expect((await call(db, { url: '/approvals', token: mine, body: { tool: 'wipe_orders' } }, 409)).decision).toBe(
      'abort',
    );
    expect((await call(db, { url: '/approvals', token: mine, body: { tool: 'refund', args: {} } }, 409)).decision).toBe(
      'deny',
    );
    expect(
      (await call(db, { url: '/approvals', token: mine, body: { ...REFUND, approval_id: a.id } }, 422)).errors[0]
        .pointer,
    ).toBe('/approval_id');
    expect(
      (await call(db, { url: '/approvals', token: mine, body: { tool: 'refund', roles: ['approver'] } }, 422)).code,
    ).toBe('identity_in_body');
    await call(
      db,
      { url: '/approvals', token: mine, payload: '{"tool":', headers: { 'content-type': 'application/json' } },
      400,
    );
    await call(
      db,
      {
        url: '/approvals',
        token: mine,
        payload: '{"tool":"refund"}',
        headers: { 'content-type': 'application/json; charset=latin1' },
      },
      415,
    );
    await call(
      db,
      { url: '/approvals', token: mine, body: { tool: 'refund', args: { blob: 'x'.repeat(1_100_000) } } },
      413,
    );

    // Lists: own for agents, everything for approvers, newest first, keyset pages.
    const own2 = await call(db, { url: '/approvals', token: mine }, 200);
    expect(own2.items.map((x: Body) => x.id)).toEqual([b.id, a.id]);
    const page1 = await call(db, { url: '/approvals?limit=1', token: approverToken() }, 200);
    expect(page1.items).toHaveLength(1);
    expect(page1.next_cursor).toEqual(expect.any(String));
    const page2 = await call(
      db,
      { url: `/approvals?limit=1&cursor=${encodeURIComponent(page1.next_cursor)}`, token: approverToken() },
      200,
    );
    expect(page2.items[0].id).not.toBe(page1.items[0].id);
    expect(
      (
        await call(db, { url: '/approvals?status=pending&tool=refund&limit=200', token: approverToken() }, 200)
      ).items.every((x: Body) => x.status === 'pending' && x.tool === 'refund'),
    ).toBe(true);
    expect((await call(db, { url: '/approvals?cursor=bm9wZQ', token: mine }, 400)).errors).toEqual([
      { pointer: '/cursor', message: 'invalid_cursor' },
    ]);
    await call(db, { url: '/approvals?limit=0', token: mine }, 400);
    await call(db, { url: '/approvals?status=open', token: mine }, 400);
  });

  it('approvals: 429 with Retry-After past MAX_PENDING_APPROVALS', async () => {
    const capped = await createTestApp({ database: true, maxPendingApprovals: 1 });
    try {
      await call(capped, { url: '/approvals', token: supportToken('agent-cap'), body: REFUND }, 201);
      const other = { ...REFUND, args: { ...REFUND.args, order: 'A2' } };
      expect((await call(capped, { url: '/approvals', token: supportToken('agent-cap'), body: other }, 429)).code).toBe(
        'too_many_pending',
      );
    } finally {
      await capped.close();
    }
  });

  it('Idempotency-Key: 429 with Retry-After past IDEMPOTENCY_MAX_KEYS, on /usage, /decide and POST /approvals', async () => {
    const capped = await createTestApp({
      policyDir: 'test/cases/budgets',
      env: null,
      database: true,
      keyCaps: { maxKeys: 1, maxBytes: 1_048_576 },
    });
    const agent = token({
      sub: `keys-${randomUUID().slice(0, 8)}`,
      team: 'support',
      agent: 'bot',
      roles: ['usage_reporter'],
    });
    const key = (): Record<string, string> => ({ 'idempotency-key': randomUUID() });
    try {
      await call(capped, { url: '/usage', token: agent, body: { tool: 'llm', usd: 1 }, headers: key() }, 200);
      expect(
        (await call(capped, { url: '/usage', token: agent, body: { tool: 'llm', usd: 1 }, headers: key() }, 429)).code,
      ).toBe('too_many_idempotency_keys');
      const refund = (amount: number) => ({ tool: 'refund', args: { order: 'K1', amount } });
      expect((await call(capped, { url: '/decide', token: agent, body: refund(1), headers: key() }, 429)).code).toBe(
        'too_many_idempotency_keys',
      );
      expect(
        (await call(capped, { url: '/approvals', token: agent, body: refund(5000), headers: key() }, 429)).code,
      ).toBe('too_many_idempotency_keys');
    } finally {
      await capped.close();
    }
  });

  it('approvals: 413 past APPROVAL_MAX_BYTES, 409 recently_denied within DENIED_COOLDOWN, 429 past MAX_WAITS_PER_CALLER', async () => {
    const bounded = await createTestApp({
      database: true,
      approvalMaxBytes: 256,
      deniedCooldownMs: 60_000,
      maxWaitsPerCaller: 1,
    });
    try {
      const big = { ...REFUND, args: { ...REFUND.args, note: 'n'.repeat(300) } };
      expect((await call(bounded, { url: '/approvals', token: supportToken('agent-b'), body: big }, 413)).code).toBe(
        'approval_too_large',
      );
      const { id } = (await call(
        bounded,
        { url: '/approvals', token: supportToken('agent-b'), body: REFUND },
        201,
      )) as { id: string };
      const waiting = bounded.app.inject({
        method: 'GET',
        url: `/approvals/${id}?wait=30`,
        headers: bearer(supportToken('agent-b')),
      });
      for (let i = 0; i < 500 && bounded.ctx.approvals!.waiter.size === 0; i++)
        await new Promise((resolve) => setTimeout(resolve, 10));
      expect((await call(bounded, { url: `/approvals/${id}?wait=30`, token: supportToken('agent-b') }, 429)).code).toBe(
        'too_many_waits',
      );
      await call(bounded, { url: `/approvals/${id}/deny`, token: approverToken(), body: { reason: 'no' } }, 200);
      expect((await waiting).statusCode).toBe(200);
      expect((await call(bounded, { url: '/approvals', token: supportToken('agent-b'), body: REFUND }, 409)).code).toBe(
        'recently_denied',
      );
    } finally {
      await bounded.close();
    }
  });

  it('approvals: 503 with Retry-After without a database or when it cannot answer, 500 on a store bug', async () => {
    const id = randomUUID();
    await call(plain, { url: '/approvals', token: supportToken(), body: REFUND }, 503);
    await call(plain, { url: '/approvals', token: supportToken() }, 503);
    await call(plain, { url: `/approvals/${id}`, token: supportToken() }, 503);
    await call(plain, { url: `/approvals/${id}/grant`, token: approverToken() }, 503);
    await call(plain, { url: `/approvals/${id}/deny`, token: approverToken(), body: { reason: 'no' } }, 503);
    await call(plain, { url: `/approvals/${id}/cancel`, token: supportToken() }, 503);
    await call(plain, { url: '/decide', token: supportToken(), body: { ...REFUND, approval_id: id } }, 503);
    // Without approval_id, /decide needs no database.
    await call(plain, { url: '/decide', token: supportToken(), body: REFUND }, 403);

    const store = db.ctx.approvals!.store;
    const unavailable = (): StoreUnavailableError => new StoreUnavailableError('deadline');
    const spies = [
      // /decide with approval_id reads the cited approval (get) first; unavailable, `$approval` is
      // missing and the consume answers 503.
      vi
        .spyOn(store, 'get')
        .mockRejectedValueOnce(unavailable())
        .mockRejectedValueOnce(unavailable())
        .mockRejectedValueOnce(new Error('boom')),
      vi.spyOn(store, 'consume').mockRejectedValueOnce(unavailable()),
      vi.spyOn(store, 'create').mockRejectedValueOnce(unavailable()),
      vi.spyOn(store, 'list').mockRejectedValueOnce(unavailable()).mockRejectedValueOnce(new Error('boom')),
      vi.spyOn(store, 'grant').mockRejectedValueOnce(unavailable()).mockRejectedValueOnce(new Error('boom')),
      vi.spyOn(store, 'deny').mockRejectedValueOnce(unavailable()).mockRejectedValueOnce(new Error('boom')),
      vi.spyOn(store, 'cancel').mockRejectedValueOnce(unavailable()).mockRejectedValueOnce(new Error('boom')),
    ];
    try {
      await call(db, { url: `/approvals/${id}`, token: approverToken() }, 503);
      await call(db, { url: '/decide', token: supportToken(), body: { ...REFUND, approval_id: id } }, 503);
      await call(db, { url: `/approvals/${id}`, token: approverToken() }, 500);
      await call(db, { url: '/approvals', token: supportToken('agent-503'), body: REFUND }, 503);
      await call(db, { url: '/approvals', token: approverToken() }, 503);
      await call(db, { url: '/approvals', token: approverToken() }, 500);
      await call(db, { url: `/approvals/${id}/grant`, token: approverToken() }, 503);
      await call(db, { url: `/approvals/${id}/grant`, token: approverToken() }, 500);
      await call(db, { url: `/approvals/${id}/deny`, token: approverToken() }, 503);
      await call(db, { url: `/approvals/${id}/deny`, token: approverToken() }, 500);
      await call(db, { url: `/approvals/${id}/cancel`, token: supportToken() }, 503);
      await call(db, { url: `/approvals/${id}/cancel`, token: supportToken() }, 500);
    } finally {
      for (const s of spies) s.mockRestore();
    }
    // A COMMIT sent whose outcome could not be learned (docs/spec.md section 5.1.1): 504 on every
    // route that writes.
    const unknown = (): OutcomeUnknownError => new OutcomeUnknownError();
    const writes = [
      vi.spyOn(store, 'consume').mockRejectedValueOnce(unknown()),
      vi.spyOn(store, 'create').mockRejectedValueOnce(unknown()),
      vi.spyOn(store, 'grant').mockRejectedValueOnce(unknown()),
      vi.spyOn(store, 'deny').mockRejectedValueOnce(unknown()),
      vi.spyOn(store, 'cancel').mockRejectedValueOnce(unknown()),
    ];
    try {
      await call(db, { url: '/decide', token: supportToken(), body: { ...REFUND, approval_id: id } }, 504);
      await call(db, { url: '/approvals', token: supportToken('agent-504'), body: REFUND }, 504);
      await call(db, { url: `/approvals/${id}/grant`, token: approverToken() }, 504);
      await call(db, { url: `/approvals/${id}/deny`, token: approverToken() }, 504);
      await call(db, { url: `/approvals/${id}/cancel`, token: supportToken() }, 504);
    } finally {
      for (const s of writes) s.mockRestore();
    }
  });

  it('GET /approvals/stream: the stream opens with `ready`; refusals are problems', async () => {
    const port = await listenLoopback(db.app);
    const abort = new AbortController();
    const res = await fetch(`http://127.0.0.1:${port}/approvals/stream`, {
      headers: bearer(approverToken()),
      signal: abort.signal,
    });
    const reader = res.body!.getReader();
    let text = '';
    while (!text.includes('event: ready\n')) text += new TextDecoder().decode((await reader.read()).value);
    abort.abort();
    expect(text).toBe('retry: 2000\n\nevent: ready\ndata: {}\n\n');
    assertResponseMatchesOpenApi('GET', '/approvals/stream', {
      statusCode: res.status,
      headers: Object.fromEntries(res.headers),
      body: text,
    });
    expect(res.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    covered.add('get /approvals/stream 200');

    await call(db, { url: '/approvals/stream?since=1', token: approverToken() }, 400);
    await call(plain, { url: '/approvals/stream', token: approverToken() }, 503);
    const subscribe = vi
      .spyOn(db.ctx.approvals!.feed, 'subscribe')
      .mockImplementationOnce(() => {
        throw new WaitLimitError('caller', 20, 'streams');
      })
      .mockImplementationOnce(() => {
        throw new WaitLimitError('replica', 512, 'streams');
      })
      .mockImplementationOnce(() => {
        throw new Error('boom');
      });
    try {
      expect((await call(db, { url: '/approvals/stream', token: approverToken() }, 429)).detail).toMatch(/20 streams/);
      expect((await call(db, { url: '/approvals/stream', token: approverToken() }, 503)).detail).toMatch(/streams/);
      await call(db, { url: '/approvals/stream', token: approverToken() }, 500);
    } finally {
      subscribe.mockRestore();
    }
  });

  it('GET /me: the caller and what it may do', async () => {
    expect(await call(plain, { url: '/me', token: approverToken('operator-9') }, 200)).toEqual({
      sub: 'operator-9',
      team: 'ops',
      agent: 'bot',
      name: null,
      roles: ['approver'],
      can: { decide: true, read_policies: true, reload: false },
    });
    expect(await call(plain, { url: '/me', token: supportToken() }, 200)).toEqual({
      ...SUPPORT,
      name: null,
      roles: [],
      can: { decide: false, read_policies: false, reload: false },
    });
    expect((await call(plain, { url: '/me', token: adminToken() }, 200)).can).toEqual({
      decide: false,
      read_policies: true,
      reload: true,
    });
    await call(plain, { url: '/me?x=1', token: supportToken() }, 400);
  });

  it('GET /approvals with every filter, oldest first, counted; a denial with a note and a message', async () => {
    const requester = supportToken('agent-filters');
    const made = [];
    for (const order of ['F1', 'F2', 'F3']) {
      made.push(
        await call(
          db,
          { url: '/approvals', token: requester, body: { tool: 'refund', args: { order, amount: 300 } } },
          201,
        ),
      );
    }
    const denied = await call(
      db,
      {
        url: `/approvals/${made[1].id}/deny`,
        token: approverToken(),
        body: { note: 'for the record', message: 'not this one' },
      },
      200,
    );
    expect(denied).toMatchObject({
      status: 'denied',
      decision_note: 'for the record',
      decision_message: 'not this one',
    });
    const q = 'requester=agent-filters&kind=refund_over_cap&tool=refund&order=oldest&count=true&limit=2';
    const first = await call(db, { url: `/approvals?${q}`, token: approverToken() }, 200);
    expect(first.items.map((a: Body) => a.id)).toEqual([made[0].id, made[1].id]);
    expect(first.count).toBe(3);
    const second = await call(db, { url: `/approvals?${q}&cursor=${first.next_cursor}`, token: approverToken() }, 200);
    expect(second.items.map((a: Body) => a.id)).toEqual([made[2].id]);
    // The history, and a search: the requester sees its own, without the note.
    const history = await call(db, { url: '/approvals?decided=true&q=F2', token: requester }, 200);
    expect(history.items).toEqual([
      expect.objectContaining({ id: made[1].id, decision_note: null, decision_message: 'not this one' }),
    ]);
    expect((await call(db, { url: '/approvals?q=for the record', token: requester }, 200)).items).toEqual([]);
    expect(
      (await call(db, { url: '/approvals?q=for the record', token: approverToken() }, 200)).items.map(
        (a: Body) => a.id,
      ),
    ).toEqual([made[1].id]);
    // A cursor continues the order it was issued for.
    expect(
      (await call(db, { url: `/approvals?cursor=${first.next_cursor}`, token: approverToken() }, 400)).errors,
    ).toEqual([{ pointer: '/cursor', message: 'invalid_cursor' }]);
  });

  it('GET /admin/webhooks: the endpoints, the counts and a page of deliveries (role admin); 400, 403, 500, 503', async () => {
    const secret = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
    const endpoints = [
      { name: 'ops', url: 'http://127.0.0.1:9/hooks', format: 'standard' as const, secret, events: null },
      {
        name: 'slack',
        url: 'https://hooks.slack.com/services/T0/B0/secret-path',
        format: 'slack' as const,
        secret: null,
        events: ['approval.created' as const],
      },
    ];
    const hooked = await createTestApp({ database: true, webhooks: { endpoints, worker: false } });
    try {
      const filed = (await call(hooked, { url: '/approvals', token: supportToken(), body: REFUND }, 201)) as {
        id: string;
      };
      const listed = await call(hooked, { url: '/admin/webhooks?status=pending', token: adminToken() }, 200);
      expect(listed).toMatchObject({ pending: 2, failed: 0, next_cursor: null });
      expect(listed.endpoints.map((e: Body) => [e.name, e.origin, e.pending])).toEqual([
        ['ops', 'http://127.0.0.1:9', 1],
        ['slack', 'https://hooks.slack.com', 1],
      ]);
      expect(JSON.stringify(listed)).not.toContain('secret');
      expect(listed.items.map((i: Body) => [i.type, i.approval_id])).toEqual([
        ['approval.created', filed.id],
        ['approval.created', filed.id],
      ]);
      const page = await call(hooked, { url: '/admin/webhooks?status=pending&limit=1', token: adminToken() }, 200);
      expect(page.items).toHaveLength(1);
      const rest = await call(
        hooked,
        { url: `/admin/webhooks?status=pending&limit=1&cursor=${page.next_cursor}`, token: adminToken() },
        200,
      );
      expect(rest).toMatchObject({ items: [{ id: listed.items[1].id }], next_cursor: null });
      expect((await call(hooked, { url: '/admin/webhooks', token: adminToken() }, 200)).items).toEqual([]); // failed, by default
      await call(hooked, { url: '/admin/webhooks', token: approverToken() }, 403);
      await call(hooked, { url: '/admin/webhooks', token: supportToken() }, 403);
      for (const query of ['status=lost', 'limit=0', 'limit=201', 'cursor=x', 'other=1']) {
        await call(hooked, { url: `/admin/webhooks?${query}`, token: adminToken() }, 400);
      }
      await call(plain, { url: '/admin/webhooks', token: adminToken() }, 503);
      const outbox = hooked.ctx.webhooks!.outbox;
      const spies = [
        vi
          .spyOn(outbox, 'counts')
          .mockRejectedValueOnce(new StoreUnavailableError('deadline'))
          .mockRejectedValueOnce(new Error('boom')),
      ];
      try {
        await call(hooked, { url: '/admin/webhooks', token: adminToken() }, 503);
        expect((await call(hooked, { url: '/admin/webhooks', token: adminToken() }, 500)).detail).not.toContain('boom');
      } finally {
        for (const s of spies) s.mockRestore();
      }
    } finally {
      await hooked.close();
    }
  });

  it('GET /decisions: the records of the store (auditors and admins); 400, 403, 404 with the store off, 500', async () => {
    const store = await createTestDatabase();
    const stored = await createTestApp({ database: store, logArgs: true, decisionStore: { sql: store.sql } });
    try {
      await call(
        stored,
        {
          method: 'POST',
          url: '/decide',
          token: supportToken(),
          body: { tool: 'refund', args: { order: 'A1', amount: 120 } },
        },
        403,
      );
      await stored.writer!.flush();
      const auditor = token({ sub: 'auditor-1', roles: ['auditor'] });
      const page = await call(stored, { url: '/decisions', token: auditor }, 200);
      expect(page.items).toHaveLength(1);
      await call(stored, { url: '/decisions?decision=allow&limit=1', token: adminToken() }, 200);
      for (const query of ['since=yesterday', 'other=1', 'limit=0', 'cursor=x'])
        await call(stored, { url: `/decisions?${query}`, token: auditor }, 400);
      await call(stored, { url: '/decisions', token: approverToken() }, 403);
      await call(db, { url: '/decisions', token: adminToken() }, 404);
      // A table that is gone is a fault, not a dependency down: 500, the database's words kept out.
      await store.sql`drop table decisions`;
      expect((await call(stored, { url: '/decisions', token: auditor }, 500)).detail).not.toContain('decisions');
    } finally {
      await stored.close();
      await store.drop();
    }
  });

  it('GET /approvals/stats: per rule and kind (approvers and admins); 400, 403, 500, 503', async () => {
    // Earlier cases filed approvals on this database.
    const stats = await call(db, { url: '/approvals/stats', token: approverToken() }, 200);
    expect(stats.rules.length).toBeGreaterThan(0);
    await call(
      db,
      { url: `/approvals/stats?since=${encodeURIComponent(new Date(0).toISOString())}`, token: adminToken() },
      200,
    );
    await call(db, { url: '/approvals/stats', token: supportToken() }, 403);
    for (const query of ['since=yesterday', 'other=1'])
      await call(db, { url: `/approvals/stats?${query}`, token: approverToken() }, 400);
    await call(plain, { url: '/approvals/stats', token: approverToken() }, 503);
    const spy = vi.spyOn(db.ctx.approvals!.store, 'stats').mockRejectedValueOnce(new Error('boom'));
    try {
      expect((await call(db, { url: '/approvals/stats', token: approverToken() }, 500)).detail).not.toContain('boom');
    } finally {
      spy.mockRestore();
    }
  });

  it('budgets and rate limits: GET /budgets, POST /usage, counted /decide, /explain and POST /approvals; 400, 413, 415, 422, 500, 503', async () => {
    const counted = await createTestApp({ policyDir: 'test/cases/budgets', env: null, database: true });
    const offline = await createTestApp({ policyDir: 'test/cases/budgets', env: null });
    const key = (k = randomUUID()): Record<string, string> => ({ 'idempotency-key': k });
    // A runtime that reports its spend (USAGE_ROLE).
    const agent = token({
      sub: `budget-${randomUUID().slice(0, 8)}`,
      team: 'support',
      agent: 'bot',
      roles: ['usage_reporter'],
    });
    const reader = token({ sub: 'reader-b', team: 'support', agent: 'bot', roles: ['approver'] });
    const refund = (amount: number) => ({ tool: 'refund', args: { order: 'A1', amount } });
    try {
      await call(counted, { url: '/decide', token: agent, body: refund(900) }, 200);
      const asked = await call(counted, { url: '/decide', token: agent, body: refund(200) }, 403);
      expect(asked.approval.requirements[0]).toMatchObject({ kind: 'budget', standing: { counted: 900 } });
      const filed = await call(counted, { url: '/approvals', token: agent, body: refund(200) }, 201);
      expect(filed.requirements[0].standing.counted).toBe(900);
      const explained = await call(counted, { url: '/explain', token: reader, body: refund(1) }, 200);
      expect(explained.trace.limits[0]).toMatchObject({ id: 'refunds-per-user', selected: true });
      await call(counted, { url: '/explain', token: reader, body: { tool: 'payout', args: { amount: 'x' } } }, 403);

      const mine = await call(counted, { url: '/budgets', token: agent }, 200);
      expect(mine.limits.length).toBeGreaterThan(0);
      await call(counted, { url: '/budgets?limit=5', token: adminToken() }, 200);
      await call(counted, { url: '/budgets?limit=0', token: adminToken() }, 400);
      await call(counted, { url: '/budgets?page=2', token: agent }, 400);

      const recorded = await call(
        counted,
        { url: '/usage', token: agent, body: { tool: 'llm', usd: 1.5 }, headers: key() },
        200,
      );
      expect(recorded.recorded[0]).toMatchObject({ id: 'model-spend', counted: 1.5 });
      await call(
        counted,
        { url: '/usage', token: agent, body: { tool: 'llm', usd: 1.5, run: { id: 'r1' } }, headers: key() },
        200,
      );
      await call(counted, { url: '/usage', token: agent, body: { tool: 'llm', usd: 1 } }, 400);
      await call(
        counted,
        { url: '/usage', token: agent, payload: '{"tool":', headers: { 'content-type': 'application/json', ...key() } },
        400,
      );
      await call(
        counted,
        { url: '/usage', token: agent, payload: 'x', headers: { 'content-type': 'text/plain', ...key() } },
        415,
      );
      await call(
        counted,
        { url: '/usage', token: agent, body: { tool: 'llm', usd: 1, pad: 'x'.repeat(1_100_000) }, headers: key() },
        413,
      );
      await call(counted, { url: '/usage', token: agent, body: { tool: 'llm', usd: '1' }, headers: key() }, 422);
      await call(counted, { url: '/usage', token: agent, body: { tool: 'llm', usd: 101 }, headers: key() }, 422);
      await call(counted, { url: '/usage', token: reader, body: { tool: 'llm', usd: 1 }, headers: key() }, 403);
      await call(
        counted,
        { url: '/usage', token: agent, body: { tool: 'llm', usd: 1, for: { user: 'u2' } }, headers: key() },
        403,
      );
      const billing = token({ sub: 'billing', roles: ['usage_billing'] });
      const forOther = await call(
        counted,
        { url: '/usage', token: billing, body: { tool: 'llm', usd: 2, for: { user: 'u2' } }, headers: key() },
        200,
      );
      expect(forOther).toMatchObject({ for: { user: 'u2' }, recorded: [{ id: 'model-spend', counted: 2 }] });
      const reused = randomUUID();
      await call(counted, { url: '/usage', token: agent, body: { tool: 'llm', usd: 1 }, headers: key(reused) }, 200);
      await call(counted, { url: '/usage', token: agent, body: { tool: 'llm', usd: 2 }, headers: key(reused) }, 422);
      // A COMMIT sent whose outcome could not be learned (docs/spec.md section 5.1.1).
      const record = vi.spyOn(counted.ctx.limits!.store, 'record').mockRejectedValueOnce(new OutcomeUnknownError());
      try {
        await call(counted, { url: '/usage', token: agent, body: { tool: 'llm', usd: 1 }, headers: key() }, 504);
      } finally {
        record.mockRestore();
      }
      // A run-scoped max_usd budget needs the report's run id.
      const dir = await mkdtemp(join(tmpdir(), 'gatehouse-openapi-usage-'));
      await writeFile(
        join(dir, 'u.yaml'),
        'policy: u\ndefault: allow\nbudgets:\n  - {id: per-run-spend, tools: llm, max_usd: 5, per: day, scope: run}\n',
      );
      const runs = await createTestApp({ policyDir: dir, env: null, database: true });
      try {
        const lost = await call(
          runs,
          { url: '/usage', token: agent, body: { tool: 'llm', usd: 1 }, headers: key() },
          422,
        );
        expect(lost).toMatchObject({ code: 'usage_unattributable', errors: [{ pointer: '/run' }] });
      } finally {
        await runs.close();
        await rm(dir, { recursive: true, force: true });
      }

      // No database: a counted call, the counters and a report are 503; a store bug is 500.
      await call(offline, { url: '/decide', token: agent, body: refund(1) }, 503);
      await call(offline, { url: '/budgets', token: agent }, 503);
      await call(offline, { url: '/usage', token: agent, body: { tool: 'llm', usd: 1 }, headers: key() }, 503);
      const store = counted.ctx.limits!.store;
      const spies = [
        vi.spyOn(store, 'read').mockRejectedValueOnce(new Error('boom')),
        vi.spyOn(store, 'record').mockRejectedValueOnce(new Error('boom')),
      ];
      try {
        await call(counted, { url: '/budgets', token: agent }, 500);
        await call(counted, { url: '/usage', token: agent, body: { tool: 'llm', usd: 1 }, headers: key() }, 500);
      } finally {
        for (const spy of spies) spy.mockRestore();
      }
    } finally {
      await Promise.all([counted.close(), offline.close()]);
    }
  });

  it('the webhooks of the document (the bodies receivers get) are sound: their examples validate', () => {
    const webhooks = (
      openApi as unknown as {
        webhooks: Record<string, { post: { requestBody: { content: Record<string, MediaTypeObject> } } }>;
      }
    ).webhooks;
    expect(Object.keys(webhooks).sort()).toEqual(['approvalEvent', 'slackMessage']);
    let count = 0;
    for (const [name, item] of Object.entries(webhooks)) {
      for (const media of Object.values(item.post.requestBody.content)) {
        const validate = compileDocumentSchema(media.schema!);
        for (const [ex, value] of Object.entries(media.examples ?? {})) {
          expect(
            validate(deref<{ value: unknown }>(value).value),
            `${name} ${ex}: ${JSON.stringify(validate.errors)}`,
          ).toBe(true);
          count++;
        }
      }
    }
    expect(count).toBe(2);
  });

  it('every documented status of every operation was seen', () => {
    const documented = openApiOperations()
      .filter(({ path }) => !isSigninRoute(path))
      .flatMap(({ path, method, operation }) =>
        Object.keys(operation.responses ?? {}).map((s) => `${method} ${path} ${s}`),
      );
    expect(documented.filter((d) => !covered.has(d))).toEqual([]);
    expect([...covered].filter((c) => !documented.includes(c) && !isSigninRoute(c.split(' ')[1]!))).toEqual([]);
  });
});

// Keep the exported surface honest: HTTP_METHODS and JsonSchema are part of the helper's API.
describe('the helper', () => {
  it('lists operations with lowercase methods', () => {
    for (const o of openApiOperations()) expect(HTTP_METHODS).toContain(o.method);
    const schema: JsonSchema = requestSchemaFor('POST', '/decide');
    expect(schema).toEqual({ $ref: 'openapi#/components/schemas/DecideRequest' });
  });
});
