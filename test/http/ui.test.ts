// GET /ui: the operator page is static, locked down by its headers, and puts values on the page as
// text only (the presentation is model-chosen content: docs/spec.md section 5). Each card shows the exact
// call a grant lets run (tool and full args: the approval hash binds them, docs/spec.md section 4) and names
// the arguments neither the capability nor the presentation shows.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runInNewContext } from 'node:vm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { approverToken, createTestApp, post, token, type TestApp } from '../helpers/app.js';

const ui = (name: string): string => readFileSync(new URL(`../../src/http/ui/${name}`, import.meta.url), 'utf8');
const CARD_JS = ui('card.js');
const PAGE_JS = ui('page.js');
const PAGE_HTML = ui('page.html');

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => t.close());

/** The page's own card logic, run in a fresh context on the JSON the browser would receive. */
function cardText(approval: unknown): Record<string, string> {
  const out = runInNewContext(`${CARD_JS}\nJSON.stringify(cardText(JSON.parse(input)))`, { input: JSON.stringify(approval) }) as string;
  return JSON.parse(out) as Record<string, string>;
}

/** An approval as GET /approvals returns it (only the fields the card reads matter). */
function approvalOf(parts: {
  tool?: string;
  args: object;
  capability: object;
  presentation: object;
  requirements?: object[];
  context?: object;
}): Record<string, unknown> {
  return {
    id: '018f3c1e-7a2b-7c3d-8e4f-0123456789ab',
    status: 'pending',
    kind: 'payment',
    tool: 'send_payment',
    reason: 'payments need an operator',
    rule: 'pay',
    requester: { sub: 'agent-1', team: 'support', agent: 'bot' },
    expires_at: '2030-01-01T00:00:00.000Z',
    presentation_label: 'Model-chosen content: shown for review, not instructions to follow.',
    ...parts,
  };
}

describe('the approval page', () => {
  for (const [url, type] of [
    ['/ui', 'text/html'],
    ['/ui/card.js', 'text/javascript'],
    ['/ui/page.js', 'text/javascript'],
    ['/ui/session.js', 'text/javascript'],
    ['/ui/page.css', 'text/css'],
  ] as const) {
    it(`${url} is served without a token, with a strict CSP`, async () => {
      const res = await t.app.inject({ method: 'GET', url });
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toContain(type);
      const csp = String(res.headers['content-security-policy']);
      expect(csp).toContain("default-src 'none'");
      expect(csp).toContain("script-src 'self'");
      expect(csp).not.toContain('unsafe-inline');
      expect(csp).not.toContain('unsafe-eval');
      expect(res.headers['x-content-type-options']).toBe('nosniff');
    });
  }

  it('has no inline script (the CSP would block it) and loads card.js, session.js, then page.js', async () => {
    const html = (await t.app.inject({ method: 'GET', url: '/ui' })).body;
    expect(html).toMatch(
      /<script src="\/ui\/card\.js" defer><\/script>\n<script src="\/ui\/session\.js" defer><\/script>\n<script src="\/ui\/page\.js" defer><\/script>/,
    );
    expect(html.match(/<script/g)).toHaveLength(3);
    expect(html).not.toMatch(/\son[a-z]+=/i);
  });

  it('serves the files of src/http/ui as they are', async () => {
    for (const name of ['card.js', 'session.js', 'page.js', 'page.css']) {
      expect((await t.app.inject({ method: 'GET', url: `/ui/${name}` })).body).toBe(ui(name));
    }
    expect((await t.app.inject({ method: 'GET', url: '/ui' })).body).toBe(PAGE_HTML);
  });

  it('never turns data into HTML: values go through textContent only', () => {
    for (const sink of ['innerHTML', 'outerHTML', 'insertAdjacentHTML', 'document.write', 'eval(', 'Function(', 'srcdoc']) {
      expect(PAGE_JS, sink).not.toContain(sink);
      expect(CARD_JS, sink).not.toContain(sink);
    }
    expect(PAGE_JS).toContain('textContent');
  });

  it('labels the presentation as model-chosen content', async () => {
    const html = (await t.app.inject({ method: 'GET', url: '/ui' })).body;
    expect(html).toContain('Presentation: model-chosen content, not instructions');
    expect(html).toContain('data-field="presentation_label"');
  });

  it('shows the exact call (tool and full args) as what a grant lets run, labelled model-chosen', async () => {
    const html = (await t.app.inject({ method: 'GET', url: '/ui' })).body;
    expect(html).toContain('The exact call a grant lets run, once');
    expect(html).toContain('model-chosen content, shown as text');
    expect(html).toMatch(/<section class="call">[\s\S]*data-field="tool"[\s\S]*<pre data-field="args"><\/pre>[\s\S]*data-field="unshown"[\s\S]*<\/section>/);
    // The capability is still shown, but it is not what a grant authorizes: the args are.
    expect(html).toContain('data-field="capability"');
    expect(html).not.toMatch(/what a grant authorizes/i);
  });

  it('fills every field of the card template', () => {
    const fields = [...PAGE_HTML.matchAll(/data-field="([a-z_]+)"/g)].map((m) => m[1]);
    const texts = cardText(approvalOf({ args: { amount: 10 }, capability: { amount: 10 }, presentation: { amount: 10 } }));
    for (const field of fields) expect(Object.keys(texts), field).toContain(field);
  });

  it("shows the request's context, the host's facts the grant is bound to", () => {
    const context = { sandbox: { network: false }, repo: 'acme/api' };
    expect(JSON.parse(cardText(approvalOf({ args: {}, capability: {}, presentation: {}, context })).context!)).toEqual(context);
    expect(cardText(approvalOf({ args: {}, capability: {}, presentation: {} })).context).toBe('(none)');
  });

  it('names the run the request came from', () => {
    expect(cardText({ ...approvalOf({ args: {}, capability: {}, presentation: {} }), run_id: 'run-7' }).run_id).toBe('run-7');
    expect(cardText(approvalOf({ args: {}, capability: {}, presentation: {} })).run_id).toBe('(none)');
  });
});

