// Every command reads its arguments the same way (src/cli/args.ts): --help/-h prints the usage on
// stdout and exits 0; an unknown command or option, a missing value or argument, an extra argument
// prints the usage on stderr and exits 2, never 1 (a failing test), so that CI can tell a typo from
// a red test. --version prints package.json's version. In-process, then through dist/main.js for the
// exit codes and streams as a shell sees them, and `serve --help`, which must start nothing.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../src/main.js';
import { EXAMPLE_POLICIES } from '../helpers/app.js';
import { CLI, ensureBuilt, ROOT, serverEnv } from '../helpers/process.js';

async function run(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await runCli(argv, { out: (s) => (out += s), err: (s) => (err += s) });
  return { code, out, err };
}

const COMMANDS = [
  'check',
  'test',
  'hash',
  'token',
  'replay',
  'cases',
  'serve',
  'mcp-proxy',
  'hook',
  'version',
  'help',
] as const;
const VERSION = (JSON.parse(readFileSync('package.json', 'utf8')) as { version: string }).version;

describe('help', () => {
  it('gatehouse --help, -h and help: the command list on stdout, exit 0', async () => {
    for (const argv of [['--help'], ['-h'], ['help'], ['help', '--help']]) {
      const r = await run(...argv);
      expect(r, argv.join(' ')).toMatchObject({ code: 0, err: '' });
      expect(r.out).toMatch(/^usage: gatehouse <command> \[options\]\n/);
      for (const name of COMMANDS) expect(r.out).toMatch(new RegExp(`\\n  ${name} `));
      expect(r.out).toContain(
        'exit status: 0 ok; 1 a failing policy test or a refused decision; 2 a usage error or invalid input',
      );
    }
  });

  it('gatehouse COMMAND --help, -h (anywhere before --, whatever else is given) and help COMMAND: its usage on stdout, exit 0', async () => {
    for (const name of COMMANDS.filter((c) => c !== 'help')) {
      const variants = [
        [name, '--help'],
        [name, '-h'],
        ['help', name],
        [name, '--bogus', 'x', '--help'],
      ];
      const outs = new Set<string>();
      for (const argv of variants) {
        const r = await run(...argv);
        expect(r, argv.join(' ')).toMatchObject({ code: 0, err: '' });
        expect(r.out, argv.join(' ')).toMatch(new RegExp(`^usage: gatehouse ${name}\\b`));
        outs.add(r.out);
      }
      expect(outs.size, name).toBe(1);
    }
    const each = await Promise.all(
      ['check', 'test', 'hash', 'token', 'serve', 'mcp-proxy', 'hook'].map(
        async (name) => (await run(name, '--help')).out,
      ),
    );
    for (const out of each) {
      expect(out).toMatch(/\noptions:\n/);
      expect(out).toMatch(/\nexit status: 0 /);
      expect(out).toContain('-h, --help');
    }
  });

  it('after --, -h is an argument, not a request for help', async () => {
    const r = await run('check', '--', '-h');
    expect(r.code).toBe(2); // a directory named -h, which does not exist
    expect(r.out).toBe('');
  });
});

describe('version', () => {
  it('--version, -v and version print the version from package.json, exit 0', async () => {
    for (const argv of [['--version'], ['-v'], ['version']])
      expect(await run(...argv)).toEqual({ code: 0, out: `${VERSION}\n`, err: '' });
    expect(await run('version', 'extra')).toMatchObject({ code: 2, out: '' });
  });
});

