// engine.inspect driven directly, against the real PostgreSQL: an inspection that redeems nothing is
// answered without awaiting and recorded once (log and store queue the same line, with its stage,
// never the value); a result's review filed through engine.file is redeemed once; citing an approval
// without the approval database is NotConfiguredError, never an allow.
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngine, type Answer, type Engine } from '../../src/engine/index.js';
import { NotConfiguredError } from '../../src/engine/errors.js';
import type { CallLog } from '../../src/engine/parts.js';
import type { ResultInspection } from '../../src/policy/inspect.js';
import type { Identity } from '../../src/policy/model.js';
import type { DecisionLine } from '../../src/policy/record.js';
import { createTestParts, type TestEngineParts } from '../helpers/app.js';
import { policyDir } from '../helpers/process.js';

const POLICY = `
policy: outputs
tools:
  read_file: {kind: read_only}
  crm_lookup: {kind: read_only}
guards:
  - {id: file-secrets, guard: secrets, tools: [read_file], on: [result]}
  - {id: crm-review, guard: pii, tools: [crm_lookup], on: [result], action: require_approval}
  - id: tickets
    guard: pattern
    on: [llm_response]
    action: redact
    patterns: [{name: ticket, regex: "TCK-[0-9]{4,8}"}]
`;
const AGENT: Identity = Object.freeze({
  user: 'inspect-agent',
  team: 'support',
  agent: 'bot',
  roles: Object.freeze([]),
});
const GITHUB = `ghp_${'x9Y8'.repeat(9)}`;

function callLog(): CallLog & { lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const write = (level: string) => (o: object, msg: string) => lines.push({ ...o, msg, level });
  return { lines, info: write('info'), error: write('error') } as unknown as CallLog & {
    lines: Record<string, unknown>[];
  };
}

function inspection(answer: Answer) {
  if (answer.kind !== 'inspection') throw new Error(`not an inspection: ${answer.kind}`);
  return answer;
}

describe('engine.inspect', () => {
  let dir: string;
  let built: TestEngineParts;
  let offline: TestEngineParts;
  let engine: Engine;
  const queued: DecisionLine[] = [];

  beforeAll(async () => {
    dir = await policyDir({ 'outputs.yaml': POLICY });
    [built, offline] = await Promise.all([
      createTestParts({ policyDir: dir, database: true, logArgs: true }),
      createTestParts({ policyDir: dir }),
    ]);
    engine = createEngine({ ...built.parts, records: { writer: { push: (l) => queued.push(l) }, sql: built.db!.sql } });
  });
  afterAll(async () => {
    await Promise.all([built.close(), offline.close()]);
    await rm(dir, { recursive: true, force: true });
  });

  it('answers without awaiting and records once, with its stage and without the value', async () => {
    const log = callLog();
    queued.length = 0;
    const answer = engine.inspect({
      request: { stage: 'result', tool: 'read_file', args: { path: '.env' }, result: `T=${GITHUB}` },
      identity: AGENT,
      log,
    });
    expect(answer).not.toBeInstanceOf(Promise);
    const a = inspection(answer as Answer);
    expect(a.result).toMatchObject({ decision: 'deny', rule: 'file-secrets', stage: 'result' });
    expect(log.lines).toHaveLength(1);
    expect(queued).toHaveLength(1);
    const { msg: _msg, level: _level, ...line } = log.lines[0]!;
    expect(line).toEqual(queued[0]);
    expect(queued[0]).toMatchObject({
      decision_id: a.decisionId,
      stage: 'result',
      tool: 'read_file',
      decision: 'deny',
      args: { path: '.env' },
    });
    expect(JSON.stringify(queued[0])).not.toContain(GITHUB);
    const metric = await built.parts.metrics.decisions.get();
    expect(
      metric.values.find((v) => v.labels.stage === 'result' && v.labels.rule === 'file-secrets')?.value,
    ).toBeGreaterThanOrEqual(1);
  });

  it('a model stage: the record names the stage as its tool, and carries no arguments', () => {
    queued.length = 0;
    const a = inspection(
      engine.inspect({
        request: { stage: 'llm_response', content: ['see TCK-1234'] },
        identity: AGENT,
        log: callLog(),
      }) as Answer,
    );
    expect(a.result).toMatchObject({ decision: 'allow', redacted: ['see [REDACTED:ticket]'] });
    expect(queued[0]).toMatchObject({
      stage: 'llm_response',
      tool: 'llm_response',
      decision: 'allow',
      rule: 'tickets',
    });
    expect(queued[0]).not.toHaveProperty('args');
    expect(JSON.stringify(queued[0])).not.toContain('TCK-1234');
  });

  it('a review filed through engine.file is redeemed once through engine.inspect', async () => {
    const request: ResultInspection = {
      stage: 'result',
      tool: 'crm_lookup',
      args: { customer: 'C-7' },
      result: { email: 'ada@example.com' },
    };
    const filed = await engine.file({
      request: { tool: request.tool, args: request.args },
      inspection: request,
      identity: AGENT,
      claim: () => undefined,
      log: callLog(),
      seesNotes: false,
    });
    expect(filed.kind === 'text' && filed.status).toBe(201);
    const approval = JSON.parse((filed as Answer & { kind: 'text' }).body) as { id: string; result: unknown };
    expect(approval.result).toEqual(request.result);
    const grant = await built.parts.approvals!.store.grant(approval.id, { sub: 'operator-1' }, 'ok');
    expect(grant.ok).toBe(true);
    const first = inspection(
      await engine.inspect({ request, identity: AGENT, approvalId: approval.id, log: callLog() }),
    );
    expect(first.result).toMatchObject({ decision: 'allow', approval: { id: approval.id, status: 'consumed' } });
    const second = inspection(
      await engine.inspect({ request, identity: AGENT, approvalId: approval.id, log: callLog() }),
    );
    expect(second.result.decision).toBe('require_approval');
    expect(second.next).toMatchObject({ action: 'file_new' });
  });

  it('citing an approval without the approval database is NotConfiguredError, never an allow', async () => {
    const off = createEngine(offline.parts);
    const request: ResultInspection = { stage: 'result', tool: 'crm_lookup', args: {}, result: 'ada@example.com' };
    await expect(
      Promise.resolve(off.inspect({ request, identity: AGENT, approvalId: 'x', log: callLog() })),
    ).rejects.toThrow(NotConfiguredError);
    // Without approval_id the same inspection needs no database.
    expect(inspection(off.inspect({ request, identity: AGENT, log: callLog() }) as Answer).result.decision).toBe(
      'require_approval',
    );
  });
});
