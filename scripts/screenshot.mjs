// Takes docs/operator-page.png, the picture of the operator page the README shows: a real Gatehouse
// (the built dist/, on an embedded PostgreSQL in a temporary directory) with a few approvals filed,
// the page in Debian's Chromium (`apt-get install -y chromium`; playwright-core drives it and never
// downloads a browser). Run it when the page changes:
//
//   npm run docs:screenshot
import { spawn } from 'node:child_process';
import { copyFileSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { SECRET, signToken } from '../bench/lib/bodies.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const OUT = `${ROOT}/docs/operator-page.png`;
const PORT = Number(process.env.SCREENSHOT_PORT ?? 18090);
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
// Not a mkdtemp directory: those are 0700, and initdb runs as the postgres user when started as root.
const DATA_DIR = `/tmp/gatehouse-screenshot-${process.pid}`;
mkdirSync(DATA_DIR, { mode: 0o755 });
const POLICY_DIR = `${DATA_DIR}/policies`;
mkdirSync(POLICY_DIR);
copyFileSync(`${ROOT}/policies/payments.yaml`, `${POLICY_DIR}/payments.yaml`);
writeFileSync(
  `${POLICY_DIR}/files.yaml`,
  `policy: files
version: "1"
tools:
  share_file: {kind: remote_mutation}
rules:
  - {id: sharing, tools: [share_file], allow: true, confirm: true, reason: files leave the company only with an operator}
`,
);

const base = `http://127.0.0.1:${PORT}`;
const approver = signToken({ sub: 'dana', team: 'ops', roles: ['approver'] });
const server = spawn(process.execPath, ['dist/main.js', 'serve'], {
  cwd: ROOT,
  env: {
    ...process.env,
    PORT: String(PORT),
    JWT_SECRET: SECRET,
    DATA_DIR,
    POLICY_DIR,
    POLICY_ENV: 'dev',
    LOG_LEVEL: 'warn',
    DATABASE_URL: '',
  },
  stdio: ['ignore', 'inherit', 'inherit'],
});
const exited = new Promise((resolve) => server.once('exit', resolve));
try {
  let ready = false;
  for (let i = 0; i < 150 && !ready; i++) {
    ready = await fetch(`${base}/readyz`).then(
      (r) => r.ok,
      () => false,
    );
    if (!ready) await new Promise((r) => setTimeout(r, 200));
  }
  if (!ready) throw new Error('Gatehouse did not become ready in 30 s');
  const file = async (body, who) => {
    const res = await fetch(`${base}/approvals`, {
      method: 'POST',
      headers: { authorization: `Bearer ${signToken(who)}`, 'content-type': 'application/json' },
      body,
    });
    if (res.status !== 201) throw new Error(`filing: ${res.status} ${await res.text()}`);
  };
  const support = { sub: 'support-bot-7', team: 'support', agent: 'helpdesk' };
  await file(
    '{"tool":"share_file","args":{"file":"invoice\\u202Efdp.sh","to":"billing@examp\\u0131e.com"},"run":{"id":"run-77a1"}}',
    {
      sub: 'files-agent',
      team: 'finance',
      agent: 'mailer',
    },
  );
  await file(
    '{"tool":"refund","args":{"order":"A-1042","amount":120.50,"note":"customer asked twice"},"run":{"id":"run-3f9c"}}',
    support,
  );
  await file('{"tool":"refund","args":{"order":"A-1043","amount":300}}', { ...support, sub: 'support-bot-9' });

  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
  });
  const page = await browser.newPage({ viewport: { width: 1000, height: 1450 }, deviceScaleFactor: 1 });
  await page.goto(`${base}/ui`);
  await page.fill('#token', approver);
  await page.click('#signin button[type=submit]');
  await page.waitForFunction(
    () => document.querySelectorAll('article.approval').length === 3 && document.title.startsWith('(3)'),
  );
  await page
    .locator('article.approval')
    .nth(0)
    .locator('textarea[data-f=note]')
    .fill('Not a PDF: the name hides a shell script.');
  await page.screenshot({ path: OUT });
  await browser.close();
  console.log(`wrote ${OUT}`);
} finally {
  server.kill('SIGTERM');
  await exited;
  rmSync(DATA_DIR, { recursive: true, force: true });
}
