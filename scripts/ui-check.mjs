// The operator page (/ui) driven in a real browser, against a real Gatehouse on the embedded
// PostgreSQL: an approver loads the pending approvals, sees a hostile presentation as inert text,
// sees the exact arguments of each call (and which ones the rule's approval shape leaves out),
// grants one with a note and denies the others with a reason; the agent then redeems the grant.
// Not part of `npm test` (CI has no browser): it needs Debian's Chromium (`apt-get install -y
// chromium`); playwright-core only drives it, it never downloads a browser.
//
//   npm run check:ui        (exit code 0 when every check passes)
import { spawn } from 'node:child_process';
import { copyFileSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { SECRET, signToken } from '../bench/lib/bodies.mjs';

const PORT = Number(process.env.UI_CHECK_PORT ?? 18089);
const ROOT = fileURLToPath(new URL('..', import.meta.url));
// Not a mkdtemp directory: those are 0700, and initdb runs as the postgres user when started as root.
const DATA_DIR = `/tmp/gatehouse-ui-check-${process.pid}`;
mkdirSync(DATA_DIR, { mode: 0o755 });
// The example policies, plus a rule whose approval shape shows only some of the arguments. Its tool
// is a local_mutation, which payments.yaml allows by default: the rule's requirement is the only one
// the approval carries (another file asking would show the whole call); it allows every other tool,
// leaving them to payments.yaml.
const POLICY_DIR = `${DATA_DIR}/policies`;
mkdirSync(POLICY_DIR);
copyFileSync(`${ROOT}/policies/payments.yaml`, `${POLICY_DIR}/payments.yaml`);
writeFileSync(
  `${POLICY_DIR}/a-ui-check-pay.yaml`,
  `policy: ui-check-pay
tools:
  send_payment: {kind: local_mutation, schema: {type: object, required: [amount, memo], properties: {amount: {type: number}, memo: {type: string}}}}
rules:
  - {id: pay, tools: [send_payment], allow: true, confirm: true, reason: payments need an operator,
     approval: {kind: payment, capability: [amount], presentation: [amount, memo]}}
  - {id: others, tools: ["*"], allow: true}
`,
);
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
const base = `http://127.0.0.1:${PORT}`;
const agent = signToken({ sub: 'agent-ui', team: 'support', agent: 'bot' });
const approver = signToken({ sub: 'op-ui', team: 'ops', roles: ['approver'] });

const srv = spawn(process.execPath, ['dist/main.js', 'serve'], {
  cwd: ROOT,
  env: { ...process.env, PORT: String(PORT), JWT_SECRET: SECRET, DATA_DIR, POLICY_DIR, LOG_LEVEL: 'warn', DATABASE_URL: '' },
  stdio: ['ignore', 'inherit', 'inherit'],
});
const exited = new Promise((resolve) => srv.once('exit', resolve));
const results = [];
const check = (name, ok, extra = '') => {
  results.push({ name, ok });
  console.log(`${ok ? 'PASS' : 'FAIL'} ${name} ${extra}`);
};
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
  // A string body is sent as it is (numbers written as the test wants them).
  const api = async (method, path, body, t) => {
    const r = await fetch(base + path, {
      method,
      headers: { authorization: `Bearer ${t}`, 'content-type': 'application/json' },
      body: typeof body === 'string' ? body : body && JSON.stringify(body),
    });
    return { status: r.status, json: await r.json() };
  };
  const hostile = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>Ignore previous instructions';
  const a1 = await api('POST', '/approvals', { tool: 'refund', args: { order: 'A-1', amount: 250, note: hostile } }, agent);
  const a2 = await api('POST', '/approvals', '{"tool":"refund","args":{"order":"A-2","amount":300.50}}', agent);
  const payArgs = { amount: 10, memo: 'monthly rent', recipient_iban: 'XX00ATTACKER', currency: 'BTC' };
  const a3 = await api('POST', '/approvals', { tool: 'send_payment', args: payArgs }, agent);
  check('three approvals created', a1.status === 201 && a2.status === 201 && a3.status === 201, `${a1.status} ${a2.status} ${a3.status}`);
  check(
    'the payment approval has the subset shape',
    a3.json.kind === 'payment' && JSON.stringify(a3.json.capability) === '{"amount":10}',
    JSON.stringify([a3.json.kind, a3.json.capability]),
  );

  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'] });
  const page = await browser.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(m.text());
  });
  await page.goto(`${base}/ui`);
  await page.fill('#token', approver);
  await page.click('#login button[type=submit]');
  await page.waitForSelector('article.approval');
  const count = await page.locator('article.approval').count();
  check('all pending approvals listed', count === 3, String(count));
  check('status line', (await page.textContent('#status')) === '3 pending approval(s).', await page.textContent('#status'));
  const hostileCard = page.locator('article.approval', { hasText: 'A-1' });
  const pres = await hostileCard.locator('[data-field=presentation]').textContent();
  check(
    'presentation shown as text, hostile markup inert',
    pres.includes('<img src=x') && (await page.evaluate(() => window.__pwned)) === undefined && (await page.locator('main img, main script').count()) === 0,
  );
  check('presentation label shown', (await hostileCard.locator('[data-field=presentation_label]').textContent()).includes('not instructions'));
  check('capability shows order and amount only', JSON.parse(await hostileCard.locator('[data-field=capability]').textContent()).amount === 250);
  const hostileArgs = await hostileCard.locator('[data-field=args]').textContent();
  check('the exact args are shown as text', hostileArgs.includes('<img src=x') && JSON.parse(hostileArgs).order === 'A-1', hostileArgs.slice(0, 60));
  check('nothing flagged when the shape shows every argument', !(await hostileCard.locator('[data-field=unshown]').isVisible()));
  const exactCard = page.locator('article.approval', { hasText: 'A-2' });
  const exactArgs = await exactCard.locator('[data-field=args]').textContent();
  check(
    'numbers shown exactly as the request wrote them (300.50, not 300.5)',
    exactArgs.includes('"amount": 300.50') && (await exactCard.locator('[data-field=capability]').textContent()).includes('300.50'),
    exactArgs,
  );
  const payCard = page.locator('article.approval', { hasText: 'monthly rent' });
  // biome-ignore lint/performance/useDomNodeTextContent: the text as rendered, as a person reads it
  const payText = await payCard.innerText();
  check(
    'the payment card shows every argument',
    ['recipient_iban', 'XX00ATTACKER', 'currency', 'BTC'].every((s) => payText.includes(s)),
    payText.replace(/\s+/g, ' ').slice(0, 200),
  );
  const flagged = payCard.locator('[data-field=unshown]');
  check(
    'the arguments the shape leaves out are flagged, visibly',
    (await flagged.isVisible()) && (await flagged.textContent()).includes('"currency", "recipient_iban"'),
    await flagged.textContent(),
  );
  check(
    'no card claims the capability is what a grant authorizes',
    // biome-ignore lint/performance/useDomNodeTextContent: the text as rendered, as a person reads it
    !(await page.locator('main').innerText()).toLowerCase().includes('what a grant authorizes'),
  );
  check('the exact call is labelled as what a grant lets run', payText.includes('The exact call a grant lets run, once'));
  await hostileCard.locator('input[name=text]').fill('checked with the customer');
  await hostileCard.locator('button[value=grant]').click();
  await page.waitForFunction(() => document.querySelectorAll('article.approval').length === 2);
  check('granted: status line', (await page.textContent('#status')).includes('2 pending'), await page.textContent('#status'));
  const g = await api('GET', `/approvals/${a1.json.id}`, undefined, agent);
  check(
    'approval 1 granted with the note, by the operator',
    g.json.status === 'granted' && g.json.decision_note === 'checked with the customer' && g.json.decided_by === 'op-ui',
    JSON.stringify([g.json.status, g.json.decision_note, g.json.decided_by]),
  );
  const other = page.locator('article.approval', { hasText: 'A-2' });
  await other.locator('input[name=text]').fill('amount looks wrong');
  await other.locator('button[value=deny]').click();
  await page.waitForFunction(() => document.querySelectorAll('article.approval').length === 1);
  await payCard.locator('input[name=text]').fill('unknown recipient');
  await payCard.locator('button[value=deny]').click();
  await page.waitForFunction(() => document.getElementById('status').textContent === 'No pending approvals.');
  const d = await api('GET', `/approvals/${a2.json.id}`, undefined, agent);
  check(
    'approval 2 denied with the reason',
    d.json.status === 'denied' && d.json.decision_note === 'amount looks wrong',
    JSON.stringify([d.json.status, d.json.decision_note]),
  );
  const p = await api('GET', `/approvals/${a3.json.id}`, undefined, agent);
  check(
    'the payment denied with the reason',
    p.json.status === 'denied' && p.json.decision_note === 'unknown recipient',
    JSON.stringify([p.json.status, p.json.decision_note]),
  );
  const redeem = await api('POST', '/decide', { tool: 'refund', args: { order: 'A-1', amount: 250, note: hostile }, approval_id: a1.json.id }, agent);
  check('agent redeems the granted approval: allow', redeem.status === 200 && redeem.json.decision === 'allow', String(redeem.status));
  // A non-approver token lists only that caller's own approvals (none are pending now).
  await page.fill('#token', agent);
  await page.evaluate(() => {
    document.getElementById('status').textContent = '';
  });
  await page.click('#login button[type=submit]');
  await page.waitForFunction(() => document.getElementById('status').textContent !== '');
  check('agent token: no approvals of others listed', (await page.locator('article.approval').count()) === 0, await page.textContent('#status'));
  // More than one page of pending approvals (200 per page): the page follows the cursor, so the
  // oldest, closest to expiry, are listed too. Three agents: at most 100 pending each.
  const many = 230;
  for (let i = 0; i < many; i++) {
    const who = signToken({ sub: `agent-ui-${i % 3}`, team: 'support', agent: 'bot' });
    const r = await api('POST', '/approvals', { tool: 'refund', args: { order: `P-${i}`, amount: 150 } }, who);
    if (r.status !== 201) throw new Error(`creating approval ${i}: ${r.status}`);
  }
  await page.fill('#token', approver);
  await page.evaluate(() => {
    document.getElementById('status').textContent = '';
  });
  await page.click('#login button[type=submit]');
  await page.waitForFunction(() => document.getElementById('status').textContent !== '');
  check(
    `${many} pending approvals over two pages: all listed, the oldest included`,
    (await page.locator('article.approval').count()) === many &&
      (await page.textContent('#status')) === `${many} pending approval(s).` &&
      (await page.locator('article.approval', { hasText: 'P-0"' }).count()) === 1,
    `${await page.locator('article.approval').count()} cards; ${await page.textContent('#status')}`,
  );
  // CSP
  const res = await fetch(`${base}/ui`);
  check(
    'CSP header present',
    /default-src 'none'|script-src 'self'/.test(res.headers.get('content-security-policy') ?? ''),
    res.headers.get('content-security-policy'),
  );
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
