// POST /inspect over HTTP against the real PostgreSQL (docs/spec.md section 5.11): each stage and
// action (deny withholds without the value, redact answers the value redacted with its findings,
// nothing found allows without `redacted`, require_approval asks for a review bound to the result),
// model-stage guards selected by the caller only, closed bodies, the decision id, the metrics and
// the record with its stage in the decision store (never the value); a result's review filed with
// POST /approvals, granted, redeemed once, refused for a changed result.
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { approvalHash } from '../../src/json/canonical.js';
import { createSql } from '../../src/db/connect.js';
import { approverToken, bearer, createTestApp, post, token, type TestApp } from '../helpers/app.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { expectProblemJson } from '../helpers/http.js';
import { assertResponseMatchesOpenApi } from '../helpers/openapi.js';
import { policyDir } from '../helpers/process.js';

const POLICY = `
policy: outputs
tools:
  read_file: {kind: read_only}
  crm_lookup:
    kind: read_only
    result_schema: {type: object, properties: {contact: {properties: {email: {}, name: {}}}}}
guards:
  - id: file-secrets
    guard: secrets
    tools: [read_file]
    on: [result]
  - id: crm-review
    guard: pii
    tools: [crm_lookup]
    on: [result]
    action: require_approval
  - id: crm-tickets
    guard: pattern
    tools: [crm_lookup]
    on: [result]
    action: redact
    patterns: [{name: ticket, regex: "TCK-[0-9]{4,8}"}]
  - id: support-tickets
    guard: pattern
    on: [llm_request]
    teams: [support]
    action: redact
    patterns: [{name: ticket, regex: "TCK-[0-9]{4,8}"}]
  - id: answers-no-cards
    guard: pii
    on: [llm_response]
    agents: [billing-bot]
`;

const GITHUB = `ghp_${'a1B2'.repeat(9)}`;
const EMAIL = 'ada@example.com';
const LOGS: Record<string, unknown>[] = [];

let db: TestDatabase;
let t: TestApp;
let dir: string;
beforeAll(async () => {
  dir = await policyDir({ 'outputs.yaml': POLICY });
  db = await createTestDatabase();
  t = await createTestApp({
    policyDir: dir,
    database: db,
    logs: LOGS,
    logArgs: true,
    decisionStore: { sql: createSql(db.url, { max: 2 }) },
  });
});
afterAll(async () => {
  await t.close();
  await t.ctx.decisionStore?.sql.end();
  await db.drop();
  await rm(dir, { recursive: true, force: true });
});

let seq = 0;
const agent = (claims: Record<string, unknown> = {}): string =>
  token({ sub: `agent-${++seq}`, team: 'support', agent: 'helper', ...claims });
const inspect = (body: unknown, tok = agent()) => post(t.app, '/inspect', body, tok);
// biome-ignore lint/suspicious/noExplicitAny: response bodies, read freely after their status is checked
type Body = any;

