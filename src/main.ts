#!/usr/bin/env node
// The `gatehouse` command: check | test | hash | token | replay | cases | serve | mcp-proxy | hook | version | help. Each command is a
// function of (argv, io) returning an exit code, so tests run them in-process. Exit codes are the
// same for all (io.ts EXIT): 0 ok, 1 a failing test or a refused decision, 2 a usage error or invalid
// input, so that CI can tell a typo from a red test.
import { readFileSync, realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { defineCommand, parseCommand, usageError } from './cli/args.js';
import { EXIT, processIo, processOutputFailed, type Io } from './cli/io.js';

interface Command {
  /** One line for the command list. */
  readonly summary: string;
  /** The command's own help text. */
  usage(): Promise<string>;
  run(argv: string[], io: Io): Promise<number>;
}

// Each command's module is loaded only when that command runs or shows its help: `hook` runs once per
// tool call, so it must not pay for what the others load (the service, the policy compiler, the
// database driver, the MCP SDK). test/cli/hook.test.ts pins what `hook` loads.
const loadCheck = () => import('./cli/check.js');
const loadTest = () => import('./cli/test.js');
const loadHash = () => import('./cli/hash.js');
const loadToken = () => import('./cli/token.js');
const loadReplay = () => import('./cli/replay.js');
const loadCases = () => import('./cli/cases.js');
const loadServe = () => import('./cli/serve.js');
const loadMcpProxy = () => import('./cli/mcp-proxy.js');
const loadHook = () => import('./cli/hook.js');

const VERSION = defineCommand({
  name: 'version',
  usage: 'usage: gatehouse version   (or gatehouse --version, -v)\n\nPrints the version of Gatehouse.\n',
  options: {},
  positionals: { min: 0, max: 0 },
});

const COMMANDS: Readonly<Record<string, Command>> = {
  check: {
    summary: 'check [DIR|FILE] [--tool T ...]    validate policies; show the rules for a tool and caller',
    usage: async () => (await loadCheck()).CHECK.usage,
    run: async (argv, io) => (await loadCheck()).runCheck(argv, io),
  },
  test: {
    summary: 'test [DIR] [--env E] [--seed N]    run the policy tests (*.test.yaml)',
    usage: async () => (await loadTest()).TEST.usage,
    run: async (argv, io) => (await loadTest()).runTest(argv, io),
  },
  hash: {
    summary: 'hash FILE.json|- [...]             the approval hash of a request, as /decide computes it',
    usage: async () => (await loadHash()).HASH.usage,
    run: async (argv, io) => (await loadHash()).runHash(argv, io),
  },
  token: {
    summary: 'token --sub U [--team T ...]       mint a development token',
    usage: async () => (await loadToken()).TOKEN.usage,
    run: async (argv, io) => (await loadToken()).runToken(argv, io),
  },
  replay: {
    summary: 'replay --policies DIR --from LOG   what a policy change flips, on recorded decisions',
    usage: async () => (await loadReplay()).REPLAY.usage,
    run: async (argv, io) => (await loadReplay()).runReplay(argv, io),
  },
  cases: {
    summary: 'cases --from LOG --id ID           a logged decision as a policy test case (*.test.yaml)',
    usage: async () => (await loadCases()).CASES.usage,
    run: async (argv, io) => (await loadCases()).runCases(argv, io),
  },
  serve: {
    summary: 'serve                              run the service (what npm start runs)',
    usage: async () => (await loadServe()).SERVE.usage,
    run: async (argv, io) => (await loadServe()).runServe(argv, io),
  },
  'mcp-proxy': {
    summary: 'mcp-proxy [--prefix P] -- CMD ...  an MCP server that asks Gatehouse before each upstream tool call',
    usage: async () => (await loadMcpProxy()).MCP_PROXY.usage,
    run: async (argv, io) => (await loadMcpProxy()).runMcpProxy(argv, io),
  },
  hook: {
    summary: "hook claude-code [--wait S]        Claude Code's PreToolUse hook: Gatehouse decides each tool call",
    usage: async () => (await loadHook()).HOOK.usage,
    run: async (argv, io) => (await loadHook()).runHook(argv, io),
  },
  version: {
    summary: 'version                            print the version (also --version, -v)',
    usage: async () => VERSION.usage,
    run: runVersion,
  },
  help: {
    summary: "help [COMMAND]                     this help, or a command's (also COMMAND --help)",
    usage: async () => USAGE,
    run: runHelp,
  },
};

const USAGE = `usage: gatehouse <command> [options]

commands:
${Object.values(COMMANDS)
  .map((c) => `  ${c.summary}`)
  .join('\n')}

gatehouse <command> --help shows a command's options.
exit status: 0 ok; 1 a failing policy test or a refused decision; 2 a usage error or invalid input
`;

export async function runCli(argv: string[], io: Io): Promise<number> {
  const [first, ...rest] = argv;
  if (first === undefined) return usageError(io, null, 'no command given', USAGE);
  if (first === '--help' || first === '-h') return runHelp(rest, io);
  if (first === '--version' || first === '-v') return runVersion(rest, io);
  const command = Object.hasOwn(COMMANDS, first) ? COMMANDS[first] : undefined;
  if (command === undefined) {
    return usageError(
      io,
      null,
      first.startsWith('-') ? `unknown option '${first}'` : `unknown command '${first}'`,
      USAGE,
    );
  }
  return command.run(rest, io);
}

async function runHelp(argv: string[], io: Io): Promise<number> {
  const [name, ...more] = argv;
  if (name === undefined || name === '--help' || name === '-h') {
    io.out(USAGE);
    return EXIT.ok;
  }
  const command = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  if (command === undefined) return usageError(io, 'help', `unknown command '${name}'`, USAGE);
  if (more.length > 0) return usageError(io, 'help', `unexpected argument '${more[0]}'`, USAGE);
  io.out(await command.usage());
  return EXIT.ok;
}

async function runVersion(argv: string[], io: Io): Promise<number> {
  const parsed = parseCommand(argv, VERSION, io);
  if (typeof parsed === 'number') return parsed;
  io.out(`${packageVersion()}\n`);
  return EXIT.ok;
}

/** The version in package.json, one directory above this file in src/ and in dist/ alike. */
function packageVersion(): string {
  const manifest = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
    version?: unknown;
  };
  return typeof manifest.version === 'string' ? manifest.version : 'unknown';
}

// Run only when this file is the program (`gatehouse` is a symlink to it under node_modules/.bin).
const entry = process.argv[1] === undefined ? '' : realpathSync(process.argv[1]);
if (entry === fileURLToPath(import.meta.url)) {
  runCli(process.argv.slice(2), processIo).then(
    (code) => {
      // Output lost to a write error (a full disk, not a reader gone) fails a command that succeeded.
      process.exitCode = code === EXIT.ok && processOutputFailed() ? EXIT.failed : code;
    },
    (err: unknown) => {
      processIo.err(`gatehouse: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exitCode = EXIT.failed;
    },
  );
}
