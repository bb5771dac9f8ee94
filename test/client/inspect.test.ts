// The client's inspect() and guardResult() against a real Gatehouse (real PostgreSQL) serving the
// adapters' fixture policy, whose lookup_order results are guarded: an email address is redacted, a
// credential withheld, a ticket number held for an operator's review.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, type GatehouseClient } from '../../src/client/index.js';
import { type Gatehouse, newRunId, startGatehouse } from './adapters-fixture.js';

let gh: Gatehouse;
let agent: GatehouseClient;
beforeAll(async () => {
  gh = await startGatehouse();
  agent = gh.agent();
});
afterAll(async () => gh.close());

const GITHUB_TOKEN = `ghp_${'a1B2c3D4e5'.repeat(4)}`;

describe('inspect()', () => {
  it('allow: nothing found, no redaction; the answer in camelCase', async () => {
    const body = await agent.inspect({
      stage: 'result',
      tool: 'lookup_order',
      args: { order: 'A1' },
      result: { order: 'A1', status: 'shipped' },
    });
    expect(body).toMatchObject({ decision: 'allow', stage: 'result', rule: 'builtin#guards' });
    expect(typeof body.decisionId).toBe('string');
    expect(body).not.toHaveProperty('redacted');
    expect(body).not.toHaveProperty('decision_id');
  });

  it('redact: 200 allow with the redacted value and the findings; keys inside the result are data, never renamed', async () => {
    const body = await agent.inspect({
      stage: 'result',
      tool: 'lookup_order',
      args: { order: 'A1' },
      result: { order_id: 'A1', contact_email: 'ann@example.com' },
    });
    expect(body.decision).toBe('allow');
    expect(body.redacted).toEqual({ order_id: 'A1', contact_email: '[REDACTED:email]' });
    expect(body.findings).toEqual([{ guard: 'lookup-pii', type: 'email', path: '/*' }]);
    expect(body.message).not.toContain('ann@example.com');
  });

  it('deny: 403 deny, the message saying the output was withheld, never the value', async () => {
    const body = await agent.inspect({
      stage: 'result',
      tool: 'lookup_order',
      args: { order: 'A1' },
      result: `token: ${GITHUB_TOKEN}`,
    });
    expect(body).toMatchObject({ decision: 'deny', rule: 'lookup-secrets' });
    expect(body.message).toMatch(/withheld/);
    expect(JSON.stringify(body)).not.toContain(GITHUB_TOKEN);
    expect(body).not.toHaveProperty('redacted');
  });

  it('require_approval: the review asked for, its hash over the call and the result, and what to do next', async () => {
    const body = await agent.inspect({
      stage: 'result',
      tool: 'lookup_order',
      args: { order: 'A1' },
      result: 'see TICKET-1234',
    });
    expect(body).toMatchObject({
      decision: 'require_approval',
      approval: { kind: 'pattern', capability: { tool: 'lookup_order', args: { order: 'A1' } } },
      next: { action: 'file' },
    });
    expect(body.approval?.hash).toMatch(/^sha256:/);
  });

  it('a model stage: the content inspected for the caller', async () => {
    const body = await agent.inspect({ stage: 'llm_request', content: [{ role: 'user', content: 'hello' }] });
    expect(body).toMatchObject({ decision: 'allow', stage: 'llm_request' });
  });

  it('a refused body is a GatehouseError naming the problem, never a decision', async () => {
    await expect(
      agent.inspect({ stage: 'result', tool: 'lookup_order', result: 1, approvalId: '' } as never),
    ).rejects.toMatchObject({ name: 'GatehouseError', status: 422 });
  });
});

describe('guardResult()', () => {
  it('allow: the result as it was, the very value', async () => {
    const result = { order: 'A1', status: 'shipped' };
    const verdict = await agent.guardResult({ tool: 'lookup_order', args: { order: 'A1' }, result });
    expect(verdict).toMatchObject({ decision: 'allow', redacted: false, findings: [] });
    expect(verdict.decision === 'allow' && verdict.output).toBe(result);
  });

  it('redact: the redacted result and its findings', async () => {
    const verdict = await agent.guardResult(
      { tool: 'lookup_order', args: { order: 'A1' }, result: 'mail ann@example.com' },
      { runId: newRunId() },
    );
    expect(verdict).toMatchObject({
      decision: 'allow',
      redacted: true,
      output: 'mail [REDACTED:email]',
      findings: [{ guard: 'lookup-pii', type: 'email', path: '/' }],
    });
  });

  it('deny: withheld with the message', async () => {
    const verdict = await agent.guardResult({ tool: 'lookup_order', args: {}, result: { token: GITHUB_TOKEN } });
    expect(verdict.decision).toBe('deny');
    expect(verdict.message).toMatch(/withheld/);
    expect(verdict).not.toHaveProperty('output');
  });

  it('a tool that returned nothing is inspected as null', async () => {
    const verdict = await agent.guardResult({ tool: 'lookup_order', args: {}, result: undefined });
    expect(verdict).toMatchObject({ decision: 'allow', redacted: false, output: undefined });
  });

  it('fails closed: Gatehouse unreachable withholds the result, with the error', async () => {
    const offline = createClient({ url: 'http://127.0.0.1:9', token: 't', timeoutMs: 2_000 });
    const verdict = await offline.guardResult(
      { tool: 'lookup_order', args: {}, result: 'anything' },
      { maxRetryMs: 0, maxWaitMs: 0 },
    );
    expect(verdict).toMatchObject({ decision: 'deny', error: { code: 'unreachable' } });
    expect(verdict.message).toMatch(/withheld/);
  });

  it('a result that is not JSON (a BigInt) is withheld, never handed on unchecked', async () => {
    const verdict = await agent.guardResult({ tool: 'lookup_order', args: {}, result: { n: 10n } });
    expect(verdict).toMatchObject({ decision: 'deny', error: { code: 'client_error' } });
  });
});
