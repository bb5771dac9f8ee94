// gatehouse-pdp/ai-sdk with the real `ai` 7 (generateText, its MockLanguageModelV4 scripting the model's
// tool calls) against a real Gatehouse: nothing Gatehouse refused runs (each tool writes a ledger),
// a denial's message is in the model's next prompt, an abort ends the run, an approval filed by
// toolApproval is granted over REST and redeemed once by the tool's gate(), an operator's denial
// reaches the model, an approval that expires is reported to the model (never silently filed again),
// a 503 in the approval step is retried per Retry-After within its bound, a restarted process resumes
// the same approval from a fileMemory, and streamText and streaming (async generator) tools go the same way.
import { generateText, type ModelMessage, streamText, tool } from 'ai';
import { convertArrayToReadableStream, MockLanguageModelV4 } from 'ai/test';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  GatehouseAbortError,
  gatehouseToolApproval,
  gateTools,
  type PendingRequest,
  settleApprovalRequests,
} from '../../src/client/ai-sdk.js';
import { fileMemory, type GatehouseClient } from '../../src/client/index.js';
import { startFaultProxy } from '../helpers/fault-proxy.js';
import {
  expiredMessage,
  firstPending,
  type Gatehouse,
  loseFirstRedeemAnswer,
  newRunId,
  startGatehouse,
} from './adapters-fixture.js';

type LanguageModelV4GenerateResult = Awaited<ReturnType<MockLanguageModelV4['doGenerate']>>;
type Prompt = MockLanguageModelV4['doGenerateCalls'][number]['prompt'];
type StreamPart =
  Awaited<ReturnType<MockLanguageModelV4['doStream']>>['stream'] extends ReadableStream<infer P> ? P : never;

let gh: Gatehouse;
beforeAll(async () => {
  gh = await startGatehouse();
});
afterAll(async () => gh.close());

/** The tools of the fixture policy; each execute writes what it ran to `ledger`. */
function fixtureTools(ledger: string[]) {
  return {
    lookup_order: tool({
      description: 'Look an order up',
      inputSchema: z.object({ order: z.string() }),
      execute: async ({ order }) => {
        ledger.push(`lookup_order ${order}`);
        return { order, status: 'shipped' };
      },
    }),
    wipe_orders: tool({
      description: 'Delete every order',
      inputSchema: z.object({}),
      execute: async () => {
        ledger.push('wipe_orders');
        return 'wiped';
      },
    }),
    drop_database: tool({
      description: 'Drop the database',
      inputSchema: z.object({}),
      execute: async () => {
        ledger.push('drop_database');
        return 'dropped';
      },
    }),
    refund: tool({
      description: 'Refund an order',
      inputSchema: z.object({ order: z.string(), amount: z.number() }),
      execute: async ({ order, amount }) => {
        ledger.push(`refund ${order} ${amount}`);
        return { refunded: amount };
      },
    }),
  };
}

const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 1, text: 1, reasoning: 0 },
};
let calls = 0;
/** A model step that calls these tools. */
const callTools = (...list: { name: string; input: Record<string, unknown> }[]): LanguageModelV4GenerateResult => ({
  content: list.map((c) => ({
    type: 'tool-call',
    toolCallId: `call-${++calls}`,
    toolName: c.name,
    input: JSON.stringify(c.input),
  })),
  finishReason: { unified: 'tool-calls', raw: undefined },
  usage,
  warnings: [],
});
const say = (text: string): LanguageModelV4GenerateResult => ({
  content: [{ type: 'text', text }],
  finishReason: { unified: 'stop', raw: undefined },
  usage,
  warnings: [],
});

/** A model that answers each call with the next scripted step (and records every prompt it got). */
function scripted(...steps: LanguageModelV4GenerateResult[]): MockLanguageModelV4 {
  const queue = [...steps];
  return new MockLanguageModelV4({
    doGenerate: async () => {
      const next = queue.shift();
      if (next === undefined) throw new Error('the model was called more often than scripted');
      return next;
    },
  });
}

/** The tool outputs the model was shown in a prompt, by tool name. */
function toolOutputs(
  prompt: Prompt,
): { toolName: string; output: { type: string; value?: unknown; reason?: string } }[] {
  return prompt.flatMap((m) =>
    m.role === 'tool'
      ? m.content.flatMap((p) => (p.type === 'tool-result' ? [{ toolName: p.toolName, output: p.output }] : []))
      : [],
  );
}

