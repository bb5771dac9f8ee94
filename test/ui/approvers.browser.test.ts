// Who may answer, how many, and what, on the operator page, in a real browser (Debian's Chromium
// through playwright-core) against a real Gatehouse on a real PostgreSQL (docs/approvals.md, "The
// operator page"): a quorum of two shown as it fills (the card and the queue row, who granted by
// name) and completed by a second approver live; an approver the policy does not name told why;
// "Mine to answer"; and Edit and grant: the arguments edited, checked against the tool's schema,
// the change shown, confirmed, and decided again by Gatehouse (refused, or granted as amended).
/// <reference lib="dom" />
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type Locator, type Page } from 'playwright-core';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { approverToken, createTestApp, token, type TestApp } from '../helpers/app.js';
import { listenLoopback } from '../helpers/http.js';

const CHROMIUM = process.env['CHROMIUM'] ?? '/usr/bin/chromium';
const available = existsSync(CHROMIUM);
const required = process.env['GATEHOUSE_REQUIRE_BROWSER'] === '1';
if (!available && required) {
  describe('Chromium is required (GATEHOUSE_REQUIRE_BROWSER=1)', () => {
    it('is installed', () => {
      throw new Error(`GATEHOUSE_REQUIRE_BROWSER=1, but there is no Chromium at ${CHROMIUM}`);
    });
  });
}

// Refunds need two people of finance; over 20,000 EUR they are refused outright. Wires only the CFO answers.
const POLICIES = {
  'money.yaml': `policy: money
version: "1"
tools:
  refund:
    kind: remote_mutation
    schema:
      type: object
      required: [amount, to]
      additionalProperties: false
      properties:
        amount: {type: number, minimum: 0, x-gatehouse-format: money, x-gatehouse-currency: EUR}
        to: {type: string, minLength: 1}
        memo: {type: string, format: email}
  wire: {kind: remote_mutation}
rules:
  - {id: refunds-too-big, tools: [refund], when: "amount > 20000", allow: false, reason: refunds over 20000 EUR are never made by an agent}
  - id: refunds-two
    tools: [refund]
    allow: true
    confirm: true
    reason: refunds need two people of finance
    approval: {kind: refund_two, approvers: {roles: [finance]}, quorum: 2, presentation: [amount, to]}
  - {id: wire-cfo, tools: [wire], allow: true, confirm: true, reason: wires need the CFO, approval: {approvers: {users: [cfo]}}}
`,
};

