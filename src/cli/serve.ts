// `gatehouse serve`: the service (src/service.ts), loaded only once the arguments are known to be
// right, so that `serve --help` or a typo starts nothing.
import { defineCommand, parseCommand } from './args.js';
import type { Io } from './io.js';

export const SERVE = defineCommand({
  name: 'serve',
  usage: `usage: gatehouse serve

Runs the service (what npm start runs), configured by environment variables only: PORT, HOST,
POLICY_DIR, POLICY_ENV, JWT_SECRET or JWT_PUBLIC_KEY or JWT_JWKS_URL, DATABASE_URL (default: an
embedded PostgreSQL under DATA_DIR), LOG_LEVEL, LOG_FORMAT and the others the README lists.

stdout carries the log, the decision log included: JSON lines (LOG_FORMAT=json, the default when
stdout is not a terminal) or readable lines (LOG_FORMAT=pretty, the default on a terminal). Once
serving, a banner on stderr gives the URL, the approval page (/ui), the API document
(/openapi.yaml), the process ID and, without a configured key, two development tokens.

signals: SIGTERM, SIGINT or SIGHUP stops: requests in flight are answered, the embedded
PostgreSQL is stopped, then the process exits (SIGHUP is the hang-up of a closed terminal);
SIGUSR2 reloads the policies (a set that does not load is refused, the old one kept), as
POST /admin/reload does.

options:
  -h, --help    show this help

exit status: 0 stopped cleanly; 1 something could not be closed while stopping; 2 the configuration,
the policies or the start failed, and nothing is left running
`,
  options: {},
  positionals: { min: 0, max: 0 },
});

export async function runServe(argv: string[], io: Io): Promise<number> {
  const parsed = parseCommand(argv, SERVE, io);
  if (typeof parsed === 'number') return parsed;
  const { serve } = await import('../service.js');
  return serve(process.env); // once the service has stopped, or could not start
}