describe('the card: numbers exactly as written', () => {
  it('writes a number the page kept as its source text back as that bare number (12345678901234567890, 120.50)', () => {
    // What parseExact gives in a browser with the reviver's source text (npm run check:ui drives it in Chromium).
    const exact = (source: string): string => `\u0000exact:${source}`;
    const texts = cardText(
      approvalOf({ args: { id: exact('12345678901234567890'), amount: exact('120.50'), n: 5 }, capability: { amount: exact('120.50') }, presentation: {} }),
    );
    expect(texts.args).toBe('{\n  "id": 12345678901234567890,\n  "amount": 120.50,\n  "n": 5\n}');
    expect(texts.capability).toBe('{\n  "amount": 120.50\n}');
    expect(texts.unshown).toContain('"id"');
  });

  it('parses plainly where the browser gives no source text (numbers as doubles, as before)', () => {
    const parsed = runInNewContext(`${CARD_JS}\nJSON.stringify(parseExact(input))`, { input: '{"a":120.50,"b":[1,2.0]}' }) as string;
    expect(JSON.parse(parsed)).toEqual({ a: 120.5, b: [1, 2] });
  });
});

describe('the card: the exact call, and arguments the shape leaves out', () => {
  const args = { amount: 10, memo: 'monthly rent', recipient_iban: 'XX00ATTACKER', currency: 'BTC' };

  it('shows the full args and flags the keys in neither the capability nor the presentation', () => {
    const texts = cardText(approvalOf({ args, capability: { amount: 10 }, presentation: { amount: 10, memo: 'monthly rent' } }));
    expect(texts.tool).toBe('send_payment');
    expect(JSON.parse(texts.args!)).toEqual(args);
    expect(texts.args).toContain('XX00ATTACKER');
    expect(texts.unshown).toBe('Not in the capability or the presentation, but part of the call: "recipient_iban", "currency"');
    expect(JSON.parse(texts.capability!)).toEqual({ amount: 10 });
    expect(JSON.parse(texts.presentation!)).toEqual({ amount: 10, memo: 'monthly rent' });
  });

  it('flags nothing when the shape shows every argument, or for the default shape {tool, args}', () => {
    expect(cardText(approvalOf({ args, capability: { amount: 10 }, presentation: args })).unshown).toBe('');
    const whole = { tool: 'send_payment', args };
    expect(cardText(approvalOf({ args, capability: whole, presentation: whole })).unshown).toBe('');
    // A shape that happens to pick paths named "tool" and "args" is not the default shape.
    const picked = { tool: 'x', args: 'y' };
    expect(cardText(approvalOf({ args: { ...picked, extra: 1 }, capability: picked, presentation: {} })).unshown).toContain('"extra"');
  });

  it('flags every argument when the shape shows none ({} capability and presentation)', () => {
    expect(cardText(approvalOf({ args, capability: {}, presentation: {} })).unshown).toContain('"amount", "memo", "recipient_iban", "currency"');
  });

  it('looks inside a value only part of which is shown (dotted paths, array indexes)', () => {
    const nested = { customer: { email: 'a@example.com', iban: 'XX00' }, items: [{ sku: 'A', qty: 1 }, { sku: 'B' }], empty: {} };
    const texts = cardText(
      approvalOf({
        args: nested,
        capability: { 'customer.email': 'a@example.com' },
        presentation: { 'items.0.sku': 'A', items: nested.items },
      }),
    );
    expect(texts.unshown).toBe('Not in the capability or the presentation, but part of the call: "customer.iban", "empty"');
    // A key that contains a dot is not the path through two keys.
    const dotted = cardText(approvalOf({ args: { 'a.b': 1, a: { b: 2 } }, capability: { 'a.b': 2 }, presentation: {} }));
    expect(dotted.unshown).toContain('"a.b"');
  });

  it('keeps hostile values as text in the args and the flagged keys', () => {
    const hostile = '<img src=x onerror="window.__pwned=1">';
    const texts = cardText(approvalOf({ args: { amount: 1, [hostile]: hostile }, capability: { amount: 1 }, presentation: {} }));
    expect(texts.args).toContain('<img src=x');
    expect(texts.unshown).toContain('<img src=x');
  });
});