describe('usage errors: the usage and the problem on stderr, exit 2', () => {
  const cases: [string[], RegExp, RegExp][] = [
    [[], /^usage: gatehouse <command>/, /\ngatehouse: no command given\n$/],
    [['frobnicate'], /^usage: gatehouse <command>/, /\ngatehouse: unknown command 'frobnicate'\n$/],
    [['--frobnicate'], /^usage: gatehouse <command>/, /\ngatehouse: unknown option '--frobnicate'\n$/],
    [['help', 'frobnicate'], /^usage: gatehouse <command>/, /\ngatehouse help: unknown command 'frobnicate'\n$/],
    [['check', '--bogus'], /^usage: gatehouse check /, /\ngatehouse check: unknown option '--bogus'\n$/],
    [
      ['check', EXAMPLE_POLICIES, '--env'],
      /^usage: gatehouse check /,
      /\ngatehouse check: option '--env <value>' argument missing\n$/,
    ],
    [
      ['check', EXAMPLE_POLICIES, 'more'],
      /^usage: gatehouse check /,
      /\ngatehouse check: unexpected argument 'more'\n$/,
    ],
    [['test', '--bogus'], /^usage: gatehouse test /, /\ngatehouse test: unknown option '--bogus'\n$/],
    [['test', 'a', 'b'], /^usage: gatehouse test /, /\ngatehouse test: unexpected argument 'b'\n$/],
    [['hash'], /^usage: gatehouse hash /, /\ngatehouse hash: missing FILE\.json \(or - for standard input\)\n$/],
    [['hash', 'a.json', '--approval'], /^usage: gatehouse hash /, /\ngatehouse hash: unknown option '--approval'\n$/],
    [['token'], /^usage: gatehouse token /, /\ngatehouse token: --sub is required\n$/],
    [['serve', '--port', '1'], /^usage: gatehouse serve\n/, /\ngatehouse serve: unknown option '--port'\n$/],
    [['serve', 'now'], /^usage: gatehouse serve\n/, /\ngatehouse serve: unexpected argument 'now'\n$/],
    [
      ['mcp-proxy'],
      /^usage: gatehouse mcp-proxy /,
      /\ngatehouse mcp-proxy: missing the upstream server: -- COMMAND \[ARGS\.\.\.\] or --upstream URL\n$/,
    ],
    [['mcp-proxy', '--'], /^usage: gatehouse mcp-proxy /, /\ngatehouse mcp-proxy: missing COMMAND after --\n$/],
    [
      ['mcp-proxy', 'npx', 'server'],
      /^usage: gatehouse mcp-proxy /,
      /\ngatehouse mcp-proxy: unexpected argument 'npx'\n$/,
    ],
    [
      ['mcp-proxy', '--upstream', 'http://127.0.0.1:1/mcp', '--', 'npx'],
      /^usage: gatehouse mcp-proxy /,
      /\ngatehouse mcp-proxy: give either -- COMMAND or --upstream URL, not both\n$/,
    ],
    [
      ['mcp-proxy', '--upstream', 'file:///mcp'],
      /^usage: gatehouse mcp-proxy /,
      /\ngatehouse mcp-proxy: --upstream must be an http:\/\/ or https:\/\/ URL\n$/,
    ],
    [
      ['mcp-proxy', '--wait', '1m', '--', 'npx'],
      /^usage: gatehouse mcp-proxy /,
      /\ngatehouse mcp-proxy: --wait must be a whole number of seconds from 0 to 86400\n$/,
    ],
    [
      ['mcp-proxy', '--progress-interval', '0', '--', 'npx'],
      /^usage: gatehouse mcp-proxy /,
      /\ngatehouse mcp-proxy: --progress-interval must be a whole number of seconds from 1 to 50\n$/,
    ],
    [['hook'], /^usage: gatehouse hook /, /\ngatehouse hook: missing the agent whose hook this is \(claude-code\)\n$/],
    [
      ['hook', 'cursor'],
      /^usage: gatehouse hook /,
      /\ngatehouse hook: unknown agent 'cursor': the one hook is claude-code\n$/,
    ],
    [
      ['hook', 'claude-code', '--wait', '3601'],
      /^usage: gatehouse hook /,
      /\ngatehouse hook: --wait must be a whole number of seconds from 0 to 3600\n$/,
    ],
  ];
  for (const [argv, usage, problem] of cases) {
    it(`gatehouse ${argv.join(' ')}`, async () => {
      const r = await run(...argv);
      expect(r.code).toBe(2);
      expect(r.out).toBe('');
      expect(r.err).toMatch(usage);
      expect(r.err).toMatch(problem);
    });
  }
});

describe('invalid input exits 2, like a usage error', () => {
  it('hash of a directory or a missing file, check of a missing directory', async () => {
    const dir = await run('hash', 'test/cli/fixtures');
    expect(dir).toMatchObject({ code: 2, out: '', err: 'test/cli/fixtures: cannot read it (EISDIR)\n' });
    expect(await run('hash', 'test/cli/fixtures/nothing.json')).toMatchObject({
      code: 2,
      out: '',
      err: 'test/cli/fixtures/nothing.json: no such file\n',
    });
    const check = await run('check', 'test/cli/fixtures/no-such-dir');
    expect(check).toMatchObject({ code: 2, out: '' });
  });
});

interface Exited {
  code: number | null;
  stdout: string;
  stderr: string;
}

function cli(argv: string[], env: Record<string, string> = {}): Promise<Exited> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [CLI, ...argv],
      { cwd: ROOT, env: serverEnv(env), timeout: 30_000 },
      (err, stdout, stderr) => {
        resolve({ code: err ? (typeof err.code === 'number' ? err.code : null) : 0, stdout, stderr });
      },
    );
  });
}

describe('as a shell sees it (dist/main.js)', () => {
  beforeAll(ensureBuilt, 180_000);

  it('exit 0 with usage on stdout for --help; exit 2 (not 1) for a typo; 1 stays a failing test', async () => {
    const help = await cli(['check', '--help']);
    expect(help).toMatchObject({ code: 0, stderr: '' });
    expect(help.stdout).toMatch(/^usage: gatehouse check /);
    const typo = await cli(['check', EXAMPLE_POLICIES, '--evn', 'prod']);
    expect(typo.code).toBe(2);
    expect(typo.stdout).toBe('');
    expect(typo.stderr).toMatch(/gatehouse check: unknown option '--evn'\n$/);
    expect(typo.stderr).not.toMatch(/\n\s+at /); // no stack trace
    expect((await cli(['frobnicate'])).code).toBe(2);
    expect((await cli(['test', 'test/cli/fixtures/failing'])).code).toBe(1);
    expect(await cli(['--version'])).toEqual({ code: 0, stdout: `${VERSION}\n`, stderr: '' });
  });

  it('serve --help prints the usage and starts nothing: the configuration is not even read', async () => {
    // A service that started would refuse this configuration (exit 2, "invalid configuration").
    const r = await cli(['serve', '--help'], { JWT_SECRET: 'short', LOG_FORMAT: 'nonsense' });
    expect(r).toMatchObject({ code: 0, stderr: '' });
    expect(r.stdout).toMatch(/^usage: gatehouse serve\n/);
    expect(r.stdout).not.toContain('gatehouse is serving');
    expect(r.stdout).not.toMatch(/^\{/m); // no log line
    expect(await cli(['serve'], { JWT_SECRET: 'short', LOG_FORMAT: 'nonsense' })).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('invalid configuration'),
    });
  });
});
