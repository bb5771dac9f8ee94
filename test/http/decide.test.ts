// POST /decide over HTTP: the example policies' decision table replayed, statuses per docs/spec.md section 1.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readCaseFile } from '../../src/policy/cases.js';
import { readFileSync } from 'node:fs';
import { createTestApp, post, token, type TestApp } from '../helpers/app.js';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ env: 'prod' });
});
afterAll(async () => t.close());

describe('the example policy table over HTTP', () => {
  const { cases } = readCaseFile(
    'test/cases/payments/payments.test.yaml',
    readFileSync('test/cases/payments/payments.test.yaml'),
  );
  for (const c of cases.filter((x) => x.env === 'prod')) {
    it(c.name, async () => {
      const claims = {
        sub: c.identity.user,
        ...(c.identity.team ? { team: c.identity.team } : {}),
        ...(c.identity.agent ? { agent: c.identity.agent } : {}),
      };
      const tok = token({ ...claims, team: c.identity.team ?? undefined, agent: c.identity.agent ?? undefined });
      const res = await post(t.app, '/decide', { tool: c.tool, args: c.args, ...(c.run ? { run: c.run } : {}) }, tok);
      const body = res.json() as { decision: string; rule: string; message: string; decision_id: string };
      expect(body.decision).toBe(c.want);
      expect(res.statusCode).toBe(c.want === 'allow' ? 200 : 403);
      if (c.rule) expect(body.rule).toBe(c.rule);
      expect(body.decision_id).toMatch(/^[0-9a-f-]{36}$/);
      expect(body.message).toContain(`"${c.tool}"`);
    });
  }
});
