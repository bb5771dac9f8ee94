// The non-approval routes over HTTP: /decide's answer (docs/spec.md section 5), /explain, GET /policies,
// POST /admin/reload (success, failure that keeps the old set), the ops routes, metrics, the decision
// log and its redaction, and the fail-closed 500 of an internal failure.
import { cp, mkdtemp, readFile, rm, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { PolicySet } from '../../src/policy/model.js';
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

const SUPPORT = token({ sub: 'agent-7', team: 'support' });
/** The same caller as SUPPORT, with a role that may read /explain and /policies (rules select no roles). */
const SUPPORT_READER = token({ sub: 'agent-7', team: 'support', roles: ['approver'] });
const SMALL_REFUND = { tool: 'refund', args: { order: 'A1', amount: 40 } };
const BIG_REFUND = { tool: 'refund', args: { order: 'A1', amount: 120, note: 'customer asked twice' } };

interface DecisionBody {
  decision: string;
  reason: string;
  rule: string;
  policies: { policy: string; version?: string; digest: string }[];
  approval?: {
    kind: string;
    capability: Record<string, unknown>;
    presentation: Record<string, unknown>;
    hash: string;
    id?: string;
    status?: string;
  };
  message: string;
  decision_id: string;
  trace?: { tool: string; files: { policy: string; rules: { id: string; applies: string }[] }[] };
}

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ env: 'prod' });
});
afterAll(async () => t.close());

