// Property cases (`never:` in policy test files; src/policy/never.ts, src/policy/cases.ts): which tools
// a property selects, what checking one finds and shrinks, and the load errors of the format.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createArgsAjv } from '../../src/policy/ajv.js';
import { type PropertyCase, propertySeed, readCaseFile, runPolicyTests } from '../../src/policy/cases.js';
import { decide } from '../../src/policy/decide.js';
import { formatProblem } from '../../src/policy/errors.js';
import { buildPolicySet } from '../../src/policy/load.js';
import type { PolicySet } from '../../src/policy/model.js';
import { checkTarget, type NeverProperty, selectTargets } from '../../src/policy/never.js';

function policySet(yaml: string, env: string | null = null): PolicySet {
  return buildPolicySet([{ path: 'p.yaml', bytes: Buffer.from(yaml) }], { env });
}

function read(yaml: string): ReturnType<typeof readCaseFile> {
  return readCaseFile('t.test.yaml', Buffer.from(yaml));
}

function propertyCases(yaml: string): PropertyCase[] {
  const r = read(yaml);
  expect(r.problems.map(formatProblem)).toEqual([]);
  return r.properties;
}

/** The one property of a `never:` list written as YAML flow mappings, one a line. */
function property(entry: string): NeverProperty {
  return propertyCases(`never:\n  - ${entry}\n`)[0]!.property;
}

function problems(yaml: string): string[] {
  return read(yaml).problems.map(formatProblem);
}

const SHOP = `
policy: shop
tools:
  lookup_order: {kind: read_only}
  "lookup_*": {kind: read_only, tags: [read]}
  wipe_orders: {kind: destructive, tags: [danger]}
  "drop_*": {kind: destructive}
  refund: {kind: remote_mutation, tags: [money]}
rules:
  - id: lookups
    tools: ["lookup_*"]
    allow: true
`;

describe('selectTargets: the tools of the catalogues a property selects', () => {
  const set = policySet(SHOP);
  const select = (entry: string): Record<string, readonly string[]> =>
    Object.fromEntries(selectTargets(set, property(`{decision: allow, ${entry}}`)).map((t) => [t.pattern, t.names]));

  it('by kind: exact entries by their name, glob entries by names they describe', () => {
    const got = select('kinds: destructive');
    expect(Object.keys(got)).toEqual(['wipe_orders', 'drop_*']);
    expect(got.wipe_orders).toEqual(['wipe_orders']);
    expect(got['drop_*']![0]).toBe('drop_');
    for (const name of got['drop_*']!) expect(name).toMatch(/^drop_/);
  });

  it('by any of its tags', () => {
    expect(Object.keys(select('tags: money'))).toEqual(['refund']);
    expect(Object.keys(select('tags: [danger, money]'))).toEqual(['wipe_orders', 'refund']);
  });

  it('every catalogue entry when no tool selector is given', () => {
    expect(Object.keys(select('runs: 1'))).toEqual(['lookup_order', 'lookup_*', 'wipe_orders', 'drop_*', 'refund']);
  });

  it('never a name another entry of the catalogue describes (the exact name wins over a glob)', () => {
    const got = select('tools: "lookup_*"');
    expect(Object.keys(got)).toEqual(['lookup_order', 'lookup_*']);
    expect(got['lookup_*']).not.toContain('lookup_order');
  });

  it('a glob entry under the names a narrower selector also matches', () => {
    expect(select('tools: lookup_x')).toEqual({ 'lookup_*': ['lookup_x'] });
    expect(select('tools: lookup_order')).toEqual({ lookup_order: ['lookup_order'] });
    const narrowed = select('tools: "lookup_o*"');
    expect(Object.keys(narrowed)).toEqual(['lookup_order', 'lookup_*']);
    for (const name of narrowed['lookup_*']!) expect(name).toMatch(/^lookup_o/);
    expect(narrowed['lookup_*']).not.toContain('lookup_order');
  });

  it('nothing when every selector given must match and none does', () => {
    expect(select('kinds: destructive, tags: money')).toEqual({});
    expect(select('tools: shell_exec')).toEqual({});
  });
});

const OPS = `
policy: ops
tools:
  "wipe_*": {kind: destructive}
  refund:
    kind: remote_mutation
    schema: {type: object, required: [amount], additionalProperties: false, properties: {amount: {type: number, minimum: 0}}}
  lookup: {kind: read_only}
  strict: {kind: read_only, schema: {type: object, required: [a], properties: {a: {not: {}}}}}
rules:
  - id: ops-wipes
    tools: ["wipe_*"]
    teams: [ops]
    allow: true
  - id: refunds
    tools: [refund]
    allow: true
    confirm: "amount > 100"
  - {id: lookups, tools: [lookup, strict], allow: true}
limits: {max_calls: 3}
`;

