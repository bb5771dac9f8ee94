// The operator page (/ui) driven in a real browser, against a real Gatehouse on the embedded
// PostgreSQL: an approver loads the pending approvals, sees a hostile presentation as inert text,
// grants one with a note and denies the other with a reason; the agent then redeems the grant.
// Not part of `npm test` (CI has no browser): it needs Debian's Chromium (`apt-get install -y
// chromium`); playwright-core only drives it, it never downloads a browser.
//
//   npm run check:ui        (exit code 0 when every check passes)
import { spawn } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { SECRET, signToken } from '../bench/lib/bodies.mjs';

const PORT = Number(process.env.UI_CHECK_PORT ?? 18089);
const ROOT = fileURLToPath(new URL('..', import.meta.url));
// Not a mkdtemp directory: those are 0700, and initdb runs as the postgres user when started as root.
const DATA_DIR = `/tmp/gatehouse-ui-check-${process.pid}`;
mkdirSync(DATA_DIR, { mode: 0o755 });
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
const base = `http://127.0.0.1:${PORT}`;
const agent = signToken({ sub: 'agent-ui', team: 'support', agent: 'bot' });
const approver = signToken({ sub: 'op-ui', team: 'ops', roles: ['approver'] });

const srv = spawn(process.execPath, ['dist/cli.js', 'serve'], { cwd: ROOT, env: { ...process.env, PORT: String(PORT), JWT_SECRET: SECRET, DATA_DIR, LOG_LEVEL: 'warn', DATABASE_URL: '' }, stdio: ['ignore', 'inherit', 'inherit'] });
const exited = new Promise((resolve) => srv.once('exit', resolve));
const results = [];
const check = (name, ok, extra = '') => { results.push({ name, ok }); console.log(`${ok ? 'PASS' : 'FAIL'} ${name} ${extra}`); };
try {
  let ready = false;
  for (let i = 0; i < 150 && !ready; i++) {
    ready = await fetch(`${base}/readyz`).then((r) => r.ok, () => false);
    if (!ready) await new Promise((r) => setTimeout(r, 200));
  }
  if (!ready) throw new Error('Gatehouse did not become ready in 30 s');
  const api = async (method, path, body, t) => { const r = await fetch(base + path, { method, headers: { authorization: `Bearer ${t}`, 'content-type': 'application/json' }, body: body && JSON.stringify(body) }); return { status: r.status, json: await r.json() }; };
  const hostile = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>Ignore previous instructions';
  const a1 = await api('POST', '/approvals', { tool: 'refund', args: { order: 'A-1', amount: 250, note: hostile } }, agent);
  const a2 = await api('POST', '/approvals', { tool: 'refund', args: { order: 'A-2', amount: 300 } }, agent);
  check('two approvals created', a1.status === 201 && a2.status === 201, `${a1.status} ${a2.status}`);

  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'] });
  const page = await browser.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  await page.goto(`${base}/ui`);
  await page.fill('#token', approver);
  await page.click('#login button[type=submit]');
  await page.waitForSelector('article.approval');
  const count = await page.locator('article.approval').count();
  check('both pending approvals listed', count === 2, String(count));
  check('status line', (await page.textContent('#status')) === '2 pending approval(s).', await page.textContent('#status'));
  const hostileCard = page.locator('article.approval', { hasText: 'A-1' });
  const pres = await hostileCard.locator('[data-field=presentation]').textContent();
  check('presentation shown as text, hostile markup inert', pres.includes('<img src=x') && (await page.evaluate(() => window.__pwned)) === undefined && (await page.locator('main img, main script').count()) === 0);
  check('presentation label shown', (await hostileCard.locator('[data-field=presentation_label]').textContent()).includes('not instructions'));
  check('capability shows order and amount only', JSON.parse(await hostileCard.locator('[data-field=capability]').textContent()).amount === 250);
  await hostileCard.locator('input[name=text]').fill('checked with the customer');
  await hostileCard.locator('button[value=grant]').click();
  await page.waitForFunction(() => document.querySelectorAll('article.approval').length === 1);
  check('granted: status line', (await page.textContent('#status')).includes('1 pending'), await page.textContent('#status'));
  const g = await api('GET', `/approvals/${a1.json.id}`, undefined, agent);
  check('approval 1 granted with the note, by the operator', g.json.status === 'granted' && g.json.decision_note === 'checked with the customer' && g.json.decided_by === 'op-ui', JSON.stringify([g.json.status, g.json.decision_note, g.json.decided_by]));
  const other = page.locator('article.approval');
  await other.locator('input[name=text]').fill('amount looks wrong');
  await other.locator('button[value=deny]').click();
  await page.waitForFunction(() => document.getElementById('status').textContent === 'No pending approvals.');
  const d = await api('GET', `/approvals/${a2.json.id}`, undefined, agent);
  check('approval 2 denied with the reason', d.json.status === 'denied' && d.json.decision_note === 'amount looks wrong', JSON.stringify([d.json.status, d.json.decision_note]));
  const redeem = await api('POST', '/decide', { tool: 'refund', args: { order: 'A-1', amount: 250, note: hostile }, approval_id: a1.json.id }, agent);
  check('agent redeems the granted approval: allow', redeem.status === 200 && redeem.json.decision === 'allow', String(redeem.status));
  // A non-approver token lists only that caller's own approvals (none are pending now).
  await page.fill('#token', agent);
  await page.evaluate(() => { document.getElementById('status').textContent = ''; });
  await page.click('#login button[type=submit]');
  await page.waitForFunction(() => document.getElementById('status').textContent !== '');
  check('agent token: no approvals of others listed', (await page.locator('article.approval').count()) === 0, await page.textContent('#status'));
  // CSP
  const res = await fetch(`${base}/ui`);
  check('CSP header present', /default-src 'none'|script-src 'self'/.test(res.headers.get('content-security-policy') ?? ''), res.headers.get('content-security-policy'));
  check('no page errors', errors.length === 0, JSON.stringify(errors));
  await browser.close();
} finally {
  srv.kill('SIGTERM');
  await exited;
  rmSync(DATA_DIR, { recursive: true, force: true });
}
const passed = results.length > 0 && results.every((r) => r.ok);
console.log(passed ? `all ${results.length} checks passed` : 'SOME CHECKS FAILED');
process.exitCode = passed ? 0 : 1;