describe('the card: every requirement', () => {
  it('lists each policy file that asked, with its own reason, and flags what none of their shapes shows', () => {
    const args = { amount: 10, memo: 'monthly rent', iban: 'XX00' };
    const texts = cardText(
      approvalOf({
        args,
        capability: { amount: 10 },
        presentation: {},
        requirements: [
          { policy: 'payments', rule: 'pay', kind: 'payment', reason: 'payments need an operator', capability: { amount: 10 }, presentation: {} },
          { policy: 'risk', rule: 'memo-review', kind: 'confirm', reason: 'risk reviews memos', capability: {}, presentation: { memo: 'monthly rent' } },
        ],
      }),
    );
    expect(texts.requirements).toBe(
      '1. payments need an operator\n   (policy payments, rule pay, kind payment)\n2. risk reviews memos\n   (policy risk, rule memo-review, kind confirm)',
    );
    expect(texts.unshown).toBe('Not in the capability or the presentation, but part of the call: "iban"');
  });
});

describe('the card for a real approval whose rule shape shows a subset of the args', () => {
  let dir: string;
  let a: TestApp;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'gatehouse-ui-'));
    await writeFile(
      join(dir, 'pay.yaml'),
      [
        'policy: pay',
        'tools:',
        '  send_payment: {kind: remote_mutation, schema: {type: object, required: [amount, memo], properties: {amount: {type: number}, memo: {type: string}}}}',
        'rules:',
        '  - {id: pay, tools: [send_payment], allow: true, confirm: true, reason: payments need an operator,',
        '     approval: {kind: payment, capability: [amount], presentation: [amount, memo]}}',
        '',
      ].join('\n'),
    );
    a = await createTestApp({ policyDir: dir, env: null, database: true });
  });
  afterAll(async () => {
    await a?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('the operator sees recipient_iban and currency, flagged, before granting', async () => {
    const args = { amount: 10, memo: 'monthly rent', recipient_iban: 'XX00ATTACKER', currency: 'BTC' };
    const created = await post(a.app, '/approvals', { tool: 'send_payment', args }, token({ sub: 'ui-agent' }));
    expect(created.statusCode, created.body).toBe(201);
    const { id } = created.json() as { id: string };
    const whole = await a.app.inject({ method: 'GET', url: `/approvals/${id}`, headers: { authorization: `Bearer ${approverToken()}` } });
    const texts = cardText(whole.json());
    expect(JSON.parse(texts.args!)).toEqual(args);
    // The API returns args in canonical key order.
    expect(texts.unshown).toBe('Not in the capability or the presentation, but part of the call: "currency", "recipient_iban"');
  });
});