describe('checkTarget: a property over one selected tool', () => {
  const set = policySet(OPS);
  const check = (entry: string) => {
    const p = property(`{${entry}}`);
    const targets = selectTargets(set, p);
    expect(targets.length).toBe(1);
    return checkTarget(set, p, targets[0]!);
  };

  it('finds the caller a rule lets through and shrinks the request to it', () => {
    const got = check('kinds: destructive, decision: allow');
    expect(got.counterexample).toMatchObject({
      tool: 'wipe_',
      args: {},
      identity: { user: 'test-user', team: 'ops', agent: null, roles: [] },
      got: { decision: 'allow', rule: 'ops-wipes' },
    });
    expect(got.counterexample?.run).toBeUndefined();
  });

  it('holds when the callers it is told exclude that team, and then runs every run', () => {
    expect(check('kinds: destructive, decision: allow, teams: [sales, ~], runs: 150')).toEqual({
      target: 'wipe_*',
      runs: 150,
      shrinks: 0,
    });
    expect(
      check('kinds: destructive, decision: allow, claims: {sub: a, team: ops}').counterexample?.identity.team,
    ).toBe('ops');
  });

  it('generates arguments the schema accepts that reach both sides of a condition', () => {
    const got = check('tools: refund, decision: require_approval');
    const args = got.counterexample?.args;
    expect(args).toBeDefined();
    expect(args?.amount).toBeGreaterThan(100);
    expect(createArgsAjv().validate(set.plan('refund').entries[0]!.validate!.schema as object, args)).toBe(true);
    expect(got.counterexample?.got).toMatchObject({ decision: 'require_approval', rule: 'refunds' });
    expect(check('tools: refund, decision: allow').counterexample?.args).toEqual({ amount: 0 });
  });

  it('skips arguments the schema refuses: they are denied before any rule', () => {
    expect(check('tools: refund, decision: deny').counterexample).toBeUndefined();
  });

  it('varies the run view: a run at its call budget is the counterexample to "never abort"', () => {
    const got = check('tools: lookup, decision: abort');
    expect(got.counterexample?.run?.steps?.length).toBe(3);
    expect(got.counterexample?.got.rule).toBe('ops#limits.max_calls');
    expect(check('tools: lookup, decision: abort, run: {steps: []}').counterexample).toBeUndefined();
  });

  it('reports the decision the service would make for the counterexample', () => {
    const c = check('kinds: destructive, decision: allow').counterexample!;
    expect(decide(set, { tool: c.tool, args: c.args, ...(c.run ? { run: c.run } : {}) }, c.identity)).toEqual(c.got);
  });

  it('is the same every time for a seed', () => {
    expect(check('tools: refund, decision: require_approval')).toEqual(
      check('tools: refund, decision: require_approval'),
    );
  });

  it('fails, saying so, when hardly any generated arguments pass the schema', () => {
    const got = check('tools: strict, decision: abort');
    expect(got.counterexample).toBeUndefined();
    expect(got.problem).toMatch(/^too few generated arguments pass the schema of this tool \(\d+ refused\)/);
  });
});

