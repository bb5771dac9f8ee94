#!/usr/bin/env node
// The `gatehouse` command: check | test | hash | serve. Each command is a function of (argv, io)
// returning an exit code, so tests run them in-process.
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { runCheck } from './cli/check.js';
import { runHash } from './cli/hash.js';
import { processIo, type Io } from './cli/io.js';
import { runTest } from './cli/test.js';

const USAGE = `usage: gatehouse <command>
  check [DIR|FILE] [--env E] [--tool T --team X --user U --agent A]   validate policies; show the rules for a tool
  test [DIR]                                                           run DIR's *.test.yaml cases against DIR's policies
  hash FILE.json|- [--policies DIR --env E --user U --team T --agent A --role R]
                                                                       the approval hash of a request, decided as /decide would
  hash --document FILE.json|-                                          canonical form and sha256 of any JSON
  serve                                                                run the service (what npm start runs)
`;

export async function runCli(argv: string[], io: Io): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'check':
      return runCheck(rest, io);
    case 'test':
      return runTest(rest, io);
    case 'hash':
      return runHash(rest, io);
    case 'serve': {
      const { serve } = await import('./main.js');
      return serve(); // once the service has stopped, or could not start
    }
    default:
      io.err(USAGE);
      return 2;
  }
}

// Run only when this file is the program (`gatehouse` is a symlink to it under node_modules/.bin).
const entry = process.argv[1] === undefined ? '' : realpathSync(process.argv[1]);
if (entry === fileURLToPath(import.meta.url)) {
  runCli(process.argv.slice(2), processIo).then(
    (code) => {
      process.exitCode = code;
    },
    (err: unknown) => {
      process.stderr.write(`gatehouse: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exitCode = 1;
    },
  );
}
