// A runtime's approval for a call a crash interrupted (docs/spec.md section 5.4), over HTTP against
// the real PostgreSQL: filed by RUNTIME_ROLE only, not decided; redeemed on resume only when the
// policy allows the call (reading `$approval`) or asks for exactly that approval; a policy asking its
// own approval leaves it granted; `$approval` absent for anything but the caller's granted, unexpired
// approval of exactly this call.
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { approvalHash } from '../../src/json/canonical.js';
import { approverToken, bearer, createTestApp, post, token, type TestApp } from '../helpers/app.js';
import { expectProblemJson } from '../helpers/http.js';
import { policyDir } from '../helpers/process.js';

const POLICY = `
policy: recovery
tools:
  send_email: {kind: remote_mutation}
  wire: {kind: remote_mutation}
  retry_job: {kind: remote_mutation}
rules:
  - id: resume-after-crash
    tools: [send_email]
    allow: true
    when: '$approval.kind == "interrupted_side_effect"'
  - id: wires-ask
    tools: [wire]
    allow: true
    confirm: true
    reason: every wire needs an operator
    approval: {kind: wire_transfer, capability: [to, amount], presentation: [to, amount]}
  - id: retry-once-after-crash
    tools: [retry_job]
    allow: true
    when: '$run.approvals.0.kind == "interrupted_side_effect" and $run.approvals.0.tool == "retry_job" and count($run.approvals, "retry_job") < 2'
`;

let t: TestApp;
let dir: string;
beforeAll(async () => {
  dir = await policyDir({ 'recovery.yaml': POLICY });
  t = await createTestApp({ policyDir: dir, database: true });
});
afterAll(async () => {
  await t.close();
  await rm(dir, { recursive: true, force: true });
});

let seq = 0;
const runtime = (sub = `runtime-${++seq}`): string => token({ sub, team: 'ops', roles: ['runtime'] });
const email = () => ({ to: `ops-${++seq}@example.com`, subject: 'nightly report' });

interface Approval {
  id: string;
  status: string;
  kind: string;
  hash: string;
  rule: string;
  capability: unknown;
  presentation: unknown;
  requirements: { policy: string; rule: string; kind: string }[];
}

async function file(tok: string, call: Record<string, unknown>): Promise<Approval> {
  const res = await post(t.app, '/approvals', { kind: 'interrupted_side_effect', ...call }, tok);
  expect(res.statusCode, res.body).toBe(201);
  return res.json() as Approval;
}
async function granted(tok: string, call: Record<string, unknown>): Promise<Approval> {
  const a = await file(tok, call);
  const res = await post(t.app, `/approvals/${a.id}/grant`, { note: 'it did not run' }, approverToken());
  expect(res.statusCode, res.body).toBe(200);
  return a;
}
const decide = (tok: string, body: Record<string, unknown>) => post(t.app, '/decide', body, tok);
const statusOf = async (id: string, tok: string): Promise<string> => {
  const res = await t.app.inject({ method: 'GET', url: `/approvals/${id}`, headers: bearer(tok) });
  return (res.json() as Approval).status;
};

describe('filing an interrupted_side_effect approval', () => {
  it('a runtime files it without a decision: capability and presentation are {tool, args}, hashed as section 4.3', async () => {
    const args = email();
    const a = await file(runtime(), { tool: 'send_email', args, run: { id: 'run-1' } });
    expect(a).toMatchObject({
      status: 'pending',
      kind: 'interrupted_side_effect',
      rule: 'runtime#interrupted_side_effect',
    });
    const shape = { tool: 'send_email', args };
    expect(a.capability).toEqual(shape);
    expect(a.presentation).toEqual(shape);
    expect(a.requirements).toMatchObject([{ policy: 'runtime', rule: 'runtime#interrupted_side_effect' }]);
    expect(a.hash).toBe(
      approvalHash({
        tool: 'send_email',
        args,
        kind: 'interrupted_side_effect',
        capability: shape,
        presentation: shape,
      }),
    );
  });

  it('is filed even for a call the policy would deny now: the policy decides on resume', async () => {
    const a = await file(runtime(), { tool: 'not_in_any_catalogue', args: {} });
    expect(a.status).toBe('pending');
  });

  it('the same call filed twice by the same runtime is the same approval (200)', async () => {
    const tok = runtime();
    const call = { tool: 'send_email', args: email() };
    const a = await file(tok, call);
    const res = await post(t.app, '/approvals', { kind: 'interrupted_side_effect', ...call }, tok);
    expect(res.statusCode).toBe(200);
    expect((res.json() as Approval).id).toBe(a.id);
  });

  it('any caller without RUNTIME_ROLE is refused (403), an approver included', async () => {
    const body = { kind: 'interrupted_side_effect', tool: 'send_email', args: email() };
    expectProblemJson(await post(t.app, '/approvals', body, token({ sub: 'agent-x' })), 403);
    expectProblemJson(await post(t.app, '/approvals', body, approverToken()), 403);
  });

  it('any other kind is refused (422), for a runtime too', async () => {
    for (const kind of ['remote_mutation', 'Interrupted_side_effect', '', 1, null]) {
      const res = await post(t.app, '/approvals', { kind, tool: 'send_email', args: email() }, runtime());
      const problem = expectProblemJson(res, 422);
      expect(problem.errors).toEqual([expect.objectContaining({ pointer: '/kind' })]);
    }
  });
});