describe('never: in a test file', () => {
  it('takes one value where a list is, and defaults name, runs and caller', () => {
    const [pc] = propertyCases('env: prod\nnever:\n  - {kinds: destructive, decision: allow, env: dev, teams: ~}\n');
    expect(pc!.envs?.map((e) => e.env)).toEqual(['dev']);
    const p = pc!.property;
    expect([...p.kinds!]).toEqual(['destructive']);
    expect([...p.decisions]).toEqual(['allow']);
    expect(p.caller).toEqual({ teams: [null] });
    expect(p).toMatchObject({ name: 'never.0', runs: 100, file: 't.test.yaml', line: 3, column: 5, key: 'never.0' });
  });

  it('claims give one caller, as a case writes them', () => {
    expect(property('{decision: allow, claims: {sub: a, team: ops}}').caller).toEqual({
      claims: { user: 'a', team: 'ops', agent: null, roles: [], claims: { sub: 'a', team: 'ops' } },
    });
  });

  it('seeds each property from the file name and its own name, not the directory', () => {
    const p = property('{name: nothing destructive, decision: allow}');
    expect(p.seed).toBe(propertySeed('t.test.yaml', 'nothing destructive'));
    expect(propertySeed('a/t.test.yaml', 'n')).toBe(propertySeed('b/t.test.yaml', 'n'));
    expect(propertySeed('t.test.yaml', 'n')).not.toBe(propertySeed('t.test.yaml', 'm'));
    expect(propertySeed('t.test.yaml', 'n')).not.toBe(propertySeed('u.test.yaml', 'n'));
  });

  it('refuses bad keys, decisions, kinds, runs out of range and globs, each where it is written, never quoting it', () => {
    const yaml = [
      'never:',
      '  - {decision: allow, toolz: [x]}',
      '  - {decision: maybe}',
      '  - {decision: [allow, sometimes]}',
      '  - {decision: allow, runs: 10001}',
      '  - {decision: allow, runs: 0}',
      '  - {decision: allow, runs: 1.5}',
      '  - {kinds: [destructive]}',
      '  - {decision: allow, kinds: dangerous}',
      '  - {decision: allow, claims: {sub: a}, teams: [x]}',
      '  - {decision: allow, tools: ["a**"]}',
      '  - {decision: allow, tools: "lookup_/../wipe"}',
      '  - {decision: allow, teams: []}',
      '',
    ].join('\n');
    const found = problems(yaml);
    for (const p of found) expect(p).not.toMatch(/maybe|sometimes|dangerous|10001|1\.5/);
    expect(found).toEqual([
      't.test.yaml:2:5: never.0: must NOT have additional properties (toolz)',
      't.test.yaml:3:16: never.1.decision: must be equal to one of the allowed values',
      't.test.yaml:4:24: never.2.decision.1: must be equal to one of the allowed values',
      't.test.yaml:5:29: never.3.runs: must be <= 10000',
      't.test.yaml:6:29: never.4.runs: must be >= 1',
      't.test.yaml:7:29: never.5.runs: must be integer',
      "t.test.yaml:8:5: never.6: must have required property 'decision'",
      't.test.yaml:9:30: never.7.kinds: must be equal to one of the allowed values',
      't.test.yaml:13:30: never.11.teams: must NOT have fewer than 1 items',
    ]);
    // The schema passes first; the checks after it run once it does.
    expect(
      problems(
        yaml
          .split('\n')
          .filter((_, i) => i === 0 || (i >= 9 && i <= 11))
          .join('\n'),
      ),
    ).toEqual([
      't.test.yaml:2:31: never.0.claims: claims give one caller: they cannot be combined with teams',
      "t.test.yaml:3:31: never.1.tools.0: glob does not compile: '**' is not supported; a single '*' already matches any characters (at index 1)",
      't.test.yaml:4:30: never.2.tools: a tool name or glob cannot have a "." or ".." path segment: requests naming one are refused',
    ]);
  });

  it('needs cases, never or both', () => {
    expect(problems('env: prod\n')).toEqual(['t.test.yaml:1:1: (file): a test file needs `cases`, `never` or both']);
    expect(problems('never: []\n')).toEqual(['t.test.yaml:1:8: never: must NOT have fewer than 1 items']);
  });
});

describe('runPolicyTests with properties', () => {
  let dir = '';
  const write = (files: Record<string, string>): string => {
    dir = mkdtempSync(join(tmpdir(), 'gatehouse-never-'));
    for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
    return dir;
  };
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('a property that selects no tool is a load problem, placed at the property', async () => {
    write({
      'p.yaml': OPS,
      't.test.yaml':
        'never:\n  - {name: fine, kinds: destructive, decision: abort, runs: 5}\n  - {name: none, tags: money, decision: allow}\n',
    });
    const r = await runPolicyTests(dir);
    expect(r.problems.map(formatProblem)).toEqual([
      `${join(dir, 't.test.yaml')}:3:5: never.1: selects no tool of the policies' catalogues: a property that checks nothing is a mistake`,
    ]);
    expect(r.properties).toEqual([]);
  });

  it('placed at the environment it names, when it names them', async () => {
    write({
      'p.yaml': OPS,
      't.test.yaml': 'never:\n  - tools: shell_exec\n    env: [dev, prod]\n    decision: allow\n',
    });
    const r = await runPolicyTests(dir);
    expect(r.problems.map(formatProblem)).toEqual([
      `${join(dir, 't.test.yaml')}:3:11: never.0.env.0: selects no tool of the policies' catalogues in this environment: a property that checks nothing is a mistake`,
      `${join(dir, 't.test.yaml')}:3:16: never.0.env.1: selects no tool of the policies' catalogues in this environment: a property that checks nothing is a mistake`,
    ]);
  });

  it('runs cases and properties together; --seed replaces every seed', async () => {
    write({
      'p.yaml': OPS,
      't.test.yaml':
        'cases:\n  - {name: a lookup, tool: lookup, want: allow}\nnever:\n  - {name: wipes, kinds: destructive, decision: allow}\n  - {name: refunds, tools: refund, decision: deny, runs: 20}\n',
    });
    const r = await runPolicyTests(dir);
    expect(r.problems).toEqual([]);
    expect(r.results.map((c) => c.failures)).toEqual([[]]);
    expect(r.properties.map((p) => [p.property.name, p.failures.length, p.runs])).toEqual([
      ['wipes', 1, expect.any(Number)],
      ['refunds', 0, 20],
    ]);
    const seeded = await runPolicyTests(dir, { seed: 7 });
    expect(seeded.properties.map((p) => p.property.seed)).toEqual([7, 7]);
    expect(seeded.properties[0]!.failures[0]!.counterexample).toMatchObject({
      tool: 'wipe_',
      identity: { team: 'ops' },
    });
  });
});
