// Shadow mode, in the engine: a second policy set decides every call beside the serving one, never
// changing an answer; disagreements counted in the metrics by (serving, shadow, rule) and logged
// with both decisions; the shadow set reloads with the serving set. The sets are
// test/cli/fixtures/replay's: the candidate denies trial callers' lookups and asks for refunds from 50.
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createEngine, type Engine } from '../../src/engine/index.js';
import type { JsonObject } from '../../src/json/value.js';
import type { Identity } from '../../src/policy/model.js';
import { createTestParts, type TestAppOptions } from '../helpers/app.js';
import { callLog, decisionOf, settled, type CollectingLog } from '../helpers/engine.js';

const BASELINE = 'test/cli/fixtures/replay/baseline';
const CANDIDATE = 'test/cli/fixtures/replay/candidate';

const caller = (sub: string, tier: string): Identity => ({
  user: sub,
  team: 'support',
  agent: 'bot',
  roles: [],
  claims: { sub, tier },
});
const trial = caller('agent-2', 'trial');
const paid = caller('agent-1', 'paid');

/** An engine over the test's parts, every call's lines in one log. */
async function shadowed(options: TestAppOptions): Promise<{
  engine: Engine;
  log: CollectingLog;
  decide: (tool: string, args: JsonObject, identity: Identity) => Promise<ReturnType<typeof decisionOf>>;
  metrics: () => Promise<string>;
  close: () => Promise<void>;
}> {
  const built = await createTestParts(options);
  const engine = createEngine(built.parts);
  const log = callLog();
  return {
    engine,
    log,
    decide: async (tool, args, identity) =>
      decisionOf(await settled(engine.decide({ request: { tool, args }, identity, claim: () => undefined, log }))),
    metrics: () => built.parts.metrics.registry.metrics(),
    close: () => built.close(),
  };
}

describe('SHADOW_POLICY_DIR', () => {
  it('never changes an answer; disagreements are counted by (serving, shadow, rule) and logged with both decisions', async () => {
    const t = await shadowed({ policyDir: BASELINE, shadowPolicyDir: CANDIDATE });
    try {
      const lookup = await t.decide('lookup_order', { order: 'A1' }, trial);
      expect(lookup).toMatchObject({ status: 200, body: { decision: 'allow', rule: 'lookups' } }); // the shadow would deny
      const refund = await t.decide('refund', { amount: 80 }, paid);
      expect(refund).toMatchObject({ status: 200, body: { decision: 'allow', rule: 'refunds' } });
      expect((await t.decide('refund', { amount: 30 }, paid)).status).toBe(200); // agreed
      expect((await t.decide('lookup_order', { order: 'A2' }, trial)).status).toBe(200);

      const text = await t.metrics();
      expect(text).toContain('gatehouse_shadow_decisions_total 4');
      expect(text).toContain(
        'gatehouse_shadow_disagreements_total{serving="allow",shadow="deny",rule="no-trial-lookups"} 2',
      );
      expect(text).toContain(
        'gatehouse_shadow_disagreements_total{serving="allow",shadow="require_approval",rule="refunds"} 1',
      );
      expect(text).not.toMatch(/gatehouse_shadow_disagreements_total\{serving="allow",shadow="allow"/);

      const lines = t.log.lines.filter((l) => l.msg === 'shadow disagreement');
      expect(lines).toHaveLength(3);
      expect(lines[0]).toMatchObject({
        decision_id: lookup.body.decision_id,
        tool: 'lookup_order',
        decision: 'allow',
        rule: 'lookups',
        shadow_decision: 'deny',
        shadow_rule: 'no-trial-lookups',
        shadow_policies: [expect.stringMatching(/^sha256:/)],
      });
      // The decision lines are the serving set's, one per call.
      expect(t.log.lines.filter((l) => l.msg === 'decision').map((l) => l.decision)).toEqual([
        'allow',
        'allow',
        'allow',
        'allow',
      ]);
    } finally {
      await t.close();
    }
  });

  it('is reloaded with the serving set', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gatehouse-shadow-'));
    cpSync(CANDIDATE, dir, { recursive: true });
    const t = await shadowed({ policyDir: BASELINE, shadowPolicyDir: dir });
    try {
      await t.decide('lookup_order', { order: 'A1' }, trial);
      expect(await t.metrics()).toContain(
        'gatehouse_shadow_disagreements_total{serving="allow",shadow="deny",rule="no-trial-lookups"} 1',
      );
      // The shadow directory now holds the serving policies: after the reload, nothing disagrees.
      rmSync(join(dir, 'shop.yaml'));
      cpSync(BASELINE, dir, { recursive: true });
      await t.engine.reload();
      await t.decide('lookup_order', { order: 'A1' }, trial);
      const text = await t.metrics();
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
    const t = await shadowed({ policyDir: BASELINE });
    try {
      expect(t.engine.parts.shadow).toBeNull();
      expect((await t.decide('lookup_order', { order: 'A1' }, trial)).status).toBe(200);
      expect(await t.metrics()).toContain('gatehouse_shadow_decisions_total 0');
      expect(t.log.lines.filter((l) => l.msg === 'shadow disagreement')).toEqual([]);
    } finally {
      await t.close();
    }
  });
});