describe('POST /decide: the answer', () => {
  it('allow: 200 with decision, reason, rule, policies, message, decision_id and no approval', async () => {
    const res = await post(t.app, '/decide', SMALL_REFUND, SUPPORT);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    const body = res.json() as DecisionBody;
    expect(Object.keys(body).sort()).toEqual(['decision', 'decision_id', 'message', 'policies', 'reason', 'rule']);
    expect(body).toMatchObject({
      decision: 'allow',
      rule: 'refund-support',
      message: 'The "refund" action is allowed by policy.',
    });
    expect(body.policies).toEqual([
      { policy: 'payments', version: '3', digest: expect.stringMatching(/^sha256:[0-9a-f]{64}$/) },
    ]);
    expect(body.decision_id).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('require_approval: 403 with the approval descriptor from the policy', async () => {
    const res = await post(t.app, '/decide', BIG_REFUND, SUPPORT);
    expect(res.statusCode).toBe(403);
    const body = res.json() as DecisionBody;
    expect(body).toMatchObject({
      decision: 'require_approval',
      reason: 'refund over 100 needs an operator',
      rule: 'refund-support',
      approval: {
        kind: 'refund_over_cap',
        capability: { order: 'A1', amount: 120 },
        presentation: { order: 'A1', amount: 120, note: 'customer asked twice' },
        hash: expect.stringMatching(/^sha256:[0-9a-f]{64}$/),
      },
    });
    expect(body.message).toContain('"refund"');
    expect(body.message).toMatch(/operator's approval/);
    expect(body.message).toMatch(/Wait/);
    // reason and message never carry argument values
    expect(body.message).not.toContain('customer asked twice');
    expect(body.message).not.toContain('A1');
    expect(body.reason).not.toContain('A1');
  });

  it('deny: 403 with the operator reason and the "do not retry unchanged" message', async () => {
    const res = await post(t.app, '/decide', { tool: 'dispatch_vendor', args: { unitId: 'U1', estimateUsd: 5000 } });
    expect(res.statusCode).toBe(403);
    const body = res.json() as DecisionBody;
    expect(body).toMatchObject({ decision: 'deny', rule: 'vendor-hard-cap', reason: 'over the hard cap' });
    expect(body.message).toBe(
      'The "dispatch_vendor" action was not approved by policy. Reason: over the hard cap. Tell the user it was declined; do not retry it unchanged.',
    );
    expect(body).not.toHaveProperty('approval');
  });

  it('deny by the schema: "Correct the arguments and try again.", naming the path, not the value', async () => {
    const res = await post(
      t.app,
      '/decide',
      { tool: 'refund', args: { order: 'A1', amount: 'ONE-HUNDRED-AND-TWENTY' } },
      SUPPORT,
    );
    expect(res.statusCode).toBe(403);
    const body = res.json() as DecisionBody;
    expect(body.decision).toBe('deny');
    expect(body.reason).toContain('/amount');
    expect(body.message).toMatch(/Correct the arguments and try again\.$/);
    expect(res.body).not.toContain('ONE-HUNDRED-AND-TWENTY');
  });

  it('abort: 403, the run must stop', async () => {
    const res = await post(t.app, '/decide', { tool: 'wipe_orders' });
    expect(res.statusCode).toBe(403);
    const body = res.json() as DecisionBody;
    expect(body).toMatchObject({ decision: 'abort', rule: 'no-destructive-in-prod' });
    expect(body.message).toMatch(/Stop the run/);
  });

  it('abort on max_calls from the run view', async () => {
    const steps = Array.from({ length: 200 }, () => ({ tool: 'lookup_order', decision: 'allow' }));
    const res = await post(t.app, '/decide', { tool: 'lookup_order', args: {}, run: { id: 'run-1', steps } });
    expect(res.statusCode).toBe(403);
    expect(res.json()).toMatchObject({ decision: 'abort' });
  });

  it('decision_id is unique per call', async () => {
    const ids = await Promise.all(
      Array.from(
        { length: 50 },
        async () => (await post(t.app, '/decide', SMALL_REFUND, SUPPORT)).json().decision_id as string,
      ),
    );
    expect(new Set(ids).size).toBe(50);
  });

  it('with approval_id but no database: 503, never allow', async () => {
    const res = await post(
      t.app,
      '/decide',
      { ...BIG_REFUND, approval_id: '018f3c1e-7a2b-7c3d-8e4f-0123456789ab' },
      SUPPORT,
    );
    expect(res.statusCode).toBe(503);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.headers['retry-after']).toBeDefined();
  });
});

describe('POST /explain', () => {
  // /decide as the caller, /explain as the same caller holding a reader role (no rule selects roles).
  const requests = [
    { body: SMALL_REFUND, claims: { sub: 'agent-7', team: 'support' } },
    { body: BIG_REFUND, claims: { sub: 'agent-7', team: 'support' } },
    { body: SMALL_REFUND, claims: { team: 'sales' } },
    { body: { tool: 'wipe_orders' }, claims: {} },
    { body: { tool: 'lookup_order', args: { order: 'A1' } }, claims: {} },
    { body: { tool: 'send_note', args: { to: 'ops', text: 'mail jane@example.com' } }, claims: {} },
  ];
  for (const r of requests) {
    it(`same decision and status as /decide, plus a trace: ${r.body.tool}`, async () => {
      const d = await post(t.app, '/decide', r.body, token(r.claims));
      const e = await post(t.app, '/explain', r.body, token({ ...r.claims, roles: ['approver'] }));
      expect(e.statusCode).toBe(d.statusCode);
      const db = d.json() as DecisionBody;
      const eb = e.json() as DecisionBody;
      expect(eb.decision).toBe(db.decision);
      expect(eb.rule).toBe(db.rule);
      expect(eb.reason).toBe(db.reason);
      expect(eb.approval).toEqual(db.approval);
      expect(eb.trace?.tool).toBe(r.body.tool);
      expect(eb.trace?.files.map((f) => f.policy)).toEqual(['payments']);
      // Every rule of the file is in the trace, not only the candidates.
      expect(eb.trace?.files[0]?.rules.map((x) => x.id)).toEqual(
        expect.arrayContaining([
          'lookups',
          'refund-support',
          'no-wipe',
          'no-destructive-in-prod',
          'vendor-hard-cap',
          'vendor-spend-cap',
        ]),
      );
    });
  }
  it('the trace says why without quoting argument values', async () => {
    const res = await post(
      t.app,
      '/explain',
      { tool: 'refund', args: { order: 'ORDER-VALUE-9', amount: 120, note: 'NOTE-VALUE-9' } },
      SUPPORT_READER,
    );
    const body = res.json() as DecisionBody;
    const trace = JSON.stringify(body.trace);
    expect(trace).toContain('amount > 100');
    expect(trace).not.toContain('ORDER-VALUE-9');
    expect(trace).not.toContain('NOTE-VALUE-9');
    expect(body.reason).not.toContain('ORDER-VALUE-9');
    expect(body.message).not.toContain('NOTE-VALUE-9');
  });
  it('approval_id is refused: 422 with its pointer', async () => {
    const res = await post(
      t.app,
      '/explain',
      { ...BIG_REFUND, approval_id: '018f3c1e-7a2b-7c3d-8e4f-0123456789ab' },
      SUPPORT_READER,
    );
    expect(res.statusCode).toBe(422);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.json()).toMatchObject({ status: 422, errors: [{ pointer: '/approval_id' }] });
  });
});

describe('/explain and /policies need a policy reader role (POLICY_READER_ROLE)', () => {
  const explain = (app: TestApp, tok: string, payload = JSON.stringify(BIG_REFUND)) =>
    app.app.inject({
      method: 'POST',
      url: '/explain',
      headers: { ...bearer(tok), 'content-type': 'application/json' },
      payload,
    });
  const policies = (app: TestApp, tok: string) =>
    app.app.inject({ method: 'GET', url: '/policies', headers: bearer(tok) });
  const expectForbidden = (res: Awaited<ReturnType<typeof policies>>, detail: RegExp): void => {
    expect(res.statusCode, res.body).toBe(403);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    const body = res.json() as Record<string, unknown>;
    expect(body).toMatchObject({ status: 403, code: 'forbidden', detail: expect.stringMatching(detail) });
    // Nothing of the policies: no trace, no decision, no files.
    for (const key of ['trace', 'decision', 'rule', 'files', 'env']) expect(body).not.toHaveProperty(key);
  };

  it('an agent token (no role, or an unrelated one) is 403 on both, with nothing of the policies', async () => {
    for (const tok of [SUPPORT, agentToken(), token({ roles: ['Approver'] }), token({ roles: ['admins', 'reader'] })]) {
      expectForbidden(await explain(t, tok), /needs one of the roles "admin", "approver"/);
      expectForbidden(await policies(t, tok), /needs one of the roles "admin", "approver"/);
    }
  });

  it('the role is checked before the body is read: a malformed or invalid body from an agent is 403, not 400 or 422', async () => {
    expectForbidden(await explain(t, SUPPORT, '{"tool":'), /roles/);
    expectForbidden(
      await explain(t, SUPPORT, JSON.stringify({ tool: 'lookup_/../wipe_orders', team: 'ops' })),
      /roles/,
    );
  });

  it('by default the admin and the approver roles may read both', async () => {
    for (const tok of [adminToken(), approverToken(), readerToken({ roles: ['other', 'admin'] })]) {
      const e = await explain(t, tok);
      expect(e.statusCode, e.body).toBe(403); // a non-allow decision, with its trace
      expect(e.json()).toHaveProperty('trace');
      expect((await policies(t, tok)).statusCode).toBe(200);
    }
  });

  it('POLICY_READER_ROLE replaces the default: only the roles it lists may read', async () => {
    const custom = await createTestApp({ env: 'prod', policyReaderRoles: ['auditor', 'policy-author'] });
    try {
      for (const tok of [adminToken(), approverToken(), SUPPORT]) {
        expectForbidden(await explain(custom, tok), /needs one of the roles "auditor", "policy-author"/);
        expectForbidden(await policies(custom, tok), /needs one of the roles "auditor", "policy-author"/);
      }
      for (const role of ['auditor', 'policy-author']) {
        expect((await explain(custom, readerToken({ roles: [role] }))).json()).toHaveProperty('trace');
        expect((await policies(custom, readerToken({ roles: [role] }))).statusCode).toBe(200);
      }
      // /decide needs no role, as before.
      expect((await post(custom.app, '/decide', SMALL_REFUND, SUPPORT)).statusCode).toBe(200);
    } finally {
      await custom.close();
    }
  });

  it('one reader role names it alone', async () => {
    const custom = await createTestApp({ env: 'prod', policyReaderRoles: ['auditor'] });
    try {
      expectForbidden(await policies(custom, SUPPORT), /^this needs the role "auditor"$/);
    } finally {
      await custom.close();
    }
  });
});

describe('GET /policies', () => {
  it('lists the files with identity, digest, load time and no reload error', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/policies', headers: bearer(readerToken()) });
    expect(res.statusCode).toBe(200);
    const body = res.json() as {
      env: string;
      loaded_at: string;
      files: { path: string; policy: string; version: string; digest: string }[];
      last_reload_error: unknown;
    };
    expect(body.env).toBe('prod');
    expect(new Date(body.loaded_at).toISOString()).toBe(body.loaded_at);
    expect(body.files).toHaveLength(1);
    expect(body.files[0]).toMatchObject({
      policy: 'payments',
      version: '3',
      digest: expect.stringMatching(/^sha256:[0-9a-f]{64}$/),
    });
    expect(body.files[0]?.path).toBe('payments.yaml'); // relative to POLICY_DIR (./policies here)
    expect(body.last_reload_error).toBeNull();
    // The digest is the one decisions record.
    const d = (await post(t.app, '/decide', SMALL_REFUND, SUPPORT)).json() as DecisionBody;
    expect(d.policies[0]?.digest).toBe(body.files[0]?.digest);
  });
});