describe.skipIf(!available)('who may answer, how many, and what, on the operator page (Chromium)', () => {
  let dir: string;
  let app: TestApp;
  let base: string;
  let browser: Browser;
  let page: Page;
  const pageErrors: string[] = [];
  const finance = (sub: string, name: string): string =>
    token({ sub, name, team: 'finance', roles: ['approver', 'finance'] });
  const ada = finance('fin-ada', 'Ada Finance');
  const bob = finance('fin-bob', 'Bob Ledger');
  const plain = approverToken('op-plain');

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'gatehouse-approvers-'));
    for (const [name, text] of Object.entries(POLICIES)) await writeFile(join(dir, name), text);
    app = await createTestApp({ policyDir: dir, env: null, database: true });
    base = `http://127.0.0.1:${await listenLoopback(app.app)}`;
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--lang=en-US'],
    });
    page = await browser.newPage({ locale: 'en-US' });
    page.setDefaultTimeout(10_000);
    page.on('pageerror', (e) => pageErrors.push(String(e)));
  });
  afterAll(async () => {
    await browser?.close();
    await app?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  let seq = 0;
  const agent = (): string => token({ sub: `agent-${++seq}`, name: 'Refund Bot', team: 'support', agent: 'bot' });
  const rest = async (method: string, path: string, body?: unknown, tok = ada) => {
    const res = await app.app.inject({
      method: method as 'GET',
      url: path,
      headers: {
        authorization: `Bearer ${tok}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { payload: typeof body === 'string' ? body : JSON.stringify(body) }),
    });
    // biome-ignore lint/suspicious/noExplicitAny: response bodies are read freely, and checked by what they say
    return { status: res.statusCode, json: res.json() as Record<string, any> };
  };
  const file = async (call: unknown, tok = agent()): Promise<{ id: string }> => {
    const r = await rest('POST', '/approvals', call, tok);
    expect(r.status, JSON.stringify(r.json)).toBe(201);
    return r.json as { id: string };
  };
  const statusOf = async (id: string): Promise<string> => (await rest('GET', `/approvals/${id}`)).json['status'];
  const card = (id: string): Locator => page.locator(`article.approval[data-id="${id}"]`);
  const statusIs = (id: string, status: string) =>
    page.waitForFunction(
      ([id, status]) => document.querySelector(`article[data-id="${id}"]`)?.getAttribute('data-status') === status,
      [id, status] as const,
    );
  const signIn = async (tok: string): Promise<void> => {
    await page.goto(`${base}/ui`);
    await page.evaluate(() => {
      sessionStorage.clear();
      localStorage.clear();
    });
    await page.goto(`${base}/ui`);
    await page.fill('#token', tok);
    await page.click('#signin button[type=submit]');
    await page.waitForFunction(() => document.getElementById('live')?.textContent?.startsWith('Live'));
    await page.waitForFunction(
      () =>
        document.getElementById('approvals')?.getAttribute('aria-busy') === 'false' &&
        /approval/.test(document.getElementById('status')?.textContent ?? ''),
    );
  };
  const grantOnPage = async (id: string): Promise<void> => {
    await card(id).locator('button[data-f=grant]').click();
    await page.click('#confirm-grant');
  };

  beforeEach(async () => {
    await app.db!.sql`update approvals set status = 'cancelled' where status in ('pending', 'granted')`;
  });

  it('a quorum of two: one grant shows "granted 1 of 2" and who, by name, on the card and its row; a second approver completes it, live', async () => {
    const a = await file({ tool: 'refund', args: { amount: 9000, to: 'ACME GmbH' } });
    await signIn(ada);
    await grantOnPage(a.id);
    await card(a.id).locator('[data-f=lead-grants]').waitFor({ state: 'visible' });
    expect(await card(a.id).locator('[data-f=lead-grants]').textContent()).toMatch(
      /^Granted 1 of 2 so far, by Ada Finance \(fin-ada\), \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\.$/,
    );
    // Said on the card once it shows the approval as it now stands (the live stream may read it again first).
    await card(a.id)
      .locator('[data-f=result]', { hasText: 'Your grant counts: 1 of 2; it waits for more grants.' })
      .waitFor();
    expect(await card(a.id).locator('[data-f=result]').textContent()).toBe(
      'Your grant counts: 1 of 2; it waits for more grants.',
    );
    expect(await card(a.id).getAttribute('data-status')).toBe('pending');
    expect(await statusOf(a.id)).toBe('pending');
    // Granting again is not offered twice by the page, and the API counts one grant per person.
    expect((await rest('POST', `/approvals/${a.id}/grant`, {})).json['grants']).toHaveLength(1);
    await page.selectOption('#f-view', 'queue');
    const row = page.locator(`#queue li.row[data-id="${a.id}"]`);
    await row.waitFor();
    expect(await row.locator('.row-quorum').textContent()).toBe('granted 1 of 2 (Ada Finance)');
    await page.selectOption('#f-view', 'cards');
    // The second person of finance grants over the API: the card becomes granted without a reload.
    expect((await rest('POST', `/approvals/${a.id}/grant`, { note: 'checked' }, bob)).json['status']).toBe('granted');
    await statusIs(a.id, 'granted');
    expect(await card(a.id).locator('button[data-f=grant]').isDisabled()).toBe(true);
  });

  it('an approver the policy does not name is told which rule and why, on the card; the approval stays pending', async () => {
    const a = await file({ tool: 'refund', args: { amount: 100, to: 'N1' } });
    await signIn(plain);
    await grantOnPage(a.id);
    const result = card(a.id).locator('[data-f=result]', { hasText: 'Not granted' });
    await result.waitFor();
    expect(await result.textContent()).toBe(
      'Not granted: you may not answer this approval: rule refunds-two of policy money (it asks for a role you do not have). It stays pending: ask someone the policy names.',
    );
    expect(await statusOf(a.id)).toBe('pending');
  });

  it('Mine to answer lists only what this approver may answer and has not granted yet', async () => {
    const refund = await file({ tool: 'refund', args: { amount: 200, to: 'M1' } });
    const wire = await file({ tool: 'wire', args: { to: 'M2' } });
    const done = await file({ tool: 'refund', args: { amount: 300, to: 'M3' } });
    expect((await rest('POST', `/approvals/${done.id}/grant`, {})).json['status']).toBe('pending');
    await signIn(ada);
    const shown = () =>
      page.locator('article.approval').evaluateAll((els) => els.map((e) => e.getAttribute('data-id')));
    expect(new Set(await shown())).toEqual(new Set([refund.id, wire.id, done.id]));
    await page.check('#f-mine');
    await page.click('#filters button[type=submit]');
    await page.waitForFunction(
      () => document.getElementById('status')?.textContent === '1 pending approval, oldest first.',
    );
    expect(await shown()).toEqual([refund.id]);
    // A new one this approver may answer joins the list; one they may not stays out.
    const later = await file({ tool: 'refund', args: { amount: 400, to: 'M4' } });
    await file({ tool: 'wire', args: { to: 'M5' } });
    await card(later.id).waitFor();
    await page.waitForFunction(
      () => document.getElementById('status')?.textContent === '2 pending approvals, oldest first.',
    );
    expect(await shown()).toEqual([refund.id, later.id]);
    await page.uncheck('#f-mine');
    await page.click('#filters button[type=submit]');
    await page.waitForFunction(() => document.querySelectorAll('article.approval').length === 5);
  });

  it('Edit and grant: the arguments are checked against the schema and the change shown before anything is sent; a refused edit says why; a granted one binds the edited call', async () => {
    const a = await file('{"tool":"refund","args":{"amount":12000.50,"to":"ACME GmbH"}}');
    await signIn(ada);
    const c = card(a.id);
    const posts: string[] = [];
    const onRequest = (r: { method(): string; url(): string; postData(): string | null }) => {
      if (r.method() === 'POST') posts.push(r.postData() ?? '');
    };
    page.on('request', onRequest);
    try {
      await c.locator('button[data-f=edit]').click();
      const editor = c.locator('[data-f=edit-args]');
      // The current arguments, pretty-printed, numbers as written, in a monospace editor.
      expect(await editor.inputValue()).toBe('{\n  "amount": 12000.50,\n  "to": "ACME GmbH"\n}');
      expect(await editor.evaluate((e) => getComputedStyle(e).fontFamily)).toMatch(/mono/i);
      expect(await c.locator('[data-f=edit-state]').textContent()).toBe(
        'No change yet: Grant… grants the call as it is.',
      );
      expect(await c.locator('[data-f=edit-grant]').isDisabled()).toBe(true);
      // Not JSON, then what the schema refuses: named where, and nothing can be sent.
      await editor.fill('{"amount": 12000.50,');
      expect(await c.locator('[data-f=edit-problems] li').allTextContents()).toEqual([
        expect.stringMatching(/^args: not JSON: /),
      ]);
      await editor.fill('{"amount": "9000", "to": "", "iban": "DE00"}');
      expect(await c.locator('[data-f=edit-problems] li').allTextContents()).toEqual([
        'args.amount: must be number, not string',
        'args.to: needs at least 1 character',
        'args.iban: is not an argument of this tool',
      ]);
      expect(await c.locator('[data-f=edit-grant]').isDisabled()).toBe(true);
      // A keyword the page does not check is named: Gatehouse checks it when granting.
      await editor.fill('{"amount": 25000, "to": "ACME GmbH", "memo": "x"}');
      expect(await c.locator('[data-f=edit-unchecked]').textContent()).toBe(
        'Not checked here: format. Gatehouse checks them when you grant.',
      );
      expect(await c.locator('[data-f=edit-diff] li').allTextContents()).toEqual([
        'args.amount: 12000.50 → 25000',
        'args.memo: (absent) → "x"',
      ]);
      // Over the cap: Gatehouse decides the edited call again and refuses it, with its rule's reason.
      await editor.fill('{"amount": 25000, "to": "ACME GmbH"}');
      await c.locator('[data-f=edit-grant]').click();
      expect(await page.textContent('#confirm-title')).toBe('Grant the edited call, once?');
      expect(await page.evaluate(() => document.activeElement?.id)).toBe('confirm-cancel');
      expect(await page.locator('#confirm-diff li').allTextContents()).toEqual(['args.amount: 12000.50 → 25000']);
      expect(await page.textContent('#confirm-note')).toContain('an amendment starts the count again');
      expect(posts).toEqual([]);
      await page.click('#confirm-grant');
      const refused = c.locator('[data-f=result]', { hasText: 'refused the edited call' });
      await refused.waitFor();
      expect(await refused.textContent()).toBe(
        'Not granted: Gatehouse refused the edited call: deny, refunds over 20000 EUR are never made by an agent (rule refunds-too-big). Nothing changed.',
      );
      expect(posts).toEqual(['{"args":{"amount":25000,"to":"ACME GmbH"}}']);
      expect(await statusOf(a.id)).toBe('pending');
      // A lower amount: granted as amended, the count started again. Sent as written; the server keeps
      // the amended number as the agent's client will send it back (9000.10 is the double 9000.1).
      await editor.fill('{"amount": 9000.10, "to": "ACME GmbH"}');
      await c.locator('[data-f=note]').fill('lowered to the invoice');
      await c.locator('[data-f=edit-grant]').click();
      await page.click('#confirm-grant');
      const granted = card(a.id).locator('[data-f=result]', { hasText: 'You granted the edited call.' });
      await granted.waitFor();
      expect(posts[1]).toBe('{"note":"lowered to the invoice","args":{"amount":9000.10,"to":"ACME GmbH"}}');
      const now = (await rest('GET', `/approvals/${a.id}`)).json;
      expect(now['status']).toBe('pending');
      expect(now['amended_by']).toBe('fin-ada');
      // The card now shows the edited call as the one a grant lets run, and what changed.
      const d = card(a.id);
      expect(await d.locator('[data-f=amended-by]').textContent()).toMatch(/^Amended by fin-ada at .* UTC: /);
      expect(await d.locator('[data-f=amended-diff] li').allTextContents()).toEqual(['args.amount: 12000.50 → 9000.1']);
      expect(await d.locator('[data-f=lead-fields] dd.money').textContent()).toBe('9,000.1 EUR');
      expect(await d.locator('[data-f=args] .num').allTextContents()).toEqual(['9000.1']);
      expect(await d.locator('[data-f=asked-args] .num').allTextContents()).toEqual(['12000.50']);
      // The count started again with the amender's grant.
      expect(await d.locator('[data-f=lead-grants]').textContent()).toMatch(
        /^Granted 1 of 2 so far, by Ada Finance \(fin-ada\), /,
      );
      // Said once the card shows the approval as it stands (the live stream may read it again first).
      await d
        .locator('[data-f=result]', {
          hasText: 'You granted the edited call. Your grant counts: 1 of 2; it waits for more grants.',
        })
        .waitFor();
      // The second person of finance grants the edited call: granted.
      expect((await rest('POST', `/approvals/${a.id}/grant`, {}, bob)).json['status']).toBe('granted');
      await statusIs(a.id, 'granted');
    } finally {
      page.off('request', onRequest);
    }
  });

  it('ran without a page error', () => {
    expect(pageErrors).toEqual([]);
  });
});