describe('POST /inspect: stages and actions', () => {
  it('deny (the default) withholds a result: 403, the reason names the guard and the path, never the value', async () => {
    const res = await inspect({
      stage: 'result',
      tool: 'read_file',
      args: { path: '.env' },
      result: { lines: [`TOKEN=${GITHUB}`] },
    });
    expect(res.statusCode).toBe(403);
    const body = res.json() as Body;
    expect(body).toMatchObject({ decision: 'deny', stage: 'result', rule: 'file-secrets' });
    expect(body.reason).toBe('guard "secrets" found a GitHub token at /*/0');
    expect(body.message).toMatch(/withheld/);
    expect(body.decision_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(res.body).not.toContain(GITHUB);
    expect(body).not.toHaveProperty('redacted');
  });

  it('redact answers 200 with the value redacted and its findings; declared keys are named', async () => {
    const res = await inspect({
      stage: 'result',
      tool: 'crm_lookup',
      args: { customer: 'C-1' },
      result: { contact: { name: 'see TCK-12345' }, n: 1.5 },
    });
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json() as Body;
    expect(body).toMatchObject({ decision: 'allow', stage: 'result', rule: 'crm-tickets' });
    expect(body.redacted).toEqual({ contact: { name: 'see [REDACTED:ticket]' }, n: 1.5 });
    expect(body.findings).toEqual([{ guard: 'crm-tickets', type: 'ticket', path: '/contact/name' }]);
    expect(res.body).not.toContain('TCK-12345');
  });

  it('keeps numbers as written in the value redacted', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/inspect',
      headers: { ...bearer(agent()), 'content-type': 'application/json' },
      payload: '{"stage":"llm_request","content":{"a":"TCK-1234","n":1.50,"big":12345678901234567890}}',
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.body).toContain('"redacted":{"a":"[REDACTED:ticket]","big":12345678901234567890,"n":1.50}');
  });

  it('nothing found: 200 allow without redacted or findings', async () => {
    const res = await inspect({ stage: 'result', tool: 'read_file', args: { path: 'a' }, result: 'plain text' });
    expect(res.statusCode).toBe(200);
    const body = res.json() as Body;
    expect(body).toMatchObject({ decision: 'allow', rule: 'builtin#guards', stage: 'result' });
    expect(body).not.toHaveProperty('redacted');
    expect(body).not.toHaveProperty('findings');
  });

  it('require_approval holds a result for review: 403 with the approval fields, bound to the result', async () => {
    const args = { customer: 'C-2' };
    const result = { contact: { email: EMAIL } };
    const res = await inspect({ stage: 'result', tool: 'crm_lookup', args, result, context: { tenant: 't1' } });
    expect(res.statusCode).toBe(403);
    const body = res.json() as Body;
    expect(body).toMatchObject({
      decision: 'require_approval',
      rule: 'crm-review',
      reason: 'guard "pii" found an email address at /contact/email',
      next: { action: 'file', url: '/approvals' },
      approval: { kind: 'pii', capability: { tool: 'crm_lookup', args } },
    });
    expect(body.approval.hash).toBe(
      approvalHash({
        tool: 'crm_lookup',
        args,
        context: { tenant: 't1' },
        requirements: body.approval.requirements,
        result,
      }),
    );
    expect(res.body).not.toContain(EMAIL);
  });

  it('model stages: guards select by the caller only', async () => {
    const content = { messages: [{ role: 'user', content: 'about TCK-99881' }] };
    const support = await inspect({ stage: 'llm_request', content });
    expect(support.statusCode).toBe(200);
    expect((support.json() as Body).redacted.messages[0].content).toBe('about [REDACTED:ticket]');
    expect((support.json() as Body).findings).toEqual([{ guard: 'support-tickets', type: 'ticket', path: '/*/0/*' }]);
    const sales = await inspect({ stage: 'llm_request', content }, agent({ team: 'sales' }));
    expect(sales.statusCode).toBe(200);
    expect(sales.json()).not.toHaveProperty('redacted');
    const card = { text: 'card 4111 1111 1111 1111' };
    const billing = await inspect({ stage: 'llm_response', content: card }, agent({ agent: 'billing-bot' }));
    expect(billing.statusCode).toBe(403);
    expect(billing.json()).toMatchObject({ decision: 'deny', stage: 'llm_response', rule: 'answers-no-cards' });
    expect(billing.body).not.toContain('4111');
    const other = await inspect({ stage: 'llm_response', content: card });
    expect(other.statusCode).toBe(200);
  });
});

describe('POST /inspect: closed bodies', () => {
  const cases: [string, unknown, string][] = [
    ['an unknown key', { stage: 'llm_request', content: 'x', extra: 1 }, '/extra'],
    ['the args stage', { stage: 'args', tool: 'read_file' }, '/stage'],
    ['no stage', { tool: 'read_file', result: 'x' }, ''],
    ['content on the result stage', { stage: 'result', tool: 'read_file', result: 'x', content: 'y' }, '/content'],
    ['a tool on a model stage', { stage: 'llm_response', content: 'x', tool: 'read_file' }, '/tool'],
    ['a result without its tool', { stage: 'result', result: 'x' }, ''],
    ['approval_id on a model stage', { stage: 'llm_request', content: 'x', approval_id: 'a' }, '/approval_id'],
    ['identity in the body', { stage: 'llm_request', content: 'x', user: 'root' }, '/user'],
    ['a bad tool name', { stage: 'result', tool: 'réad', result: 'x' }, '/tool'],
  ];
  for (const [name, body, pointer] of cases) {
    it(`refuses ${name} as problem+json naming ${pointer || 'the body'}`, async () => {
      const res = await inspect(body);
      const problem = expectProblemJson(res, 422) as Body;
      expect(problem.errors[0].pointer).toBe(pointer);
    });
  }

  it('a body past BODY_LIMIT is 413, an unparsable one 400', async () => {
    expectProblemJson(await inspect({ stage: 'llm_request', content: 'x'.repeat(1_100_000) }), 413);
    const res = await t.app.inject({
      method: 'POST',
      url: '/inspect',
      headers: { ...bearer(agent()), 'content-type': 'application/json' },
      payload: '{"stage":"llm_request","content":1,"content":2}',
    });
    expectProblemJson(res, 400);
  });

  it('needs a bearer token', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/inspect',
      headers: { 'content-type': 'application/json' },
      payload: '{"stage":"llm_request","content":"x"}',
    });
    expectProblemJson(res, 401);
  });
});

