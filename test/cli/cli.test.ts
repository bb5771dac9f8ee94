// The CLI's output, compared with golden files in test/cli/golden (UPDATE_GOLDEN=1 rewrites them).
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { runCli } from '../../src/main.js';
import { decide } from '../../src/policy/decide.js';
import { loadPolicies } from '../../src/policy/load.js';
import { EXAMPLE_POLICIES } from '../helpers/app.js';

async function run(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await runCli(argv, { out: (s) => (out += s), err: (s) => (err += s) });
  return { code, out, err };
}

function golden(name: string, actual: string): void {
  const file = `test/cli/golden/${name}`;
  if (process.env.UPDATE_GOLDEN === '1' || !existsSync(file)) writeFileSync(file, actual);
  expect(actual).toBe(readFileSync(file, 'utf8'));
}

describe('gatehouse check', () => {
  it('summarises valid policies and exits 0', async () => {
    const r = await run('check', EXAMPLE_POLICIES, '--env', 'prod');
    expect(r.code).toBe(0);
    golden('check-valid.txt', r.out);
  });

  it('--tool refuses a name the service refuses (a ".." path segment, a space), exit 2', async () => {
    for (const tool of ['lookup_/../wipe_orders', 'a/.', 'lookup order']) {
      const r = await run('check', EXAMPLE_POLICIES, '--env', 'prod', '--tool', tool);
      expect(r.code, tool).toBe(2);
      expect(r.err).toMatch(/^--tool: not a tool name the service accepts/);
      expect(r.out).toBe('');
    }
    expect((await run('check', EXAMPLE_POLICIES, '--env', 'prod', '--tool', 'github.get_issue')).code).toBe(0);
  });

  it('shows the effective rules for one caller and tool', async () => {
    const r = await run('check', EXAMPLE_POLICIES, '--env', 'prod', '--tool', 'refund', '--team', 'support');
    expect(r.code).toBe(0);
    golden('check-tool.txt', r.out);
  });

  it('shows every description of a tool two catalogues describe differently, and the rules under each', async () => {
    const r = await run('check', 'test/cli/fixtures/views', '--tool', 'send_wire');
    expect(r.code).toBe(0);
    golden('check-views.txt', r.out);
  });

  it('warns (stderr, exit 0) about an abort or deny rule whose condition cannot be decided for a pipe, a glob or a redirection', async () => {
    const r = await run('check', 'test/cli/fixtures/undecided');
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/\nok: 1 file for environment dev\n$/);
    expect(r.err).toBe(
      'warning: test/cli/fixtures/undecided/shell.yaml:9:11: rules.0.when: rule "no-rm-rf" aborts whenever its condition cannot be decided, ' +
        'as for a pipe (`git diff | head`), a glob (`ls *.ts`), a redirection (`sort notes.txt > sorted.txt`) ' +
        '(`argv(command)` has no value (the command is missing or not a string, or a shell would do more than split it into words: ' +
        'an operator, a redirection, an expansion, a glob or a second line)); if that is not meant, decide those inputs in the condition, e.g. with has()\n',
    );
  });

  it('warns (stderr, exit 0) when a file without a scope has a default that tightens a tool another file allows', async () => {
    const r = await run('check', 'test/cli/fixtures/trap');
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/\nok: 2 files for environment dev\n$/);
    golden('check-warnings.txt', r.err);
    // What the warning is about: the three-rule file's side_effects default holds a $5 refund, and
    // the decision names that file's default.
    const who = { user: 'ann', team: 'support', agent: null, roles: [] };
    const trap = await loadPolicies('test/cli/fixtures/trap');
    expect(decide(trap, { tool: 'refund', args: { amount: 5 } }, who)).toMatchObject({
      decision: 'require_approval',
      rule: 'vendor#default',
    });
    const scoped = await loadPolicies('test/cli/fixtures/scoped');
    expect(decide(scoped, { tool: 'refund', args: { amount: 5 } }, who)).toMatchObject({
      decision: 'allow',
      rule: 'refund-support',
    });
  });

  it("with scopes in place: no warning, and each file's scope in the summary (users counted)", async () => {
    const r = await run('check', 'test/cli/fixtures/scoped');
    expect(r).toMatchObject({ code: 0, err: '' });
    golden('check-scoped.txt', r.out);
  });

  it('--tool shows each scope and whether the tool and caller are in it; user ids are counted, never shown', async () => {
    const any = await run('check', 'test/cli/fixtures/scoped', '--tool', 'dispatch_vendor');
    expect(any.code).toBe(0);
    golden('check-tool-scope.txt', any.out);
    const given = await run(
      'check',
      'test/cli/fixtures/scoped',
      '--tool',
      'refund',
      '--user',
      'ann',
      '--team',
      'support',
    );
    expect(given.out).toContain('caller: team support, user (given), agent (any)');
    expect(given.out).toContain('outside the scope for this tool: the file gives no answer');
    const outsider = await run('check', 'test/cli/fixtures/scoped', '--tool', 'dispatch_vendor', '--user', 'zed');
    expect(outsider.out).toContain('outside the scope for this caller: the file gives no answer');
    const unknown = await run('check', 'test/cli/fixtures/scoped', '--tool', 'shell_exec');
    expect(unknown.out).toMatch(
      /no file's scope selects this call: the built-in default answers, side_effects → deny \(kind unknown\)\n$/,
    );
    const rules = await run('check', 'test/cli/fixtures/trap', '--tool', 'refund');
    expect(rules.out).toContain('(only for teams [support]; only for 3 users)');
    for (const r of [any, given, outsider, unknown, rules])
      for (const id of ['ann', 'ben', 'cy', 'zed']) expect(r.out).not.toMatch(new RegExp(`\\b${id}\\b`));
  });

  it('marks rules that depend on a caller it was not told', async () => {
    const r = await run('check', EXAMPLE_POLICIES, '--env', 'dev', '--tool', 'refund');
    expect(r.code).toBe(0);
    expect(r.out).toContain('only for teams [support]');
  });

  it('exits 2 with every problem as file:line:column: key: message', async () => {
    const r = await run('check', 'test/cli/fixtures/broken', '--env', 'dev');
    expect(r.code).toBe(2);
    expect(r.out).toBe('');
    golden('check-broken.txt', r.err);
  });

  it('without --env or POLICY_ENV, loads the environment npm start serves (dev), and says so on stderr', async () => {
    vi.stubEnv('POLICY_ENV', '');
    vi.stubEnv('NODE_ENV', '');
    try {
      const r = await run('check', EXAMPLE_POLICIES);
      expect(r.code).toBe(0);
      expect(r.out).toMatch(/\nok: 1 file for environment dev\n$/);
      expect(r.err).toBe(
        'POLICY_ENV is not set: loading the "dev" environment, as npm start serves it outside production (--env E for another)\n',
      );
      // Policies that declare no environments need none: nothing to say.
      expect(await run('check', 'test/cli/fixtures/scoped')).toMatchObject({ code: 0, err: '' });
    } finally {
      vi.unstubAllEnvs();
    }
  });

  it('with NODE_ENV=production and no POLICY_ENV (the service refuses to start), exits 2 listing the environments', async () => {
    vi.stubEnv('POLICY_ENV', '');
    vi.stubEnv('NODE_ENV', 'production');
    try {
      const r = await run('check', EXAMPLE_POLICIES);
      expect(r.code).toBe(2);
      expect(r.err).toMatch(
        /payments\/payments\.yaml:\d+:\d+: environments: this file declares environments \(dev, prod\): set POLICY_ENV \(CLI: --env\)/,
      );
      const other = await run('check', EXAMPLE_POLICIES, '--env', 'staging');
      expect(other.code).toBe(2);
      expect(other.err).toContain('POLICY_ENV "staging" is not among the declared environments (dev, prod)');
    } finally {
      vi.unstubAllEnvs();
    }
  });

  it('prints a policy version as written: `version: v3` is "version v3", never "vv3"', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gatehouse-cli-version-'));
    try {
      writeFileSync(join(dir, 'p.yaml'), 'policy: p\nversion: v3\ndefault: deny\n');
      const r = await run('check', dir);
      expect(r.code).toBe(0);
      expect(r.out).toContain('  p version v3  sha256:');
      expect(r.out).not.toContain('vv3');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('reads POLICY_ENV as the service does when --env is not given (and --env wins)', async () => {
    vi.stubEnv('POLICY_ENV', 'prod');
    try {
      expect(await run('check', EXAMPLE_POLICIES)).toMatchObject({
        code: 0,
        out: expect.stringMatching(/for environment prod\n$/),
      });
      expect(await run('check', EXAMPLE_POLICIES, '--env', 'dev')).toMatchObject({
        code: 0,
        out: expect.stringMatching(/for environment dev\n$/),
      });
    } finally {
      vi.unstubAllEnvs();
    }
  });
});

