// Response headers: every answer, and first of all every one that carries a request's arguments
// (approvals, a require_approval decision, an explain trace, a conflict that embeds an approval), has
// `Cache-Control: no-store` and `X-Content-Type-Options: nosniff`, including the answers written
// before any route runs (router errors, Node's parser refusals, an Expect refusal). Two Content-Type
// headers are refused as two Authorization headers are.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { headerCount } from '../../src/http/headers.js';
import {
  adminToken,
  agentToken,
  approverToken,
  bearer,
  createTestApp,
  post,
  readerToken,
  token,
  type TestApp,
} from '../helpers/app.js';
import { listenLoopback, rawHttp } from '../helpers/http.js';

const REFUND = { tool: 'refund', args: { order: 'H1', amount: 120, note: 'ARG-VALUE-7' } };
let t: TestApp;
let port: number;
beforeAll(async () => {
  t = await createTestApp({ env: 'prod', database: true });
  port = await listenLoopback(t.app);
});
afterAll(async () => t.close());

type Headers = Record<string, string | string[] | number | undefined>;
function expectNoStore(headers: Headers, what: string): void {
  expect(headers['cache-control'], what).toBe('no-store');
  expect(headers['x-content-type-options'], what).toBe('nosniff');
}

describe('answers that carry arguments: Cache-Control: no-store, X-Content-Type-Options: nosniff', () => {
  it('decisions, explain, and every approval route, including the conflict that embeds an approval', async () => {
    const sub = `hdr-${Date.now()}`;
    const agent = token({ sub, team: 'support', agent: 'bot' });
    const seen: [string, { statusCode: number; headers: Headers; body: string }][] = [];
    const note = (what: string, res: { statusCode: number; headers: Headers; body: string }) => {
      seen.push([what, res]);
      return res;
    };
    note('/decide require_approval', await post(t.app, '/decide', REFUND, agent));
    note('/explain', await post(t.app, '/explain', REFUND, token({ sub, team: 'support', roles: ['approver'] })));
    const created = note('POST /approvals 201', await post(t.app, '/approvals', REFUND, agent));
    const id = (JSON.parse(created.body) as { id: string }).id;
    note('POST /approvals 200 (again)', await post(t.app, '/approvals', REFUND, agent));
    note('POST /approvals 409 (no approval needed)', await post(t.app, '/approvals', { tool: 'lookup_order' }, agent));
    note('GET /approvals/{id}', await t.app.inject({ method: 'GET', url: `/approvals/${id}`, headers: bearer(agent) }));
    note('GET /approvals', await t.app.inject({ method: 'GET', url: '/approvals', headers: bearer(approverToken()) }));
    note('grant', await post(t.app, `/approvals/${id}/grant`, { note: 'ok' }, approverToken()));
    note(
      'grant again: 409 with the approval',
      await post(t.app, `/approvals/${id}/grant`, {}, approverToken('operator-2')),
    );
    note(
      '/decide redeemed (allow with the approval)',
      await post(t.app, '/decide', { ...REFUND, approval_id: id }, agent),
    );
    const second = await post(t.app, '/approvals', { tool: 'refund', args: { order: 'H2', amount: 300 } }, agent);
    note(
      'deny',
      await post(
        t.app,
        `/approvals/${(JSON.parse(second.body) as { id: string }).id}/deny`,
        { reason: 'no' },
        approverToken(),
      ),
    );

    expect(seen.map(([what, res]) => [what, res.statusCode])).toEqual([
      ['/decide require_approval', 403],
      ['/explain', 403],
      ['POST /approvals 201', 201],
      ['POST /approvals 200 (again)', 200],
      ['POST /approvals 409 (no approval needed)', 409],
      ['GET /approvals/{id}', 200],
      ['GET /approvals', 200],
      ['grant', 200],
      ['grant again: 409 with the approval', 409],
      ['/decide redeemed (allow with the approval)', 200],
      ['deny', 200],
    ]);
    for (const [what, res] of seen) expectNoStore(res.headers, what);
    // They do carry the arguments (which is why they must not be stored).
    for (const what of [
      '/explain',
      'POST /approvals 201',
      'GET /approvals/{id}',
      'grant',
      'grant again: 409 with the approval',
    ]) {
      expect(seen.find(([w]) => w === what)![1].body, what).toContain('H1');
    }
  });

  it('the rest of the API too: allow and deny, /policies, problems, 404, the open routes and the page', async () => {
    const answers: [string, number, { statusCode: number; headers: Headers }][] = [
      ['/decide allow', 200, await post(t.app, '/decide', { tool: 'lookup_order' })],
      ['/decide deny', 403, await post(t.app, '/decide', { tool: 'no_such_tool' })],
      ['/policies', 200, await t.app.inject({ method: 'GET', url: '/policies', headers: bearer(readerToken()) })],
      ['/tools', 200, await t.app.inject({ method: 'GET', url: '/tools', headers: bearer(agentToken()) })],
      ['/explain 403 forbidden', 403, await post(t.app, '/explain', REFUND, agentToken())],
      [
        '/admin/reload 200',
        200,
        await t.app.inject({ method: 'POST', url: '/admin/reload', headers: bearer(adminToken()) }),
      ],
      [
        '/admin/webhooks 200',
        200,
        await t.app.inject({ method: 'GET', url: '/admin/webhooks', headers: bearer(adminToken()) }),
      ],
      ['/budgets 200', 200, await t.app.inject({ method: 'GET', url: '/budgets', headers: bearer(agentToken()) })],
      ['401', 401, await t.app.inject({ method: 'POST', url: '/decide' })],
      ['422', 422, await post(t.app, '/decide', { tool: 'lookup_/../wipe_orders' })],
      ['404 no route', 404, await t.app.inject({ method: 'GET', url: '/nowhere' })],
      [
        '400 bad URL (the router answers before any hook)',
        400,
        await t.app.inject({ method: 'GET', url: '/approvals/%E0%A4%A', headers: bearer(agentToken()) }),
      ],
      ['/healthz', 200, await t.app.inject({ method: 'GET', url: '/healthz' })],
      ['/metrics', 200, await t.app.inject({ method: 'GET', url: '/metrics' })],
      ['/openapi.yaml', 200, await t.app.inject({ method: 'GET', url: '/openapi.yaml' })],
      ['/ui', 200, await t.app.inject({ method: 'GET', url: '/ui' })],
    ];
    for (const [what, status, res] of answers) {
      expect(res.statusCode, what).toBe(status);
      expectNoStore(res.headers, what);
    }
  });

  it('answers written to the socket outside Fastify: a malformed request, and an Expect refusal', async () => {
    const malformed = await rawHttp(port, ['GET / HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n']);
    const expectation = await rawHttp(port, [
      `POST /decide HTTP/1.1\r\nHost: x\r\nConnection: close\r\nExpect: bogus\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}`,
    ]);
    for (const [what, r] of [
      ['parser refusal', malformed],
      ['Expect refusal', expectation],
    ] as const) {
      expect(r.responses, what).toHaveLength(1);
      expect(r.responses[0]!.statusCode, what).toBe(400);
      expectNoStore(r.responses[0]!.headers, what);
    }
  });
});