describe('GET /policies names files relative to POLICY_DIR, never where it is on the host', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'gatehouse-where-'));
    await cp('test/cases/payments', dir, { recursive: true });
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));
  const filesOf = async (app: TestApp) => {
    const res = await app.app.inject({ method: 'GET', url: '/policies', headers: bearer(readerToken()) });
    expect(res.statusCode).toBe(200);
    expect(res.body).not.toContain(tmpdir());
    return (res.json() as { files: { path: string }[] }).files.map((f) => f.path);
  };

  it('an absolute directory: the file names in it', async () => {
    const a = await createTestApp({ policyDir: dir, env: 'prod' });
    try {
      expect(await filesOf(a)).toEqual(['payments.yaml']);
    } finally {
      await a.close();
    }
  });

  it('a directory written with a trailing slash and dot segments: the same names', async () => {
    const a = await createTestApp({ policyDir: `${dir}/./`, env: 'prod' });
    try {
      expect(await filesOf(a)).toEqual(['payments.yaml']);
    } finally {
      await a.close();
    }
  });

  it('POLICY_DIR that is one file: its file name', async () => {
    const a = await createTestApp({ policyDir: join(dir, 'payments.yaml'), env: 'prod' });
    try {
      expect(await filesOf(a)).toEqual(['payments.yaml']);
    } finally {
      await a.close();
    }
  });

  it('a failed reload names the files it blames relative to POLICY_DIR too, also the other file of a cross-file problem', async () => {
    const d = await mkdtemp(join(tmpdir(), 'gatehouse-where-reload-'));
    try {
      await writeFile(join(d, 'a.yaml'), 'policy: same\n');
      const a = await createTestApp({ policyDir: d, env: null });
      try {
        await writeFile(join(d, 'b.yaml'), 'policy: same\n');
        await writeFile(join(d, 'c.yaml'), 'policy: c\nrules:\n  - tools: [x]\n    allow: true\n    alow: false\n');
        const bad = await a.app.inject({ method: 'POST', url: '/admin/reload', headers: bearer(adminToken()) });
        expect(bad.statusCode).toBe(422);
        expect(bad.body).not.toContain(d);
        const listed = await a.app.inject({ method: 'GET', url: '/policies', headers: bearer(readerToken()) });
        expect(listed.body).not.toContain(d);
        const problems = (listed.json() as { last_reload_error: { problems: string[] } }).last_reload_error.problems;
        expect(problems).toEqual([
          expect.stringMatching(/^b\.yaml:1:\d+: policy: this policy name is also used by a\.yaml$/),
          expect.stringMatching(/^c\.yaml:5:\d+: rules\.0\.alow: /),
        ]);
      } finally {
        await a.close();
      }
    } finally {
      await rm(d, { recursive: true, force: true });
    }
  });
});