describe('gatehouse test', () => {
  it('passes the shipped examples', async () => {
    const r = await run('test', EXAMPLE_POLICIES);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/^(?:\d+ cases, \d+ properties \(\d+ runs\): )?\d+ passed, 0 failed\n$/);
    expect(r.err).toBe('');
  });

  it('warns (stderr, exit 0) about a property no generated request could break', async () => {
    const r = await run('test', 'test/cli/fixtures/undecided');
    expect(r.code).toBe(0);
    expect(r.out).toBe('1 case, 1 property (100 runs): 2 passed, 0 failed\n');
    expect(r.err).toBe(
      'warning: test/cli/fixtures/undecided/shell.test.yaml:4: make is never allowed: shell_exec: no generated request reached a rule ' +
        'that can answer allow ("git-status" (shell)): no request generated could have broken the property\n',
    );
  });

  it('prints one table of disagreements and exits 1', async () => {
    const r = await run('test', 'test/cli/fixtures/failing');
    expect(r.code).toBe(1);
    golden('test-failing.txt', r.out);
  });

  it('--env gives the environment of cases that name none', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gatehouse-cli-env-'));
    try {
      writeFileSync(join(dir, 'p.yaml'), 'policy: p\nenvironments: [dev, prod]\ndefault: {dev: allow, prod: deny}\n');
      writeFileSync(join(dir, 'p.test.yaml'), 'cases:\n  - {name: open in dev, tool: t, want: allow}\n');
      vi.stubEnv('POLICY_ENV', '');
      const none = await run('test', dir);
      expect(none.code).toBe(2);
      expect(none.err).toMatch(/environments: .*--env/);
      expect(await run('test', dir, '--env', 'dev')).toMatchObject({ code: 0, out: '1 passed, 0 failed\n' });
      expect((await run('test', dir, '--env', 'prod')).code).toBe(1);
    } finally {
      vi.unstubAllEnvs();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('exits 2 when the directory cannot be read', async () => {
    const r = await run('test', 'test/cli/fixtures/no-such-dir');
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/no-such-dir:1:1: .*cannot read this directory \(ENOENT\)/);
  });

  it('refuses, like the service, a case or a policy naming a tool with a "." or ".." path segment', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gatehouse-cli-dots-'));
    try {
      writeFileSync(join(dir, 'p.yaml'), 'policy: p\nrules:\n  - tools: ["lookup_*"]\n    allow: true\n');
      writeFileSync(
        join(dir, 'p.test.yaml'),
        'cases:\n  - {name: ok, tool: lookup_order, want: allow}\n  - {name: traversal, tool: "lookup_/../wipe_orders", want: allow}\n',
      );
      const cases = await run('test', dir);
      expect(cases.code).toBe(2);
      expect(cases.err).toMatch(/p\.test\.yaml:3:\d+: cases\.1\.tool: must match pattern/);
      writeFileSync(join(dir, 'p.test.yaml'), 'cases:\n  - {name: ok, tool: lookup_order, want: allow}\n');
      writeFileSync(join(dir, 'q.yaml'), 'policy: q\ntools:\n  "a/./b": {kind: read_only}\n');
      const policy = await run('test', dir);
      expect(policy.code).toBe(2);
      expect(policy.err).toMatch(
        /q\.yaml:3:3: tools\.a\/\.\/b: a tool name or glob cannot have a "\." or "\.\." path segment/,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('exits 2 on a bad test file', async () => {
    const r = await run('test', 'test/cli/fixtures/badcases');
    expect(r.code).toBe(2);
    golden('test-badcases.txt', r.err);
  });

  it('counts the properties and their runs beside the cases', async () => {
    const r = await run('test', 'test/cases/never-payments');
    expect(r).toMatchObject({ code: 0, out: '1 case, 6 properties (550 runs): 7 passed, 0 failed\n', err: '' });
  });

  it('prints each broken property with its shrunk counterexample, and exits 1', async () => {
    const r = await run('test', 'test/cli/fixtures/never-broken');
    expect(r.code).toBe(1);
    expect(r.err).toBe('');
    golden('test-never-broken.txt', r.out);
  });

  it('--seed replays the counterexample a failure printed', async () => {
    const block = (out: string, name: string): string => out.split('\n\n').find((b) => b.includes(`: ${name}\n`)) ?? '';
    const first = await run('test', 'test/cli/fixtures/never-broken');
    const found = block(first.out, 'a refund never ends the run');
    const seed = /--seed (\d+) replays it/.exec(found)?.[1];
    expect(seed).toBeDefined();
    const again = await run('test', 'test/cli/fixtures/never-broken', '--seed', seed!);
    expect(again.code).toBe(1);
    expect(block(again.out, 'a refund never ends the run')).toBe(found);
    const other = await run('test', 'test/cli/fixtures/never-broken', '--seed', '1');
    expect(other.out).toContain('--seed 1 replays it');
  });

  it('--seed must be a 31-bit integer (exit 2)', async () => {
    for (const seed of ['-1', '2147483648', 'x', '1.5']) {
      const r = await run('test', 'test/cli/fixtures/never-broken', `--seed=${seed}`);
      expect(r.code, seed).toBe(2);
      expect(r.err).toMatch(/gatehouse test: --seed must be an integer from 0 to 2147483647\n$/);
    }
  });

  it('exits 2 on a bad property, each problem where it is written', async () => {
    const r = await run('test', 'test/cli/fixtures/never-bad');
    expect(r.code).toBe(2);
    expect(r.out).toBe('');
    golden('test-never-bad.txt', r.err);
  });

  it('exits 2 on a property that selects no tool: it would check nothing', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gatehouse-cli-never-'));
    try {
      writeFileSync(join(dir, 'p.yaml'), 'policy: p\ntools:\n  lookup: {kind: read_only}\n');
      writeFileSync(
        join(dir, 'p.test.yaml'),
        'never:\n  - {name: no destructive tool here, kinds: destructive, decision: allow}\n',
      );
      const r = await run('test', dir);
      expect(r.code).toBe(2);
      expect(r.err).toBe(
        `${join(dir, 'p.test.yaml')}:2:5: never.0: selects no tool of the policies' catalogues: a property that checks nothing is a mistake\n`,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('gatehouse check --tool: who may answer', () => {
  it("names a rule's approvers, quorum and separation (users counted, never listed)", async () => {
    const refund = await run('check', 'test/fixtures/policies/approvers', '--tool', 'refund');
    expect(refund.code).toBe(0);
    expect(refund.out).toContain(
      "answered by roles [finance]; 2 approvers must grant; no approver of the requester's team",
    );
    const wire = await run('check', 'test/fixtures/policies/approvers', '--tool', 'wire');
    expect(wire.out).toContain('answered by 1 user');
    expect(wire.out).not.toContain('[cfo]');
  });
});

describe('gatehouse hash', () => {
  it('prints the canonical form and the approval hash of an approval hash input (it has kind)', async () => {
    const r = await run('hash', 'test/cli/fixtures/request.json');
    expect(r.code).toBe(0);
    golden('hash-approval.txt', r.out);
  });

  it('a hand-written input with who may answer hashes as the request decided under a policy that narrows it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gatehouse-hash-'));
    try {
      const args = { n: 1 };
      writeFileSync(join(dir, 'call.json'), JSON.stringify({ tool: 'refund', args }));
      writeFileSync(
        join(dir, 'input.json'),
        JSON.stringify({
          tool: 'refund',
          args,
          // The rule's approval block names a kind, so its shapes are its own (none: `{}`).
          kind: 'refund_two',
          capability: {},
          presentation: {},
          approvers: { roles: ['finance'] },
          quorum: 2,
          separate_from_requester: 'team',
        }),
      );
      const decided = await run(
        'hash',
        join(dir, 'call.json'),
        '--policies',
        'test/fixtures/policies/approvers',
        '--team',
        'support',
      );
      expect(decided.err).toBe('');
      const written = await run('hash', join(dir, 'input.json'));
      expect(written.err).toBe('');
      expect(written.out).toBe(decided.out);
      expect(written.out).toContain('"quorum":2');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('decides a request as /decide would and prints its approval hash: the same as the hand-written input', async () => {
    const r = await run(
      'hash',
      'test/cli/fixtures/refund-request.json',
      '--policies',
      EXAMPLE_POLICIES,
      '--env',
      'prod',
      '--team',
      'support',
    );
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    // refund-support's approval shape (kind refund_over_cap, capability [order, amount], presentation
    // [order, amount, note]) gives exactly the descriptor written by hand in request.json.
    expect(r.out).toBe(readFileSync('test/cli/golden/hash-approval.txt', 'utf8'));
  });

  it('without --env or POLICY_ENV, decides in the environment npm start serves (dev), as its /decide would', async () => {
    vi.stubEnv('POLICY_ENV', '');
    vi.stubEnv('NODE_ENV', '');
    try {
      const r = await run(
        'hash',
        'test/cli/fixtures/refund-request.json',
        '--policies',
        EXAMPLE_POLICIES,
        '--team',
        'support',
      );
      const dev = await run(
        'hash',
        'test/cli/fixtures/refund-request.json',
        '--policies',
        EXAMPLE_POLICIES,
        '--team',
        'support',
        '--env',
        'dev',
      );
      expect(r.code).toBe(dev.code);
      expect(r.out).toBe(dev.out);
      expect(r.err).toContain('POLICY_ENV is not set: loading the "dev" environment');
    } finally {
      vi.unstubAllEnvs();
    }
  });

  it('hashes every requirement of an approval several policy files ask for, as the service does', async () => {
    const vector = JSON.parse(readFileSync('test/fixtures/canonical/approval-two-requirements.json', 'utf8')) as {
      canonical: string;
      hash: string;
    };
    const input = await run('hash', 'test/cli/fixtures/two-requirements.json');
    expect(input.err).toBe('');
    expect(input.out).toBe(`${vector.canonical}\n${vector.hash}\n`);
    const decided = await run(
      'hash',
      'test/cli/fixtures/refund-request.json',
      '--policies',
      'test/fixtures/policies/two-askers',
    );
    expect(decided.code).toBe(0);
    expect(decided.out).toMatch(
      /^\{"args":\{[^\n]*\},"requirements":\[\{"capability":\{"amount":120\.0,"order":"A1"\},"kind":"refund_over_cap",[^\n]*\},\{"capability":\{"args":/,
    );
  });

  it('a request whose answer is not require_approval has no approval hash: exit 1, saying what it got', async () => {
    const r = await run('hash', 'test/cli/fixtures/refund-small.json', '--env', 'prod', '--team', 'support');
    expect(r.code).toBe(1);
    expect(r.out).toBe('');
    expect(r.err).toBe(
      'test/cli/fixtures/refund-small.json: decided allow by refund-support (rule "refund-support" allows it): only a require_approval answer has an approval hash\n',
    );
  });

  it('--document prints the canonical form and SHA-256 of any JSON, numbers as written', async () => {
    const r = await run('hash', '--document', 'test/cli/fixtures/request.json');
    expect(r.code).toBe(0);
    golden('hash.txt', r.out);
    const n = await run('hash', '--document', 'test/cli/fixtures/number.json');
    expect(n.out.split('\n')[0]).toBe('1.0');
  });

  it('refuses a request whose tool has a ".." path segment, as /decide does', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gatehouse-cli-hash-'));
    try {
      writeFileSync(join(dir, 'r.json'), '{"tool":"lookup_/../wipe_orders","args":{}}');
      const r = await run('hash', join(dir, 'r.json'), '--env', 'prod');
      expect(r.code).toBe(2);
      expect(r.err).toMatch(/not a request as \/decide takes it: \/tool must match pattern/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses what is neither a request nor a hash input, bad options, and input that is not strict JSON', async () => {
    const wrong = await run('hash', 'test/cli/fixtures/number.json');
    expect(wrong.code).toBe(2);
    expect(wrong.err).toMatch(/want a request \{tool, args, run\}/);
    const option = await run('hash', 'test/cli/fixtures/request.json', '--approval');
    expect(option.code).toBe(2);
    expect(option.err).toMatch(/usage: gatehouse hash/);
    const broken = await run('hash', 'test/cli/fixtures/broken/a.yaml');
    expect(broken.code).toBe(2);
    expect(broken.err).toMatch(/a\.yaml: /);
  });
});

describe('usage', () => {
  it('prints usage and exits 2 for an unknown command', async () => {
    const r = await run('frobnicate');
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/^usage: gatehouse/);
  });
});