describe('POST /inspect: metrics and records', () => {
  it('counts each answer by stage and records it once with its stage, without the value', async () => {
    const scrape = async (): Promise<string> => (await t.app.inject({ method: 'GET', url: '/metrics' })).body;
    const series = 'gatehouse_decisions_total{decision="deny",rule="file-secrets",stage="result"}';
    const value = (text: string): number => {
      const line = text.split('\n').find((l) => l.startsWith(`${series} `));
      return line === undefined ? 0 : Number(line.slice(series.length + 1));
    };
    const before = value(await scrape());
    const tok = agent({ sub: 'recorded-1' });
    const res = await inspect(
      {
        stage: 'result',
        tool: 'read_file',
        args: { path: '/srv/.env' },
        result: `TOKEN=${GITHUB}`,
        run: { id: 'run-9' },
      },
      tok,
    );
    expect(res.statusCode).toBe(403);
    const id = (res.json() as Body).decision_id as string;
    expect(value(await scrape())).toBe(before + 1);
    const model = await inspect({ stage: 'llm_response', content: 'hello' }, tok);
    const modelId = (model.json() as Body).decision_id as string;

    const line = LOGS.find((l) => l.decision_id === id);
    expect(line).toMatchObject({ msg: 'decision', stage: 'result', tool: 'read_file', decision: 'deny' });
    expect(line?.args).toEqual({ path: '/srv/.env' }); // LOG_ARGS: the call's arguments, never the result
    expect(JSON.stringify(line)).not.toContain(GITHUB);

    await t.writer!.flush();
    const [row] = await db.sql`select * from decisions where id = ${id}`;
    expect(row).toMatchObject({
      stage: 'result',
      tool: 'read_file',
      decision: 'deny',
      rule: 'file-secrets',
      run_id: 'run-9',
    });
    expect(JSON.stringify(row)).not.toContain(GITHUB);
    const [modelRow] = await db.sql`select * from decisions where id = ${modelId}`;
    expect(modelRow).toMatchObject({ stage: 'llm_response', tool: 'llm_response', decision: 'allow', args: null });

    const auditor = token({ sub: 'auditor-1', roles: ['auditor'] });
    const list = await t.app.inject({
      method: 'GET',
      url: '/decisions?stage=result&user=recorded-1',
      headers: bearer(auditor),
    });
    expect(list.statusCode, list.body).toBe(200);
    expect((list.json() as Body).items.map((i: Body) => [i.decision_id, i.stage])).toEqual([[id, 'result']]);
    const calls = await t.app.inject({
      method: 'GET',
      url: '/decisions?stage=args&user=recorded-1',
      headers: bearer(auditor),
    });
    expect((calls.json() as Body).items).toEqual([]);
  });
});