const promptOf = (model: MockLanguageModelV4, i: number) => model.doGenerateCalls[i]!.prompt;

describe('toolApproval + gateTools: the decisions without a human', () => {
  it('runs the allowed tool, never the denied one, and the model reads the denial', async () => {
    const ledger: string[] = [];
    const runId = newRunId();
    const client = gh.agent();
    const model = scripted(
      callTools({ name: 'lookup_order', input: { order: 'A1' } }, { name: 'wipe_orders', input: {} }),
      say('The order shipped; I may not wipe orders.'),
    );
    const result = await generateText({
      model,
      prompt: 'Look up A1, then wipe all orders.',
      tools: gateTools(fixtureTools(ledger), client, { runId }),
      toolApproval: gatehouseToolApproval(client, { runId }),
      stopWhen: () => false,
    });
    expect(ledger).toEqual(['lookup_order A1']);
    expect(result.text).toBe('The order shipped; I may not wipe orders.');
    const shown = toolOutputs(promptOf(model, 1));
    expect(shown).toContainEqual({
      toolName: 'lookup_order',
      output: { type: 'json', value: { order: 'A1', status: 'shipped' } },
    });
    const denial = shown.find((s) => s.toolName === 'wipe_orders')!.output;
    expect(denial.type).toBe('execution-denied');
    expect(denial.reason).toMatch(
      /^The "wipe_orders" action was not approved by policy\. Reason: never from an agent\./,
    );
  });

  it('an abort ends the run: generateText rejects with GatehouseAbortError, no tool ran, no further step', async () => {
    const ledger: string[] = [];
    const client = gh.agent();
    const model = scripted(
      callTools({ name: 'lookup_order', input: { order: 'A2' } }, { name: 'drop_database', input: {} }),
      say('unreachable'),
    );
    const run = generateText({
      model,
      prompt: 'Drop the database.',
      tools: gateTools(fixtureTools(ledger), client),
      toolApproval: gatehouseToolApproval(client),
      stopWhen: () => false,
    });
    await expect(run).rejects.toBeInstanceOf(GatehouseAbortError);
    await expect(run).rejects.toThrow(
      /^The "drop_database" action crossed a hard limit of this run \(dropping the database ends the run\)/,
    );
    expect(ledger).toEqual([]); // not even the allowed call of the same step: the run ended before any ran
    expect(model.doGenerateCalls).toHaveLength(1);
  });

  it('Gatehouse unreachable: toolApproval denies (fails closed), nothing runs', async () => {
    const ledger: string[] = [];
    const down = gh.agent({ url: 'http://127.0.0.1:1' });
    const model = scripted(callTools({ name: 'lookup_order', input: { order: 'A3' } }), say('Gatehouse is down.'));
    await generateText({
      model,
      prompt: 'Look up A3.',
      tools: gateTools(fixtureTools(ledger), down),
      toolApproval: gatehouseToolApproval(down),
      stopWhen: () => false,
    });
    expect(ledger).toEqual([]);
    const [shown] = toolOutputs(promptOf(model, 1));
    expect(shown?.output).toMatchObject({
      type: 'execution-denied',
      reason: expect.stringMatching(/not run: Gatehouse could not check it against policy \(unreachable\)/),
    });
  });
});

