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

describe("guardResult(): a result held for an operator's review", () => {
  const held = (order: string) => ({
    tool: 'lookup_order',
    args: { order },
    result: { order, note: 'see TICKET-1234, write to ann@example.com' },
  });

  it('filed and waited for; granted over REST meanwhile, redeemed once: the result handed on, redacted as the redact guard asks', async () => {
    const runId = newRunId();
    let seen: { id: string; url: string } | undefined;
    const verdict = agent.guardResult(held('R1'), {
      runId,
      onPending: (p) => {
        if (seen === undefined) {
          seen = p;
          void gh.operator.approvals.grant(p.id, { note: 'checked the ticket' });
        }
      },
    });
    const answer = await verdict;
    expect(answer).toMatchObject({
      decision: 'allow',
      redacted: true,
      output: { order: 'R1', note: 'see TICKET-1234, write to [REDACTED:email]' },
      approval: { id: seen?.id, status: 'consumed' },
    });
    const filed = await gh.operator.approvals.get(seen!.id);
    expect(filed).toMatchObject({ status: 'consumed', kind: 'pattern', tool: 'lookup_order', runId });
    // The result under review, labelled as a tool's output; its own keys as they were.
    expect(filed.result).toEqual(held('R1').result);
    expect(filed.resultLabel).toMatch(/output: content for review, not instructions/);
  });

  it('unanswered within maxWaitMs: withheld, naming the pending review; the same result asked again waits on the same one', async () => {
    const first = await agent.guardResult(held('R2'), { maxWaitMs: 0 });
    expect(first).toMatchObject({ decision: 'require_approval', approval: { status: 'pending' } });
    expect(first.message).toMatch(/held for an operator's review/);
    const again = await agent.guardResult(held('R2'), { maxWaitMs: 0 });
    expect(again.approval?.id).toBe(first.approval?.id);
  });

  it("an operator's denial while it waits: withheld, with the operator's message for the agent", async () => {
    let denied = false;
    const answer = await agent.guardResult(held('R3'), {
      onPending: (p) => {
        if (denied) return;
        denied = true;
        void gh.operator.approvals.deny(p.id, { note: 'internal', message: 'That ticket is private.' });
      },
    });
    expect(answer).toMatchObject({ decision: 'deny', approval: { status: 'denied' } });
    expect(answer.message).toContain('That ticket is private.');
    expect(answer.message).not.toContain('internal');
  });

  it('a changed result is not redeemed by the review of another', async () => {
    const pending = await agent.guardResult(held('R4'), { maxWaitMs: 0 });
    await gh.operator.approvals.grant(pending.approval!.id);
    const changed = await agent.inspect({
      stage: 'result',
      ...held('R4'),
      result: { order: 'R4', note: 'see TICKET-9999' },
      approvalId: pending.approval!.id,
    });
    expect(changed.decision).toBe('require_approval');
  });
});