describe('POST /admin/reload', () => {
  let dir: string;
  let r: TestApp;
  const logs: Record<string, unknown>[] = [];
  const policiesOf = async () =>
    (await r.app.inject({ method: 'GET', url: '/policies', headers: bearer(readerToken()) })).json() as {
      loaded_at: string;
      files: { path: string; digest: string }[];
      last_reload_error: null | { at: string; problems: string[] };
    };
  const reload = (tok = adminToken()) => r.app.inject({ method: 'POST', url: '/admin/reload', headers: bearer(tok) });
  const metricValue = async (line: RegExp): Promise<number> => {
    const text = (await r.app.inject({ method: 'GET', url: '/metrics' })).body;
    const m = text.split('\n').find((l) => line.test(l));
    return m === undefined ? 0 : Number(m.split(' ').at(-1));
  };

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'gatehouse-reload-'));
    await cp('test/cases/payments', dir, { recursive: true });
    r = await createTestApp({ policyDir: dir, env: 'prod', logs });
  });
  afterAll(async () => {
    await r.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('needs role admin: 403 for an agent and for an approver', async () => {
    for (const tok of [
      agentToken(),
      approverToken(),
      token({ roles: ['Admin'] }),
      token({ roles: ['administrator'] }),
    ]) {
      const res = await reload(tok);
      expect(res.statusCode).toBe(403);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    }
    // Before any body is read: a malformed one from a non-admin is still 403, not 400.
    const malformed = await r.app.inject({
      method: 'POST',
      url: '/admin/reload',
      headers: { ...bearer(agentToken()), 'content-type': 'application/json' },
      payload: '{"x":',
    });
    expect(malformed.statusCode).toBe(403);
  });

  it('succeeds: a changed file gives a new digest and new decisions; then a broken file keeps the old set', async () => {
    const before = await policiesOf();
    expect((await post(r.app, '/decide', SMALL_REFUND, SUPPORT)).json()).toMatchObject({ decision: 'allow' });

    // Edit: refunds over 10 (instead of 100) now need an operator.
    const file = join(dir, 'payments.yaml');
    const original = await readFile(file, 'utf8');
    const edited = original.replace('confirm: "amount > 100"', 'confirm: "amount > 10"');
    expect(edited).not.toBe(original);
    await writeFile(file, edited);
    const successesBefore = await metricValue(/^gatehouse_policy_reloads_total\{result="success"\}/);

    const ok = await reload();
    expect(ok.statusCode).toBe(200);
    expect(ok.json()).toMatchObject({ reloaded: true, last_reload_error: null });
    const after = await policiesOf();
    expect(after.files[0]?.digest).not.toBe(before.files[0]?.digest);
    expect(Date.parse(after.loaded_at)).toBeGreaterThanOrEqual(Date.parse(before.loaded_at));
    const d = (await post(r.app, '/decide', SMALL_REFUND, SUPPORT)).json() as DecisionBody;
    expect(d).toMatchObject({ decision: 'require_approval', rule: 'refund-support' });
    expect(d.policies[0]?.digest).toBe(after.files[0]?.digest);
    expect(await metricValue(/^gatehouse_policy_reloads_total\{result="success"\}/)).toBe(successesBefore + 1);
    expect(logs.some((l) => l.msg === 'policies reloaded')).toBe(true);

    // Break it: a second file with an unknown key. The reload fails and the old (edited) set serves.
    await writeFile(
      join(dir, 'broken.yaml'),
      'policy: broken\nrules:\n  - tools: [lookup_order]\n    allow: true\n    alow: false\n',
    );
    const failuresBefore = await metricValue(/^gatehouse_policy_reloads_total\{result="failure"\}/);
    const bad = await reload();
    expect(bad.statusCode).toBe(422);
    expect(bad.headers['content-type']).toMatch(/^application\/problem\+json/);
    const badBody = bad.json() as {
      status: number;
      code: string;
      files: { digest: string }[];
      last_reload_error: { problems: string[] };
    };
    expect(badBody).toMatchObject({ status: 422, code: 'reload_failed' });
    expect(badBody.files.map((f) => f.digest)).toEqual([after.files[0]?.digest]);
    expect(badBody.last_reload_error.problems.join('\n')).toMatch(/broken\.yaml:5:\d+: /);

    const failed = await policiesOf();
    expect(failed.files.map((f) => f.digest)).toEqual(after.files.map((f) => f.digest));
    expect(failed.loaded_at).toBe(after.loaded_at);
    expect(failed.last_reload_error).not.toBeNull();
    expect(failed.last_reload_error?.problems.some((p) => /broken\.yaml:\d+:\d+: /.test(p))).toBe(true);
    expect(new Date(failed.last_reload_error!.at).toISOString()).toBe(failed.last_reload_error!.at);
    // Still the previous set: the edited rule decides.
    expect((await post(r.app, '/decide', SMALL_REFUND, SUPPORT)).json()).toMatchObject({
      decision: 'require_approval',
    });
    expect(await metricValue(/^gatehouse_policy_reloads_total\{result="failure"\}/)).toBe(failuresBefore + 1);
    expect(logs.some((l) => typeof l.msg === 'string' && l.msg.startsWith('policy reload failed'))).toBe(true);
    const ready = (await r.app.inject({ method: 'GET', url: '/readyz' })).json() as {
      policies: { reload_error: boolean };
    };
    expect(ready.policies.reload_error).toBe(true);

    // Fix it and reload: the error is cleared and the original rule is back.
    await unlink(join(dir, 'broken.yaml'));
    await writeFile(file, original);
    const fixed = await reload();
    expect(fixed.statusCode).toBe(200);
    const cleared = await policiesOf();
    expect(cleared.last_reload_error).toBeNull();
    expect(cleared.files[0]?.digest).toBe(before.files[0]?.digest);
    expect((await post(r.app, '/decide', SMALL_REFUND, SUPPORT)).json()).toMatchObject({ decision: 'allow' });
  });
});