describe('gateTools alone: execute is the enforcement point', () => {
  it('a denied call throws GatehouseRefusalError, which the model reads as the tool error', async () => {
    const ledger: string[] = [];
    const model = scripted(callTools({ name: 'wipe_orders', input: {} }), say('I may not.'));
    await generateText({
      model,
      prompt: 'Wipe.',
      tools: gateTools(fixtureTools(ledger), gh.agent()),
      stopWhen: () => false,
    });
    expect(ledger).toEqual([]);
    const [shown] = toolOutputs(promptOf(model, 1));
    expect(shown?.output.type).toBe('error-text');
    expect(shown?.output.value).toMatch(/^The "wipe_orders" action was not approved by policy/);
  });

  it('an abort aborts the run controller: the run rejects before another step, the tool never ran', async () => {
    const ledger: string[] = [];
    const controller = new AbortController();
    const model = scripted(callTools({ name: 'drop_database', input: {} }), say('unreachable'));
    const run = generateText({
      model,
      prompt: 'Drop it.',
      abortSignal: controller.signal,
      tools: gateTools(fixtureTools(ledger), gh.agent(), { abortController: controller }),
      stopWhen: () => false,
    });
    await expect(run).rejects.toBeInstanceOf(GatehouseAbortError);
    expect(controller.signal.reason).toBeInstanceOf(GatehouseAbortError);
    expect(ledger).toEqual([]);
    expect(model.doGenerateCalls).toHaveLength(1);
  });

  it('a call that needs an approval waits in execute; granted over REST meanwhile, it runs once', async () => {
    const ledger: string[] = [];
    const runId = newRunId();
    const waiting = firstPending<{ id: string }>();
    const model = scripted(callTools({ name: 'refund', input: { order: 'G1', amount: 150 } }), say('Refunded.'));
    const run = generateText({
      model,
      prompt: 'Refund G1.',
      tools: gateTools(fixtureTools(ledger), gh.agent(), { runId, onPending: waiting.onPending }),
      stopWhen: () => false,
    });
    const { id } = await waiting.seen;
    expect(ledger).toEqual([]);
    await gh.operator.approvals.grant(id, { note: 'checked' });
    await run;
    expect(ledger).toEqual(['refund G1 150']);
    expect((await gh.approvalsOf(runId)).map((a) => [a.id, a.status])).toEqual([[id, 'consumed']]);
  });
});

describe('gateTools: a grant an operator amended', () => {
  it('execute runs the amended input, and the model reads the output with the changed paths', async () => {
    const ledger: string[] = [];
    const runId = newRunId();
    const waiting = firstPending<{ id: string }>();
    const model = scripted(callTools({ name: 'refund', input: { order: 'M1', amount: 150 } }), say('Refunded 120.'));
    const run = generateText({
      model,
      prompt: 'Refund M1.',
      tools: gateTools(fixtureTools(ledger), gh.agent(), { runId, onPending: waiting.onPending }),
      stopWhen: () => false,
    });
    const { id } = await waiting.seen;
    await gh.operator.approvals.grant(id, { note: 'not the shipping', args: { order: 'M1', amount: 120 } });
    await run;
    expect(ledger).toEqual(['refund M1 120']);
    const shown = toolOutputs(promptOf(model, 1)).find((o) => o.toolName === 'refund')!.output;
    expect(shown).toMatchObject({
      type: 'json',
      value: { amended: expect.stringMatching(/amended .*changed: amount/), output: { refunded: 120 } },
    });
    expect((await gh.approvalsOf(runId)).map((a) => [a.id, a.status])).toEqual([[id, 'consumed']]);
  });
});

/** Run step 1 of a refund that needs an operator: the run stops with one approval request. */
async function stopForOperator(client: GatehouseClient, ledger: string[], runId: string, order: string) {
  const messages: ModelMessage[] = [{ role: 'user', content: `Refund ${order}.` }];
  const model = scripted(callTools({ name: 'refund', input: { order, amount: 150 } }), say('Done.'));
  const first = await generateText({
    model,
    messages,
    tools: gateTools(fixtureTools(ledger), client, { runId }),
    toolApproval: gatehouseToolApproval(client, { runId }),
    stopWhen: () => false,
  });
  return { model, first, messages: [...messages, ...first.response.messages] };
}

/** Resume the run with the approval responses. */
function resume(
  model: MockLanguageModelV4,
  client: GatehouseClient,
  ledger: string[],
  runId: string,
  messages: ModelMessage[],
) {
  return generateText({
    model,
    messages,
    tools: gateTools(fixtureTools(ledger), client, { runId }),
    toolApproval: gatehouseToolApproval(client, { runId }),
    stopWhen: () => false,
  });
}