describe('resuming with the approval', () => {
  it('the operator’s yes suffices where the policy reads $approval: allowed once, the approval consumed', async () => {
    const tok = runtime();
    const call = { tool: 'send_email', args: email(), context: { repo: 'acme/api' } };
    const a = await granted(tok, call);
    const res = await decide(tok, { ...call, approval_id: a.id });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({
      decision: 'allow',
      rule: 'resume-after-crash',
      approval: { id: a.id, status: 'consumed', kind: 'interrupted_side_effect' },
    });
    expect(await statusOf(a.id, tok)).toBe('consumed');
    // Again: the approval is spent, $approval is absent, the policy's default asks.
    const again = await decide(tok, { ...call, approval_id: a.id });
    expect(again.statusCode).toBe(403);
    expect(again.json()).toMatchObject({ decision: 'require_approval', approval: { kind: 'remote_mutation' } });
  });

  it('a retry under the same Idempotency-Key gets the first allow, though the approval is now consumed', async () => {
    const tok = runtime();
    const call = { tool: 'send_email', args: email() };
    const a = await granted(tok, call);
    const keyed = () =>
      t.app.inject({
        method: 'POST',
        url: '/decide',
        headers: { ...bearer(tok), 'content-type': 'application/json', 'idempotency-key': `resume-${a.id}` },
        payload: JSON.stringify({ ...call, approval_id: a.id }),
      });
    const first = await keyed();
    expect(first.statusCode, first.body).toBe(200);
    const retry = await keyed();
    expect(retry.statusCode, retry.body).toBe(200);
    expect(retry.headers['idempotent-replayed']).toBe('true');
    expect(retry.json()).toMatchObject({
      decision: 'allow',
      decision_id: (first.json() as { decision_id: string }).decision_id,
      approval: { id: a.id, status: 'consumed' },
    });
    // Without the key, the spent approval allows nothing.
    expect((await decide(tok, { ...call, approval_id: a.id })).statusCode).toBe(403);
  });

  it('a policy that asks its own approval gets it asked: the crash approval stays granted, unconsumed', async () => {
    const tok = runtime();
    const call = { tool: 'wire', args: { to: 'ACME', amount: 10 } };
    const a = await granted(tok, call);
    const res = await decide(tok, { ...call, approval_id: a.id });
    expect(res.statusCode).toBe(403);
    expect(res.json()).toMatchObject({
      decision: 'require_approval',
      rule: 'wires-ask',
      approval: { kind: 'wire_transfer' },
      next: { action: 'file_new' },
    });
    expect(await statusOf(a.id, tok)).toBe('granted');
  });

  it('without approval_id, or citing a pending one, $approval is absent: the policy asks as always', async () => {
    const tok = runtime();
    const call = { tool: 'send_email', args: email() };
    const a = await file(tok, call);
    for (const body of [call, { ...call, approval_id: a.id }]) {
      const res = await decide(tok, body);
      expect(res.statusCode).toBe(403);
      expect(res.json()).toMatchObject({ decision: 'require_approval', approval: { kind: 'remote_mutation' } });
    }
    expect(await statusOf(a.id, tok)).toBe('pending');
  });

  it('$approval is absent for another caller’s, an expired, or another call’s approval (fails closed)', async () => {
    const owner = runtime();
    const call = { tool: 'send_email', args: email(), context: { repo: 'acme/api' } };
    const a = await granted(owner, call);
    const refused = async (tok: string, body: Record<string, unknown>) => {
      const res = await decide(tok, { ...body, approval_id: a.id });
      expect(res.statusCode, JSON.stringify(body)).toBe(403);
      expect(res.json()).toMatchObject({ decision: 'require_approval', rule: 'recovery#default' });
    };
    await refused(runtime(), call); // another runtime
    await refused(owner, { ...call, args: { ...call.args, subject: 'other' } }); // other args
    await refused(owner, { ...call, context: { repo: 'acme/web' } }); // other context
    await refused(owner, { tool: call.tool, args: call.args }); // no context
    expect(await statusOf(a.id, owner)).toBe('granted');
    await t.db!.sql`update approvals set expires_at = now() - interval '1 second' where id = ${a.id}`;
    await refused(owner, call); // expired
    expect(await statusOf(a.id, owner)).toBe('expired');
  });
});

describe('$run.approvals', () => {
  it('is readable by conditions: kind, tool, and count()', async () => {
    const tok = runtime();
    const crash = { id: 'a1', kind: 'interrupted_side_effect', status: 'granted', tool: 'retry_job' };
    const once = await decide(tok, { tool: 'retry_job', args: {}, run: { id: 'r', approvals: [crash] } });
    expect(once.statusCode, once.body).toBe(200);
    expect(once.json()).toMatchObject({ decision: 'allow', rule: 'retry-once-after-crash' });
    const twice = await decide(tok, {
      tool: 'retry_job',
      args: {},
      run: { id: 'r', approvals: [crash, { ...crash, id: 'a2' }] },
    });
    expect(twice.statusCode).toBe(403);
    const none = await decide(tok, { tool: 'retry_job', args: {}, run: { id: 'r' } });
    expect(none.statusCode).toBe(403);
  });

  it('refuses an approval entry with an unknown field or a tool that is not a string (422)', async () => {
    for (const entry of [
      { id: 'a1', decided_by: 'x' },
      { id: 'a1', tool: 1 },
    ]) {
      const res = await decide(runtime(), { tool: 'retry_job', args: {}, run: { approvals: [entry] } });
      expectProblemJson(res, 422);
    }
  });
});