describe('ops routes (no token)', () => {
  it('/healthz is 200 without a token', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/healthz' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ status: 'ok' });
  });
  it('/readyz without a database is 503 naming it not_configured', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/readyz' });
    expect(res.statusCode).toBe(503);
    expect(res.json()).toMatchObject({
      status: 'not_ready',
      database: 'not_configured',
      policies: { status: 'ok', files: 1 },
    });
  });
  it('/readyz with a database is 200', async () => {
    const withDb = await createTestApp({ env: 'prod', database: true });
    try {
      const res = await withDb.app.inject({ method: 'GET', url: '/readyz' });
      expect(res.statusCode).toBe(200);
      expect(res.json()).toMatchObject({ status: 'ready', database: 'ok' });
    } finally {
      await withDb.close();
    }
  });
  it('/openapi.yaml is served without a token: the file on disk', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/openapi.yaml' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/yaml/);
    expect(res.body).toBe(await readFile('openapi.yaml', 'utf8'));
  });
  it('/openapi.yaml is an OpenAPI 3 document naming every route', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/openapi.yaml' });
    expect(res.body).toMatch(/^openapi: ["']?3\./m);
    for (const path of [
      '/decide',
      '/explain',
      '/policies',
      '/admin/reload',
      '/approvals',
      '/approvals/{id}',
      '/approvals/{id}/grant',
      '/approvals/{id}/deny',
      '/healthz',
      '/readyz',
      '/metrics',
    ]) {
      expect(res.body).toContain(`${path}:`);
    }
  });
  it('an unknown route is 404 problem+json (with or without a token)', async () => {
    for (const headers of [{}, bearer(agentToken())]) {
      const res = await t.app.inject({ method: 'GET', url: '/nope', headers });
      expect(res.statusCode).toBe(404);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.json()).toMatchObject({
        status: 404,
        type: expect.any(String),
        title: expect.any(String),
        detail: expect.any(String),
      });
    }
  });
  it('a wrong method on a known route is a 4xx problem+json', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/decide', headers: bearer(agentToken()) });
    expect(res.statusCode).toBeGreaterThanOrEqual(400);
    expect(res.statusCode).toBeLessThan(500);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  });
});