describe('an approval: filed by toolApproval, decided in Gatehouse, redeemed by execute', () => {
  it('stops the run with a tool-approval-request; granted over REST, the run resumes and the tool runs exactly once', async () => {
    const ledger: string[] = [];
    const runId = newRunId();
    const client = gh.agent();
    const { model, first, messages } = await stopForOperator(client, ledger, runId, 'R1');
    const requests = first.content.filter((p) => p.type === 'tool-approval-request');
    expect(requests).toHaveLength(1);
    expect(requests[0]).toMatchObject({
      toolCall: { toolName: 'refund' },
      reason: expect.stringMatching(/^The "refund" action needs an operator's approval/),
    });
    expect(ledger).toEqual([]);
    const [filed] = await gh.approvalsOf(runId);
    expect(filed?.status).toBe('pending');

    // Not answered yet: nothing to resume with.
    const early = await settleApprovalRequests(first, client, { runId, maxWaitMs: 0 });
    expect(early.responses).toEqual([]);
    expect(early.pending.map((p: PendingRequest) => p.approval.id)).toEqual([filed!.id]);

    await gh.operator.approvals.grant(filed!.id, { note: 'customer called' });
    const { responses, pending } = await settleApprovalRequests(first, client, { runId, maxWaitMs: 0 });
    expect(pending).toEqual([]);
    expect(responses).toEqual([
      { type: 'tool-approval-response', approvalId: requests[0]!.approvalId, approved: true },
    ]);

    const done = await resume(model, client, ledger, runId, [...messages, { role: 'tool', content: responses }]);
    expect(ledger).toEqual(['refund R1 150']);
    expect(done.text).toBe('Done.');
    expect(toolOutputs(promptOf(model, 1))).toEqual([
      { toolName: 'refund', output: { type: 'json', value: { refunded: 150 } } },
    ]);
    // The one approval toolApproval filed is the one execute redeemed.
    expect((await gh.approvalsOf(runId)).map((a) => [a.id, a.status])).toEqual([[filed!.id, 'consumed']]);
  });

  it('settle waits for the operator: a grant while it waits resolves it', async () => {
    const ledger: string[] = [];
    const runId = newRunId();
    const client = gh.agent();
    const { first } = await stopForOperator(client, ledger, runId, 'R2');
    const waiting = firstPending<{ id: string; toolCallId: string }>();
    const settled = settleApprovalRequests(first, client, { runId, maxWaitMs: 60_000, onPending: waiting.onPending });
    const { id } = await waiting.seen;
    await gh.operator.approvals.grant(id);
    expect((await settled).responses).toMatchObject([{ approved: true }]);
  });

  it("an operator's denial: the response is not approved, the model reads the operator's reason, the tool never runs", async () => {
    const ledger: string[] = [];
    const runId = newRunId();
    const client = gh.agent();
    const { model, first, messages } = await stopForOperator(client, ledger, runId, 'R3');
    const [filed] = await gh.approvalsOf(runId);
    await gh.operator.approvals.deny(filed!.id, { message: 'duplicate of an earlier refund' });
    const { responses } = await settleApprovalRequests(first, client, { runId, maxWaitMs: 0 });
    expect(responses).toMatchObject([
      { approved: false, reason: expect.stringContaining('duplicate of an earlier refund') },
    ]);
    await resume(model, client, ledger, runId, [...messages, { role: 'tool', content: responses }]);
    expect(ledger).toEqual([]);
    expect(toolOutputs(promptOf(model, 1))).toEqual([
      {
        toolName: 'refund',
        output: { type: 'execution-denied', reason: expect.stringContaining('duplicate of an earlier refund') },
      },
    ]);
  });

  it('a host that approves what Gatehouse has not granted gets nothing run: execute waits, and refuses when no grant comes', async () => {
    const ledger: string[] = [];
    const runId = newRunId();
    const client = gh.agent();
    const { model, first, messages } = await stopForOperator(client, ledger, runId, 'R4');
    const forged = first.content.flatMap((p) =>
      p.type === 'tool-approval-request'
        ? [{ type: 'tool-approval-response' as const, approvalId: p.approvalId, approved: true }]
        : [],
    );
    await generateText({
      model,
      messages: [...messages, { role: 'tool', content: forged }],
      tools: gateTools(fixtureTools(ledger), client, { runId, maxWaitMs: 0 }),
      toolApproval: gatehouseToolApproval(client, { runId }),
      stopWhen: () => false,
    });
    expect(ledger).toEqual([]);
    const [shown] = toolOutputs(promptOf(model, 1));
    expect(shown?.output).toMatchObject({
      type: 'error-text',
      value: expect.stringMatching(/^The "refund" action needs an operator's approval/),
    });
    expect((await gh.approvalsOf(runId)).map((a) => a.status)).toEqual(['pending']); // still the one, still pending
  });

  it('a redeem whose answer is lost is sent again under its key: the tool runs once, the grant is consumed once', async () => {
    const ledger: string[] = [];
    const runId = newRunId();
    const lossy = loseFirstRedeemAnswer();
    const client = gh.agent({ fetch: lossy.fetch });
    const { model, first, messages } = await stopForOperator(client, ledger, runId, 'R7');
    const [filed] = await gh.approvalsOf(runId);
    await gh.operator.approvals.grant(filed!.id);
    const { responses } = await settleApprovalRequests(first, client, { runId, maxWaitMs: 0 });
    await resume(model, client, ledger, runId, [...messages, { role: 'tool', content: responses }]);
    expect(lossy.lost()).toBe(1);
    expect(ledger).toEqual(['refund R7 150']);
    expect((await gh.approvalsOf(runId)).map((a) => [a.id, a.status])).toEqual([[filed!.id, 'consumed']]);
  });

  it('a restart mid-wait: a new process (new client, same fileMemory) resumes the same approval, and the tool runs once', async () => {
    const ledger: string[] = [];
    const runId = newRunId();
    const dir = await gh.tempDir();
    const before = gh.agent({ memory: fileMemory(dir) });
    const { model, first, messages } = await stopForOperator(before, ledger, runId, 'R5');
    // The first process waits, and goes away while it waits.
    const gone = new AbortController();
    const waiting = firstPending<{ id: string }>();
    const interrupted = settleApprovalRequests(first, before, {
      runId,
      signal: gone.signal,
      onPending: waiting.onPending,
    });
    const { id } = await waiting.seen;
    gone.abort();
    expect((await interrupted).pending.map((p) => p.approval.id)).toEqual([id]);

    const after = gh.agent({ memory: fileMemory(dir) });
    await gh.operator.approvals.grant(id);
    const { responses, pending } = await settleApprovalRequests(first, after, { runId, maxWaitMs: 0 });
    expect(pending).toEqual([]);
    await resume(model, after, ledger, runId, [...messages, { role: 'tool', content: responses }]);
    expect(ledger).toEqual(['refund R5 150']);
    expect((await gh.approvalsOf(runId)).map((a) => [a.id, a.status])).toEqual([[id, 'consumed']]);
  });

  it('an allowed call needs no approval and runs at once (toolApproval answers not-applicable)', async () => {
    const ledger: string[] = [];
    const runId = newRunId();
    const client = gh.agent();
    const model = scripted(callTools({ name: 'refund', input: { order: 'S1', amount: 40 } }), say('Refunded.'));
    const result = await generateText({
      model,
      prompt: 'Refund S1.',
      tools: gateTools(fixtureTools(ledger), client, { runId }),
      toolApproval: gatehouseToolApproval(client, { runId }),
      stopWhen: () => false,
    });
    expect(result.content.some((p) => p.type === 'tool-approval-request')).toBe(false);
    expect(ledger).toEqual(['refund S1 40']);
    expect(await gh.approvalsOf(runId)).toEqual([]);
  });
});

describe('an approval that expires', () => {
  it('while the run is stopped: settle answers not approved with the expiry, the model reads it, nothing runs, nothing is filed again', async () => {
    const ledger: string[] = [];
    const runId = newRunId();
    const client = gh.agent();
    const { model, first, messages } = await stopForOperator(client, ledger, runId, 'E1');
    const [filed] = await gh.approvalsOf(runId);
    await gh.expire(filed!.id);
    const { responses, pending } = await settleApprovalRequests(first, client, { runId, maxWaitMs: 0 });
    expect(pending).toEqual([]);
    expect(responses).toMatchObject([{ approved: false, reason: expiredMessage('refund') }]);
    await resume(model, client, ledger, runId, [...messages, { role: 'tool', content: responses }]);
    expect(ledger).toEqual([]);
    expect(toolOutputs(promptOf(model, 1))).toEqual([
      { toolName: 'refund', output: { type: 'execution-denied', reason: expiredMessage('refund') } },
    ]);
    expect((await gh.approvalsOf(runId)).map((a) => [a.id, a.status])).toEqual([[filed!.id, 'expired']]);
  });

  it('while execute waits: the model reads the expiry as the tool error', async () => {
    const ledger: string[] = [];
    const runId = newRunId();
    const waiting = firstPending<{ id: string }>();
    const model = scripted(callTools({ name: 'refund', input: { order: 'E2', amount: 150 } }), say('It expired.'));
    const run = generateText({
      model,
      prompt: 'Refund E2.',
      tools: gateTools(fixtureTools(ledger), gh.agent(), { runId, onPending: waiting.onPending }),
      stopWhen: () => false,
    });
    const { id } = await waiting.seen;
    await gh.expire(id);
    await run;
    expect(ledger).toEqual([]);
    expect(toolOutputs(promptOf(model, 1))).toEqual([
      { toolName: 'refund', output: { type: 'error-text', value: expiredMessage('refund') } },
    ]);
    expect((await gh.approvalsOf(runId)).map((a) => [a.id, a.status])).toEqual([[id, 'expired']]);
  });

  it('the same call made again after its approval expired: toolApproval denies with the expiry; the call after that files anew', async () => {
    const ledger: string[] = [];
    const runId = newRunId();
    const client = gh.agent();
    await stopForOperator(client, ledger, runId, 'E3');
    const [filed] = await gh.approvalsOf(runId);
    await gh.expire(filed!.id);
    const again = await stopForOperator(client, ledger, runId, 'E3');
    // Denied by the approval step itself (the SDK records that as an automatic request): nothing for a person.
    expect(again.first.content.filter((p) => p.type === 'tool-approval-request' && !p.isAutomatic)).toEqual([]);
    expect(toolOutputs(promptOf(again.model, 1))).toEqual([
      { toolName: 'refund', output: { type: 'execution-denied', reason: expiredMessage('refund') } },
    ]);
    expect((await gh.approvalsOf(runId)).map((a) => a.status)).toEqual(['expired']);
    const third = await stopForOperator(client, ledger, runId, 'E3');
    expect(third.first.content.filter((p) => p.type === 'tool-approval-request' && !p.isAutomatic)).toHaveLength(1);
    expect((await gh.approvalsOf(runId)).map((a) => a.status)).toEqual(['expired', 'pending']);
    expect(ledger).toEqual([]);
  });

  it("onExpired 'refile': settle files a new approval for the expired one and waits on it", async () => {
    const ledger: string[] = [];
    const runId = newRunId();
    const client = gh.agent();
    const { first } = await stopForOperator(client, ledger, runId, 'E4');
    const [filed] = await gh.approvalsOf(runId);
    await gh.expire(filed!.id);
    const { responses, pending } = await settleApprovalRequests(first, client, {
      runId,
      maxWaitMs: 0,
      onExpired: 'refile',
    });
    expect(responses).toEqual([]);
    expect(pending).toHaveLength(1);
    const statuses = (await gh.approvalsOf(runId)).map((a) => [a.id, a.status]);
    expect(statuses).toEqual([
      [filed!.id, 'expired'],
      [pending[0]!.approval.id, 'pending'],
    ]);
  });
});

describe('a 503 in the approval step', () => {
  it('is retried per its Retry-After: the call is decided, not denied', async () => {
    let decides = 0;
    const proxy = await startFaultProxy(gh.url, (req) =>
      req.url === '/decide' && decides++ === 0 ? 'unavailable' : 'forward',
    );
    try {
      const ledger: string[] = [];
      const client = gh.agent({ url: proxy.url });
      const model = scripted(callTools({ name: 'lookup_order', input: { order: 'U1' } }), say('Shipped.'));
      await generateText({
        model,
        prompt: 'Look up U1.',
        tools: gateTools(fixtureTools(ledger), client),
        toolApproval: gatehouseToolApproval(client),
        stopWhen: () => false,
      });
      expect(ledger).toEqual(['lookup_order U1']);
      // The approval step's /decide answered 503 once and was sent again; then execute's.
      expect(proxy.seen.filter((r) => r.url === '/decide')).toHaveLength(3);
    } finally {
      await proxy.close();
    }
  });

  it('one that outlasts maxRetryMs: denied, saying Gatehouse could not check it (unavailable); nothing runs', async () => {
    const proxy = await startFaultProxy(gh.url, () => 'unavailable');
    try {
      const ledger: string[] = [];
      const client = gh.agent({ url: proxy.url });
      const model = scripted(
        callTools({ name: 'lookup_order', input: { order: 'U2' } }),
        say('Gatehouse is unavailable.'),
      );
      await generateText({
        model,
        prompt: 'Look up U2.',
        tools: gateTools(fixtureTools(ledger), client),
        toolApproval: gatehouseToolApproval(client, { maxRetryMs: 1800 }),
        stopWhen: () => false,
      });
      expect(ledger).toEqual([]);
      expect(toolOutputs(promptOf(model, 1))[0]?.output).toMatchObject({
        type: 'execution-denied',
        reason: expect.stringMatching(/not run: Gatehouse could not check it against policy \(unavailable\)/),
      });
      // Retried once within 1.8 s (Retry-After: 1): a second retry would start past the bound.
      expect(proxy.seen).toHaveLength(2);
    } finally {
      await proxy.close();
    }
  });
});

describe('streaming', () => {
  it('streamText: the same approval loop (settle reads `await result.content`), the tool runs once', async () => {
    const ledger: string[] = [];
    const runId = newRunId();
    const client = gh.agent();
    const streams: StreamPart[][] = [
      [
        { type: 'stream-start', warnings: [] },
        {
          type: 'tool-call',
          toolCallId: `call-${++calls}`,
          toolName: 'refund',
          input: JSON.stringify({ order: 'T1', amount: 150 }),
        },
        { type: 'finish', usage, finishReason: { unified: 'tool-calls', raw: undefined } },
      ],
      [
        { type: 'stream-start', warnings: [] },
        { type: 'text-start', id: 't' },
        { type: 'text-delta', id: 't', delta: 'Refunded.' },
        { type: 'text-end', id: 't' },
        { type: 'finish', usage, finishReason: { unified: 'stop', raw: undefined } },
      ],
    ];
    const model = new MockLanguageModelV4({
      doStream: async () => ({ stream: convertArrayToReadableStream(streams.shift() ?? []) }),
    });
    const options = {
      model,
      tools: gateTools(fixtureTools(ledger), client, { runId }),
      toolApproval: gatehouseToolApproval(client, { runId }),
      stopWhen: () => false,
    };
    const messages: ModelMessage[] = [{ role: 'user', content: 'Refund T1.' }];
    const first = streamText({ ...options, messages });
    const content = await first.content;
    expect(content.filter((p) => p.type === 'tool-approval-request')).toHaveLength(1);
    const [filed] = await gh.approvalsOf(runId);
    await gh.operator.approvals.grant(filed!.id);
    const { responses, pending } = await settleApprovalRequests({ content }, client, { runId, maxWaitMs: 0 });
    expect(pending).toEqual([]);
    const second = streamText({
      ...options,
      messages: [...messages, ...(await first.response).messages, { role: 'tool', content: responses }],
    });
    expect(await second.text).toBe('Refunded.');
    expect(ledger).toEqual(['refund T1 150']);
    expect((await gh.approvalsOf(runId)).map((a) => a.status)).toEqual(['consumed']);
  });

  it('a streaming tool (an async generator execute) stays one: allowed, its results stream; refused, it never starts', async () => {
    const ledger: string[] = [];
    const streaming = {
      lookup_order: tool({
        inputSchema: z.object({ order: z.string() }),
        async *execute({ order }) {
          ledger.push(`lookup_order ${order} started`);
          yield 'looking';
          yield `order ${order}: shipped`;
        },
      }),
      wipe_orders: tool({
        inputSchema: z.object({}),
        async *execute() {
          ledger.push('wipe_orders started');
          yield 'wiped';
        },
      }),
    };
    const model = scripted(
      callTools({ name: 'lookup_order', input: { order: 'A9' } }, { name: 'wipe_orders', input: {} }),
      say('Done.'),
    );
    const result = await generateText({
      model,
      prompt: 'Look up A9, wipe.',
      tools: gateTools(streaming, gh.agent()),
      stopWhen: () => false,
    });
    expect(ledger).toEqual(['lookup_order A9 started']);
    expect(result.steps[0]!.toolResults.map((r) => [r.toolName, r.output])).toEqual([
      ['lookup_order', 'order A9: shipped'],
    ]);
    const shown = toolOutputs(promptOf(model, 1));
    expect(shown.find((s) => s.toolName === 'wipe_orders')?.output.type).toBe('error-text');
  });
});

describe('gateTools({guardResults}): what a tool returns goes through the result guards before the model sees it', () => {
  const GITHUB_TOKEN = `ghp_${'a1B2c3D4e5'.repeat(4)}`;

  it('redacted: the model reads the result with the finding replaced; the tool ran as asked', async () => {
    const ledger: string[] = [];
    const model = scripted(callTools({ name: 'lookup_order', input: { order: 'ann@example.com' } }), say('Done.'));
    await generateText({
      model,
      prompt: 'Look up the order of ann@example.com.',
      tools: gateTools(fixtureTools(ledger), gh.agent(), { runId: newRunId(), guardResults: true }),
      stopWhen: () => false,
    });
    expect(ledger).toEqual(['lookup_order ann@example.com']);
    expect(toolOutputs(promptOf(model, 1))).toEqual([
      { toolName: 'lookup_order', output: { type: 'json', value: { order: '[REDACTED:email]', status: 'shipped' } } },
    ]);
  });

  it('withheld: the tool ran, the model reads GatehouseWithheldError as the tool error, never the value', async () => {
    const ledger: string[] = [];
    const model = scripted(callTools({ name: 'lookup_order', input: { order: GITHUB_TOKEN } }), say('Withheld.'));
    await generateText({
      model,
      prompt: 'Look it up.',
      tools: gateTools(fixtureTools(ledger), gh.agent(), { guardResults: true }),
      stopWhen: () => false,
    });
    expect(ledger).toEqual([`lookup_order ${GITHUB_TOKEN}`]);
    const [shown] = toolOutputs(promptOf(model, 1));
    expect(shown?.output.type).toBe('error-text');
    expect(shown?.output.value).toMatch(/^The output of the "lookup_order" action was withheld by policy\./);
    expect(JSON.stringify(shown)).not.toContain(GITHUB_TOKEN);
  });

  it("a result held for an operator's review: execute waits, as for a call's approval; granted, the model reads it", async () => {
    const ledger: string[] = [];
    const runId = newRunId();
    const model = scripted(callTools({ name: 'lookup_order', input: { order: 'TICKET-1234' } }), say('Done.'));
    await generateText({
      model,
      prompt: 'Look it up.',
      tools: gateTools(fixtureTools(ledger), gh.agent(), {
        runId,
        guardResults: true,
        onPending: (p) => void gh.operator.approvals.grant(p.id),
      }),
      stopWhen: () => false,
    });
    expect(toolOutputs(promptOf(model, 1))[0]?.output).toEqual({
      type: 'json',
      value: { order: 'TICKET-1234', status: 'shipped' },
    });
    expect((await gh.approvalsOf(runId)).map((a) => [a.kind, a.status])).toEqual([['pattern', 'consumed']]);
  });

  it('without the option, results are handed on as they are', async () => {
    const ledger: string[] = [];
    const model = scripted(callTools({ name: 'lookup_order', input: { order: 'ann@example.com' } }), say('Done.'));
    await generateText({
      model,
      prompt: 'Look.',
      tools: gateTools(fixtureTools(ledger), gh.agent()),
      stopWhen: () => false,
    });
    expect(toolOutputs(promptOf(model, 1))[0]?.output).toEqual({
      type: 'json',
      value: { order: 'ann@example.com', status: 'shipped' },
    });
  });

  it('a streaming tool: its preliminary results are held back, only the last is yielded, guarded', async () => {
    const streaming = {
      lookup_order: tool({
        inputSchema: z.object({ order: z.string() }),
        async *execute({ order }) {
          yield `looking up ${order}`;
          yield `order of ${order}: shipped`;
        },
      }),
    };
    const parts: unknown[] = [];
    const model = new MockLanguageModelV4({
      doStream: async () => ({
        stream: convertArrayToReadableStream<StreamPart>(
          parts.length === 0
            ? [
                {
                  type: 'tool-call',
                  toolCallId: 'call-stream-guard',
                  toolName: 'lookup_order',
                  input: JSON.stringify({ order: 'ann@example.com' }),
                },
                { type: 'finish', finishReason: { unified: 'tool-calls', raw: undefined }, usage },
              ]
            : [{ type: 'finish', finishReason: { unified: 'stop', raw: undefined }, usage }],
        ),
      }),
    });
    const result = streamText({
      model,
      prompt: 'Look.',
      tools: gateTools(streaming, gh.agent(), { guardResults: true }),
      stopWhen: () => false,
    });
    for await (const part of result.fullStream) {
      if (part.type === 'tool-result' || part.type === 'finish-step') parts.push(part);
    }
    const results = parts.filter((p) => (p as { type: string }).type === 'tool-result') as { output: unknown }[];
    // The SDK shows the one yielded value as a preliminary result and again as the final one.
    expect(new Set(results.map((r) => r.output))).toEqual(new Set(['order of [REDACTED:email]: shipped']));
    expect(JSON.stringify(results.map((r) => r.output))).not.toContain('ann@example.com');
  });
});
