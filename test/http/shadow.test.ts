// Shadow mode: a second policy set decides every /decide beside the serving one, never changing an
// answer; disagreements counted in /metrics by (serving, shadow, rule) and logged with both
// decisions; the shadow set reloads with the serving set. The sets are test/cli/fixtures/replay's:
// the candidate denies trial callers' lookups and asks for refunds from 50.
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { adminToken, createTestApp, post, token } from '../helpers/app.js';

const BASELINE = 'test/cli/fixtures/replay/baseline';
const CANDIDATE = 'test/cli/fixtures/replay/candidate';

async function metrics(app: Awaited<ReturnType<typeof createTestApp>>['app']): Promise<string> {
  return (await app.inject({ method: 'GET', url: '/metrics' })).body;
}

const trial = token({ sub: 'agent-2', tier: 'trial' });
const paid = token({ sub: 'agent-1', tier: 'paid' });

describe('SHADOW_POLICY_DIR', () => {
  it('never changes an answer; disagreements are counted by (serving, shadow, rule) and logged with both decisions', async () => {
    const logs: Record<string, unknown>[] = [];
    const t = await createTestApp({ policyDir: BASELINE, shadowPolicyDir: CANDIDATE, logs });
    try {
      const lookup = await post(t.app, '/decide', { tool: 'lookup_order', args: { order: 'A1' } }, trial);
      expect(lookup.statusCode).toBe(200); // the serving set allows; the shadow would deny
      expect(lookup.json()).toMatchObject({ decision: 'allow', rule: 'lookups' });
      expect(lookup.body).not.toContain('shadow');
      const refund = await post(t.app, '/decide', { tool: 'refund', args: { amount: 80 } }, paid);
      expect(refund.statusCode).toBe(200);
      expect(refund.json()).toMatchObject({ decision: 'allow', rule: 'refunds' });
      expect((await post(t.app, '/decide', { tool: 'refund', args: { amount: 30 } }, paid)).statusCode).toBe(200); // agreed
      expect((await post(t.app, '/decide', { tool: 'lookup_order', args: { order: 'A2' } }, trial)).statusCode).toBe(
        200,
      );

      const text = await metrics(t.app);
      expect(text).toContain('gatehouse_shadow_decisions_total 4');
      expect(text).toContain(
        'gatehouse_shadow_disagreements_total{serving="allow",shadow="deny",rule="no-trial-lookups"} 2',
      );
      expect(text).toContain(
        'gatehouse_shadow_disagreements_total{serving="allow",shadow="require_approval",rule="refunds"} 1',
      );
      expect(text).not.toMatch(/gatehouse_shadow_disagreements_total\{serving="allow",shadow="allow"/);

      const lines = logs.filter((l) => l.msg === 'shadow disagreement');
      expect(lines).toHaveLength(3);
      expect(lines[0]).toMatchObject({
        decision_id: (lookup.json() as { decision_id: string }).decision_id,
        tool: 'lookup_order',
        decision: 'allow',
        rule: 'lookups',
        shadow_decision: 'deny',
        shadow_rule: 'no-trial-lookups',
        shadow_policies: [expect.stringMatching(/^sha256:/)],
      });
      // The decision lines are the serving set's, one per request.
      expect(logs.filter((l) => l.msg === 'decision').map((l) => l.decision)).toEqual([
        'allow',
        'allow',
        'allow',
        'allow',
      ]);
    } finally {
      await t.close();
    }
  });

  it('is reloaded with the serving set (POST /admin/reload)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gatehouse-shadow-'));
    cpSync(CANDIDATE, dir, { recursive: true });
    const t = await createTestApp({ policyDir: BASELINE, shadowPolicyDir: dir });
    try {
      await post(t.app, '/decide', { tool: 'lookup_order', args: { order: 'A1' } }, trial);
      expect(await metrics(t.app)).toContain(
        'gatehouse_shadow_disagreements_total{serving="allow",shadow="deny",rule="no-trial-lookups"} 1',
      );
      // The shadow directory now holds the serving policies: after the reload, nothing disagrees.
      rmSync(join(dir, 'shop.yaml'));
      cpSync(BASELINE, dir, { recursive: true });
      const reload = await t.app.inject({
        method: 'POST',
        url: '/admin/reload',
        headers: { authorization: `Bearer ${adminToken()}` },
      });
      expect(reload.statusCode).toBe(200);
      await post(t.app, '/decide', { tool: 'lookup_order', args: { order: 'A1' } }, trial);
      const text = await metrics(t.app);
      expect(text).toContain('gatehouse_shadow_policy_reloads_total{result="success"} 1');
      expect(text).toContain('gatehouse_shadow_decisions_total 2');
      expect(text).toContain(
        'gatehouse_shadow_disagreements_total{serving="allow",shadow="deny",rule="no-trial-lookups"} 1',
      );
    } finally {
      await t.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('off: nothing is decided beside, nothing counted or logged', async () => {
    const logs: Record<string, unknown>[] = [];
    const t = await createTestApp({ policyDir: BASELINE, logs });
    try {
      expect(t.ctx.shadow).toBeNull();
      expect((await post(t.app, '/decide', { tool: 'lookup_order', args: { order: 'A1' } }, trial)).statusCode).toBe(
        200,
      );
      expect(await metrics(t.app)).toContain('gatehouse_shadow_decisions_total 0');
      expect(logs.filter((l) => l.msg === 'shadow disagreement')).toEqual([]);
    } finally {
      await t.close();
    }
  });
});