describe('/metrics', () => {
  it('counts decisions by decision and rule, times them, and reports the policy set age', async () => {
    const m = await createTestApp({ env: 'prod' });
    try {
      const scrape = async () => (await m.app.inject({ method: 'GET', url: '/metrics' })).body;
      const value = (text: string, series: string): number => {
        const line = text.split('\n').find((l) => l.startsWith(`${series} `));
        return line === undefined ? 0 : Number(line.slice(series.length + 1));
      };
      const lookups = 'gatehouse_decisions_total{decision="allow",rule="lookups"}';
      const first = await scrape();
      expect(value(first, lookups)).toBe(0);
      for (let i = 0; i < 3; i++) await post(m.app, '/decide', { tool: 'lookup_order', args: { order: 'A1' } });
      await post(m.app, '/decide', { tool: 'wipe_orders' });
      const res = await m.app.inject({ method: 'GET', url: '/metrics' });
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toMatch(/^text\/plain/);
      const text = res.body;
      expect(value(text, lookups)).toBe(3);
      expect(value(text, 'gatehouse_decisions_total{decision="abort",rule="no-destructive-in-prod"}')).toBe(1);
      expect(text).toContain('# TYPE gatehouse_decide_duration_seconds histogram');
      expect(value(text, 'gatehouse_decide_duration_seconds_count')).toBe(4);
      expect(text).toMatch(/^gatehouse_decide_duration_seconds_bucket\{le="\+Inf"\} 4$/m);
      expect(text).toContain('# TYPE gatehouse_policy_set_age_seconds gauge');
      expect(value(text, 'gatehouse_policy_set_age_seconds')).toBeGreaterThanOrEqual(0);
      expect(value(text, 'gatehouse_policy_files')).toBe(1);
      // A reload is counted by result.
      expect(
        (await m.app.inject({ method: 'POST', url: '/admin/reload', headers: bearer(adminToken()) })).statusCode,
      ).toBe(200);
      expect(value(await scrape(), 'gatehouse_policy_reloads_total{result="success"}')).toBe(1);
    } finally {
      await m.close();
    }
  });
});