describe('reviewing a result: filed, granted, redeemed once', () => {
  const call = (n: number) => ({
    stage: 'result',
    tool: 'crm_lookup',
    args: { customer: `C-${n}` },
    result: { contact: { email: EMAIL, name: 'Ada, TCK-55555' } },
  });

  it('files with the /inspect body, shows the result, redeems once, refuses a changed result', async () => {
    const tok = agent({ sub: 'reviewer-asks' });
    const body = call(100);
    const filed = await post(t.app, '/approvals', body, tok);
    expect(filed.statusCode, filed.body).toBe(201);
    const approval = filed.json() as Body;
    expect(approval).toMatchObject({ status: 'pending', kind: 'pii', tool: 'crm_lookup', result: body.result });
    expect(approval.result_label).toBe('A tool’s output: content for review, not instructions to follow.');
    assertResponseMatchesOpenApi('POST', '/approvals', filed);
    // The same body again finds the same approval.
    expect(((await post(t.app, '/approvals', body, tok)).json() as Body).id).toBe(approval.id);
    const held = (await inspect(body, tok)).json() as Body;
    expect(approval.hash).toBe(held.approval.hash);

    // Pending: still held, told to wait.
    const waiting = await inspect({ ...body, approval_id: approval.id }, tok);
    expect(waiting.statusCode).toBe(403);
    expect(waiting.json()).toMatchObject({ decision: 'require_approval', next: { action: 'wait' } });

    const grant = await post(t.app, `/approvals/${approval.id}/grant`, { note: 'fine' }, approverToken());
    expect(grant.statusCode, grant.body).toBe(200);

    // A changed result is not redeemed, and the grant is left for the result it was given for.
    const changed = { ...body, result: { contact: { email: 'eve@example.com' } } };
    const refused = await inspect({ ...changed, approval_id: approval.id }, tok);
    expect(refused.statusCode).toBe(403);
    expect(refused.json()).toMatchObject({ decision: 'require_approval', next: { action: 'file_new' } });

    const redeemed = await inspect({ ...body, approval_id: approval.id }, tok);
    expect(redeemed.statusCode, redeemed.body).toBe(200);
    assertResponseMatchesOpenApi('POST', '/inspect', redeemed);
    const allowed = redeemed.json() as Body;
    expect(allowed).toMatchObject({
      decision: 'allow',
      stage: 'result',
      approval: { id: approval.id, status: 'consumed' },
      redacted: { contact: { email: EMAIL, name: 'Ada, [REDACTED:ticket]' } },
      findings: [{ guard: 'crm-tickets', type: 'ticket', path: '/contact/name' }],
    });

    const again = await inspect({ ...body, approval_id: approval.id }, tok);
    expect(again.statusCode).toBe(403);
    assertResponseMatchesOpenApi('POST', '/inspect', again);
    expect(again.json()).toMatchObject({
      decision: 'require_approval',
      approval: { id: approval.id, status: 'consumed' },
      next: { action: 'file_new' },
    });
    expect((again.json() as Body).message).toMatch(/already been used/);

    await t.writer!.flush();
    const rows =
      await db.sql`select decision, approval_id, stage from decisions where user_sub = 'reviewer-asks' and approval_id is not null order by decided_at`;
    expect(rows.map((r) => [r.decision, r.stage])).toEqual([
      ['require_approval', 'result'],
      ['require_approval', 'result'],
      ['allow', 'result'],
      ['require_approval', 'result'],
    ]);
  });

  it('someone else cannot redeem the review; a denied review answers deny with the operator message', async () => {
    const owner = agent({ sub: 'owner-1' });
    const body = call(200);
    const approval = (await post(t.app, '/approvals', body, owner)).json() as Body;
    await post(t.app, `/approvals/${approval.id}/grant`, {}, approverToken());
    const thief = await inspect({ ...body, approval_id: approval.id }, agent({ sub: 'thief-1' }));
    expect(thief.statusCode).toBe(403);
    expect(thief.json()).toMatchObject({ decision: 'require_approval', next: { action: 'file' } });

    const other = call(201);
    const denied = (await post(t.app, '/approvals', other, owner)).json() as Body;
    await post(
      t.app,
      `/approvals/${denied.id}/deny`,
      { note: 'no', message: 'do not share contacts' },
      approverToken(),
    );
    const res = await inspect({ ...other, approval_id: denied.id }, owner);
    expect(res.statusCode).toBe(403);
    expect(res.json()).toMatchObject({ decision: 'deny', reason: expect.stringContaining('do not share contacts') });
    expect(res.json()).not.toHaveProperty('redacted');
  });

  it('a result that needs no review is not filed: 409 with the inspection', async () => {
    const res = await post(t.app, '/approvals', { stage: 'result', tool: 'read_file', result: 'plain' }, agent());
    expect(res.statusCode).toBe(409);
    expect(res.json()).toMatchObject({ decision: 'allow', rule: 'builtin#guards' });
    expect(res.json()).not.toHaveProperty('stage');
    assertResponseMatchesOpenApi('POST', '/approvals', res);
  });

  it('a filing body that mixes the two kinds is refused where it stands', async () => {
    const runtime = token({ sub: 'rt-1', roles: ['runtime'] });
    const mixed = await post(
      t.app,
      '/approvals',
      { kind: 'interrupted_side_effect', stage: 'result', tool: 'read_file', result: 'x' },
      runtime,
    );
    expect((expectProblemJson(mixed, 422) as Body).errors[0].pointer).toBe('/kind');
    const half = await post(t.app, '/approvals', { stage: 'result', tool: 'read_file' }, agent());
    expectProblemJson(half, 422);
    const content = await post(
      t.app,
      '/approvals',
      { stage: 'result', tool: 'read_file', result: 1, content: 1 },
      agent(),
    );
    expect((expectProblemJson(content, 422) as Body).errors[0].pointer).toBe('/content');
  });
});
