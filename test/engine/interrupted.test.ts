// The engine resuming a call a crash interrupted (docs/spec.md sections 3.2 and 5.4), driven directly
// against the real PostgreSQL: a policy asking exactly the runtime's approval redeems it; an allow
// that read `$approval` consumes it, and counts the call in its budgets; an approval that changed
// between the read and the consume is answered as if `$approval` were absent.
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngine, type Answer, type Engine } from '../../src/engine/index.js';
import { decide } from '../../src/policy/decide.js';
import { interruptedApproval, interruptedResult } from '../../src/policy/interrupted.js';
import type { DecideRequest, Identity } from '../../src/policy/model.js';
import type { CallLog } from '../../src/engine/parts.js';
import { createTestParts, type TestEngineParts } from '../helpers/app.js';
import { policyDir } from '../helpers/process.js';

const POLICY = `
policy: recovery
tools:
  send_email: {kind: remote_mutation}
  post_note: {kind: remote_mutation}
  charge: {kind: remote_mutation}
rules:
  - id: resume-after-crash
    tools: [send_email, charge]
    allow: true
    when: '$approval.kind == "interrupted_side_effect"'
  - id: notes-ask-the-same
    tools: [post_note]
    allow: true
    confirm: true
    approval: {kind: interrupted_side_effect}
budgets:
  - {id: charges, tools: [charge], max: 1, per: day, scope: user}
`;

const RUNTIME: Identity = Object.freeze({ user: 'engine-runtime', team: null, agent: null, roles: ['runtime'] });
const OPERATOR = { sub: 'engine-operator' };
const log = { info: () => undefined, error: () => undefined } as unknown as CallLog;

function bodyOf(answer: Answer): { status: number; body: Record<string, unknown> } {
  if (answer.kind === 'text')
    return { status: answer.status, body: JSON.parse(answer.body) as Record<string, unknown> };
  const r = answer.result;
  return {
    status: r.decision === 'allow' ? 200 : 403,
    body: { decision: r.decision, rule: r.rule, approval: r.approval },
  };
}

describe('the engine resuming an interrupted call', () => {
  let built: TestEngineParts;
  let engine: Engine;
  let dir: string;
  let seq = 0;
  beforeAll(async () => {
    dir = await policyDir({ 'recovery.yaml': POLICY });
    built = await createTestParts({ policyDir: dir, env: null, database: true });
    engine = createEngine(built.parts);
  });
  afterAll(async () => {
    await built.close();
    await rm(dir, { recursive: true, force: true });
  });

  async function grantedFor(request: DecideRequest, identity = RUNTIME): Promise<string> {
    const filed = bodyOf(
      await engine.file({ request, identity, claim: () => undefined, log, seesNotes: false, interrupted: true }),
    );
    expect(filed.status).toBe(201);
    const id = filed.body.id as string;
    expect((await engine.approvals().store.grant(id, OPERATOR, null)).ok).toBe(true);
    return id;
  }
  const resume = async (request: DecideRequest, approvalId: string, identity = RUNTIME) =>
    bodyOf(await engine.decide({ request, identity, approvalId, claim: () => undefined, log }));

  it('a rule asking its own approval of the same kind asks anew: its shapes are not {tool, args}', async () => {
    const request = { tool: 'post_note', args: { text: `n-${++seq}` } };
    const asked = decide(built.parts.policies.current(), request, RUNTIME);
    // A rule's shapes are `{}` without lists (docs/spec.md section 2.4): another hash than the runtime's.
    expect(asked.approval?.hash).not.toBe(interruptedApproval(request).hash);
    const id = await grantedFor(request);
    const answer = await resume(request, id);
    expect(answer).toMatchObject({ status: 403, body: { decision: 'require_approval' } });
    expect((await engine.approvals().store.get(id))?.status).toBe('granted');
  });

  it('a decision asking for exactly the runtime’s approval (the same hash) redeems it', async () => {
    const request = { tool: 'post_note', args: { text: `same-${++seq}` } };
    const id = await grantedFor(request);
    const same = interruptedResult(request, built.parts.policies.current().identities);
    const r = await engine.approvals().redeem(same, request, id, RUNTIME);
    expect(r.result).toMatchObject({ decision: 'allow', approval: { id, status: 'consumed' } });
    expect(r.cited).toMatchObject({ id, sameRequest: true });
  });

  it('an allow that read $approval consumes it and counts the call in its budget', async () => {
    const request = { tool: 'charge', args: { amount: ++seq } };
    const id = await grantedFor(request);
    expect(await resume(request, id)).toMatchObject({
      status: 200,
      body: { decision: 'allow', approval: { id, status: 'consumed' } },
    });
    expect((await engine.approvals().store.get(id))?.status).toBe('consumed');
    const standings = await engine.standings(RUNTIME, { admin: false, max: 10 });
    expect(standings).toMatchObject({ limits: [{ id: 'charges', counters: [{ counted: 1 }] }] });
  });

  it('an approval consumed between the read and the consume: the call gets its decision without $approval', async () => {
    const request: DecideRequest = { tool: 'send_email', args: { to: `x-${++seq}@example.com` } };
    const id = await grantedFor(request);
    const service = engine.approvals();
    const cited = await service.cited(id, request, RUNTIME);
    expect(cited).toMatchObject({ kind: 'interrupted_side_effect', status: 'granted', decided_by: OPERATOR.sub });
    const set = built.parts.policies.current();
    const withApproval = { ...request, cited: cited! };
    const allowed = decide(set, withApproval, RUNTIME);
    expect(allowed.decision).toBe('allow');
    const absent = decide(set, request, RUNTIME);
    expect(absent.decision).toBe('require_approval');
    // Someone (a retry of the same runtime) consumed it first.
    expect((await service.store.consume(id, { sub: RUNTIME.user }, cited!.hash)).ok).toBe(true);
    const r = await service.redeem(allowed, withApproval, id, RUNTIME, undefined, absent);
    expect(r.result.decision).toBe('require_approval');
    // No fallback given: fail closed.
    const alone = await service.redeem(allowed, withApproval, id, RUNTIME);
    expect(alone.result.decision).toBe('deny');
  });

  it('reads $approval only for the caller’s own approval', async () => {
    const request = { tool: 'send_email', args: { to: `y-${++seq}@example.com` } };
    const id = await grantedFor(request);
    const other = { ...RUNTIME, user: 'engine-runtime-2' };
    expect(await engine.approvals().cited(id, request, other)).toBeNull();
    expect(await engine.approvals().cited('not-a-uuid', request, RUNTIME)).toBeNull();
    expect(await resume(request, id, other)).toMatchObject({ status: 403, body: { decision: 'require_approval' } });
  });
});