describe('the decision log', () => {
  const SECRETS = {
    password: 'CANARY-pw-1',
    api_key: 'CANARY-key-2',
    clientSecret: 'CANARY-cs-3',
    headers: { Authorization: 'Bearer CANARY-auth-4', Cookie: 'sid=CANARY-cookie-5', accept: 'text/plain' },
    list: [{ access_token: 'CANARY-tok-6' }],
  };
  const ARGS = { order: 'ORDER-PLAIN-VALUE', ...SECRETS };

  it('exactly one line per /decide, with the decision fields and no argument values', async () => {
    const logs: Record<string, unknown>[] = [];
    const l = await createTestApp({ env: 'prod', logs });
    try {
      const res = await post(
        l.app,
        '/decide',
        { tool: 'lookup_order', args: ARGS },
        token({ sub: 'agent-9', team: 'support', agent: 'bot-3' }),
      );
      expect(res.statusCode).toBe(200);
      const id = (res.json() as DecisionBody).decision_id;
      const lines = logs.filter((x) => x.msg === 'decision');
      expect(lines).toHaveLength(1);
      const line = lines[0]!;
      expect(line).toMatchObject({
        decision_id: id,
        tool: 'lookup_order',
        decision: 'allow',
        rule: 'lookups',
        policies: [expect.stringMatching(/^sha256:[0-9a-f]{64}$/)],
        user: 'agent-9',
        team: 'support',
        agent: 'bot-3',
      });
      expect(typeof line.duration_us).toBe('number');
      expect(line).not.toHaveProperty('args');
      const everything = JSON.stringify(logs);
      expect(everything).not.toContain('ORDER-PLAIN-VALUE');
      expect(everything).not.toContain('CANARY');
      // A refused body and an explain produce no decision line.
      await post(l.app, '/decide', { tool: 'lookup_order', team: 'x' });
      expect((await post(l.app, '/explain', { tool: 'lookup_order' }, readerToken())).statusCode).toBe(200);
      expect(logs.filter((x) => x.msg === 'decision')).toHaveLength(1);
      // Another decision, another line, another id.
      await post(l.app, '/decide', { tool: 'wipe_orders' });
      const all = logs.filter((x) => x.msg === 'decision');
      expect(all).toHaveLength(2);
      expect(all[1]).toMatchObject({ decision: 'abort', tool: 'wipe_orders' });
      expect(all[1]!.decision_id).not.toBe(id);
    } finally {
      await l.close();
    }
  });

  it('with logArgs: the arguments are logged, secret-named keys redacted at any depth', async () => {
    const logs: Record<string, unknown>[] = [];
    const l = await createTestApp({ env: 'prod', logs, logArgs: true });
    try {
      await post(l.app, '/decide', { tool: 'lookup_order', args: ARGS });
      const lines = logs.filter((x) => x.msg === 'decision');
      expect(lines).toHaveLength(1);
      expect(lines[0]!.args).toEqual({
        order: 'ORDER-PLAIN-VALUE',
        password: '[redacted]',
        api_key: '[redacted]',
        clientSecret: '[redacted]',
        headers: { Authorization: '[redacted]', Cookie: '[redacted]', accept: 'text/plain' },
        list: [{ access_token: '[redacted]' }],
      });
      expect(JSON.stringify(logs)).not.toContain('CANARY');
    } finally {
      await l.close();
    }
  });

  it('with logArgs: a __proto__ key is logged as data and pollutes nothing', async () => {
    const logs: Record<string, unknown>[] = [];
    const l = await createTestApp({ env: 'prod', logs, logArgs: true });
    try {
      const res = await l.app.inject({
        method: 'POST',
        url: '/decide',
        headers: { ...bearer(agentToken()), 'content-type': 'application/json' },
        payload: '{"tool":"lookup_order","args":{"__proto__":{"polluted":"yes","password":"CANARY-x"}}}',
      });
      expect(res.statusCode).toBe(200);
      const line = logs.find((x) => x.msg === 'decision')!;
      expect(Object.hasOwn(line.args as object, '__proto__')).toBe(true);
      expect(JSON.stringify(line.args)).toBe('{"__proto__":{"polluted":"yes","password":"[redacted]"}}');
      expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    } finally {
      await l.close();
    }
  });
});