describe('repeated headers', () => {
  it('headerCount counts a name in any case, and only whole names', () => {
    const raw = [
      'Content-Type',
      'a',
      'content-type',
      'b',
      'X-Content-Type',
      'c',
      'Authorization',
      'd',
      'CONTENT-TYPE',
      'e',
    ];
    expect(headerCount(raw, 'content-type')).toBe(3);
    expect(headerCount(raw, 'authorization')).toBe(1);
    expect(headerCount(raw, 'host')).toBe(0);
    expect(headerCount([], 'content-type')).toBe(0);
  });

  it('two Content-Type headers are 400, two Authorization headers 401: neither is decided', async () => {
    const body = '{"tool":"lookup_order"}';
    const request = (extra: string): string =>
      `POST /decide HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer ${agentToken()}\r\nContent-Type: application/json\r\n${extra}Content-Length: ${body.length}\r\n\r\n${body}`;
    const types = await rawHttp(port, [request('Content-Type: application/json\r\n')]);
    expect(types.responses[0]!.statusCode).toBe(400);
    expect(JSON.parse(types.responses[0]!.body)).toMatchObject({
      code: 'bad_request',
      detail: 'send exactly one Content-Type header',
    });
    const auths = await rawHttp(port, [request(`Authorization: Bearer ${agentToken('other')}\r\n`)]);
    expect(auths.responses[0]!.statusCode).toBe(401);
    const one = await rawHttp(port, [request('')]);
    expect(one.responses[0]!.statusCode).toBe(200);
  });

  it('two Idempotency-Key headers are 400, before anything is redeemed', async () => {
    const body = `{"tool":"refund","args":{"order":"A1","amount":120},"approval_id":"${'0'.repeat(8)}-0000-7000-8000-000000000000"}`;
    const raw = `POST /decide HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer ${agentToken()}\r\nContent-Type: application/json\r\nIdempotency-Key: a\r\nIdempotency-Key: b\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
    const res = await rawHttp(port, [raw]);
    expect(res.responses[0]!.statusCode).toBe(400);
    expect(JSON.parse(res.responses[0]!.body)).toMatchObject({ code: 'bad_request' });
  });
});