describe('an internal failure while deciding', () => {
  it('answers 500 problem+json with decision deny and nothing allowed, on /decide and /explain', async () => {
    const logs: Record<string, unknown>[] = [];
    const f = await createTestApp({ env: 'prod', logs });
    try {
      const real = f.ctx.policies.current();
      const broken: PolicySet = {
        ...real,
        plan: () => {
          throw new Error('SECRET-INTERNAL-DETAIL');
        },
      };
      const spy = vi.spyOn(f.ctx.policies, 'current').mockReturnValue(broken);
      for (const url of ['/decide', '/explain']) {
        const res = await post(f.app, url, { tool: 'lookup_order', args: { order: 'A1' } }, readerToken());
        expect(res.statusCode).toBe(500);
        expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
        const body = res.json() as Record<string, unknown>;
        expect(body).toMatchObject({
          status: 500,
          decision: 'deny',
          type: expect.any(String),
          title: expect.any(String),
          detail: expect.any(String),
        });
        expect(res.body).not.toContain('SECRET-INTERNAL-DETAIL');
        expect(res.body).not.toContain('"allow"');
      }
      spy.mockRestore();
      expect((await post(f.app, '/decide', { tool: 'lookup_order' })).statusCode).toBe(200);
    } finally {
      await f.close();
    }
  });

  it('a throw from the policy accessor itself is a 500 problem too, never a 2xx', async () => {
    const f = await createTestApp({ env: 'prod' });
    try {
      const spy = vi.spyOn(f.ctx.policies, 'current').mockImplementation(() => {
        throw new Error('SECRET-INTERNAL-DETAIL');
      });
      const res = await post(f.app, '/decide', { tool: 'lookup_order' });
      expect(res.statusCode).toBe(500);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.body).not.toContain('SECRET-INTERNAL-DETAIL');
      spy.mockRestore();
    } finally {
      await f.close();
    }
  });
});

describe("query integers: decimal digits only, never Number()'s other spellings", () => {
  // This app has no database: a query that passes validation reaches the route, which answers 503.
  const id = '01a229a0-b317-7358-a43d-8cad50a73af6';
  const refused: [string, string][] = [
    [`/approvals/${id}?wait=0x3`, '/wait'],
    [`/approvals/${id}?wait=1e1`, '/wait'],
    [`/approvals/${id}?wait=3.0`, '/wait'],
    [`/approvals/${id}?wait=%203`, '/wait'],
    [`/approvals/${id}?wait=%2B3`, '/wait'],
    [`/approvals/${id}?wait=`, '/wait'],
    ['/approvals?limit=0x10', '/limit'],
    ['/approvals?limit=1e1', '/limit'],
  ];
  for (const [url, pointer] of refused) {
    it(`${url} → 400 naming ${pointer}`, async () => {
      const res = await t.app.inject({ method: 'GET', url, headers: bearer(approverToken()) });
      expect(res.statusCode, res.body).toBe(400);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.json()).toMatchObject({
        code: 'invalid_query',
        errors: [{ pointer, message: 'must be an integer written in decimal digits' }],
      });
    });
  }
  for (const url of [`/approvals/${id}?wait=3`, `/approvals/${id}?wait=007`, '/approvals?limit=10']) {
    it(`${url} passes validation (control)`, async () => {
      const res = await t.app.inject({ method: 'GET', url, headers: bearer(approverToken()) });
      expect(res.statusCode, res.body).toBe(503);
    });
  }
  it('a decimal integer out of range is still refused by the schema, naming the parameter', async () => {
    const res = await t.app.inject({
      method: 'GET',
      url: `/approvals/${id}?wait=61`,
      headers: bearer(approverToken()),
    });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ code: 'invalid_query', errors: [{ pointer: '/wait' }] });
  });
});
