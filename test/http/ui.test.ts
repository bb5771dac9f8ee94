// GET /ui: the operator page is static, locked down by its headers, and puts values on the page as
// text only. The card's logic (src/http/ui/card.js) runs here in a fresh context on the JSON the
// browser would receive: numbers and strings as written, every character that hides or poses as
// another shown as an escape and reported, and the arguments no requirement picks named. The page
// itself is driven in Chromium by test/ui/page.browser.test.ts.
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runInNewContext } from 'node:vm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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

interface Part {
  text: string;
  esc?: boolean;
  title?: string;
}
interface Token {
  k: string;
  text?: string;
  parts?: Part[];
}
interface Finding {
  where: string;
  kind: string;
  text: string;
}
interface View {
  tool: string;
  args: Token[];
  context: Token[] | null;
  requirements: { reason: Part[]; source: string }[];
  unshown: string[];
  requester: Part[];
  run: Part[];
  policies: string;
  findings: Finding[];
}

/** card.js's cardView of an approval given as JSON text (the body GET /approvals/{id} answers). */
function cardView(body: string): View & { argsText: string; contextText: string | null } {
  const out = runInNewContext(
    `${CARD_JS}\nconst v = cardView(parseExact(input)); JSON.stringify({ ...v, argsText: tokensText(v.args), contextText: v.context && tokensText(v.context) })`,
    { input: body },
  ) as string;
  return JSON.parse(out) as View & { argsText: string; contextText: string | null };
}
/** card.js's inspect() of one string. */
function inspect(s: string, json = false): { parts: Part[]; findings: { kind: string; text: string }[] } {
  return JSON.parse(runInNewContext(`${CARD_JS}\nJSON.stringify(inspect(input, json))`, { input: s, json }) as string);
}
const shown = (s: string): string =>
  inspect(s)
    .parts.map((p) => p.text)
    .join('');

/** An approval as GET /approvals/{id} returns it (only the fields the card reads matter), as JSON text. */
function approvalJson(parts: Record<string, unknown> & { argsText?: string }): string {
  const { argsText, ...rest } = parts;
  const body = JSON.stringify({
    id: '018f3c1e-7a2b-7c3d-8e4f-0123456789ab',
    status: 'pending',
    kind: 'payment',
    tool: 'send_payment',
    reason: 'payments need an operator',
    rule: 'pay',
    requester: { sub: 'agent-1', team: 'support', agent: 'bot' },
    run_id: null,
    created_at: '2029-12-31T00:00:00.000Z',
    expires_at: '2030-01-01T00:00:00.000Z',
    policies: [{ policy: 'pay', version: '3', digest: `sha256:${'a'.repeat(64)}` }],
    capability: {},
    presentation: {},
    args: '@ARGS@',
    ...rest,
  });
  return body.replace('"@ARGS@"', argsText ?? JSON.stringify(parts['args'] ?? {}));
}

describe('the approval page', () => {
  for (const [url, type] of [
    ['/ui', 'text/html'],
    ['/ui/card.js', 'text/javascript'],
    ['/ui/edit.js', 'text/javascript'],
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
      expect(csp).toContain("connect-src 'self'");
      expect(csp).not.toContain('unsafe-inline');
      expect(csp).not.toContain('unsafe-eval');
      expect(res.headers['x-content-type-options']).toBe('nosniff');
    });
  }

  it('has no inline script or handler (the CSP would block them) and loads money.js, card.js, edit.js, session.js, then page.js', async () => {
    const html = (await t.app.inject({ method: 'GET', url: '/ui' })).body;
    expect(html).toMatch(
      /<script src="\/ui\/money\.js" defer><\/script>\n<script src="\/ui\/card\.js" defer><\/script>\n<script src="\/ui\/edit\.js" defer><\/script>\n<script src="\/ui\/session\.js" defer><\/script>\n<script src="\/ui\/page\.js" defer><\/script>/,
    );
    expect(html.match(/<script/g)).toHaveLength(5);
    expect(html).not.toMatch(/\son[a-z]+=/i);
    expect(html).not.toMatch(/\sstyle=/i);
  });

  it('serves the files of src/http/ui as they are', async () => {
    for (const name of ['money.js', 'card.js', 'edit.js', 'session.js', 'page.js', 'page.css']) {
      expect((await t.app.inject({ method: 'GET', url: `/ui/${name}` })).body).toBe(ui(name));
    }
    expect((await t.app.inject({ method: 'GET', url: '/ui' })).body).toBe(PAGE_HTML);
  });

  it('never turns data into HTML: values go through textContent only', () => {
    for (const sink of [
      'innerHTML',
      'outerHTML',
      'insertAdjacentHTML',
      'document.write',
      'eval(',
      'Function(',
      'srcdoc',
    ]) {
      expect(PAGE_JS, sink).not.toContain(sink);
      expect(CARD_JS, sink).not.toContain(sink);
    }
    expect(PAGE_JS).toContain('textContent');
  });

  it('calls the API through one function, which adds the credentials', () => {
    expect(PAGE_JS.match(/\bfetch\(/g)).toHaveLength(1);
    expect(PAGE_JS.match(/authorization/g)).toHaveLength(1);
  });

  it('holds no form around a decision: Enter in a text field submits nothing', () => {
    const card = PAGE_HTML.slice(PAGE_HTML.indexOf('<template id="card">'), PAGE_HTML.indexOf('</template>'));
    expect(card).not.toContain('<form');
    expect(card).not.toContain('type="submit"');
    expect(card).toMatch(/<textarea data-f="note"/);
    expect(card).toMatch(/<textarea data-f="message"/);
  });
});

describe('the card: numbers and strings exactly as written', () => {
  it('keeps every number as its text, and every string a quoted string: no marker can make one the other', () => {
    const argsText =
      '{"id":12345678901234567890,"amount":120.50,"tiny":1e-400,"memo":"\\u0000exact:12345","digits":"12345","n":5}';
    const v = cardView(approvalJson({ argsText }));
    expect(v.argsText).toBe(
      '{\n  "id": 12345678901234567890,\n  "amount": 120.50,\n  "tiny": 1e-400,\n  "memo": "\\u0000exact:12345",\n  "digits": "12345",\n  "n": 5\n}',
    );
    expect(v.args.filter((x) => x.k === 'num').map((x) => x.text)).toEqual([
      '12345678901234567890',
      '120.50',
      '1e-400',
      '5',
    ]);
    expect(v.args.filter((x) => x.k === 'str').map((x) => x.parts!.map((p) => p.text).join(''))).toEqual([
      '"\\u0000exact:12345"',
      '"12345"',
    ]);
    expect(v.findings).toEqual([{ where: 'args.memo', kind: 'control', text: 'U+0000 NULL (a control character)' }]);
  });

  it('writes quotes and backslashes in strings as JSON does; empty containers, literals and nesting as JSON.stringify(v, null, 2)', () => {
    const args = { q: 'say "hi" \\ bye', list: [1, [], {}, true, null], nested: { a: { b: 'c' } } };
    expect(cardView(approvalJson({ args })).argsText).toBe(JSON.stringify(args, null, 2));
  });

  it('parses strictly: trailing text or a bad escape is refused', () => {
    for (const bad of ['{"a":1} x', '{"a":"\\x"}', '{"a":01}', '[1,]', '{"a" 1}']) {
      expect(() => runInNewContext(`${CARD_JS}\nparseExact(input)`, { input: bad }), bad).toThrow(/JSON/);
    }
  });
});

describe('the card: characters that hide or pose as others', () => {
  it('a right-to-left override, a zero-width space and a look-alike letter are escapes, each reported', () => {
    expect(shown('invoice\u202Efdp.sh')).toBe('invoice\\u202Efdp.sh');
    expect(shown('C-9\u202E0001')).toBe('C-9\\u202E0001');
    expect(shown('A\u200B1')).toBe('A\\u200B1');
    expect(shown('p\u0430ypal')).toBe('p\\u0430ypal');
    expect(inspect('p\u0430ypal').findings).toEqual([
      { kind: 'confusable', text: 'U+0430 (looks like "a", Cyrillic)' },
    ]);
    expect(inspect('A\u200B1').parts).toEqual([
      { text: 'A' },
      { text: '\\u200B', esc: true, title: 'U+200B ZERO WIDTH SPACE (invisible, or drawn as a blank)' },
      { text: '1' },
    ]);
  });

  it.each([
    ['\u202A\u202B\u202C\u202D\u2066\u2067\u2068\u2069\u200E\u200F\u061C', 'bidi'],
    ['\u200C\u200D\u2060\uFEFF\u00AD\u180E\u034F\u2061\u{E0041}\uFE0F\u3164\u115F\u2800', 'invisible'],
    ['\u00A0\u2002\u2009\u202F\u205F\u3000\u2028\u2029', 'invisible'],
    ['\u0001\u001B\u007F\u0085\u009B\r\b\f', 'control'],
    ['\uD800', 'control'],
    ['\uFF21\u{1D400}\uFB01\u00B9\u2160', 'confusable'],
    ['\u0661\u06F3\u0967', 'confusable'],
  ])('%j: every one is an escape, reported as %s', (s, kind) => {
    const seen = inspect(s);
    expect(seen.parts.every((p) => p.esc)).toBe(true);
    expect(seen.findings.map((f) => f.kind)).toEqual([...s].map(() => kind));
  });

  it('a word made only of look-alikes is escaped whole; a real word in another script is left as it is', () => {
    expect(shown('\u0440\u0430\u0443')).toBe('\\u0440\\u0430\\u0443'); // "рау", drawn as "pay"
    expect(inspect('привет мир').findings).toEqual([]);
    expect(shown('Müller Straße ĳ')).toBe('Müller Straße \\u0133');
    expect(inspect('日本語のテキスト').findings).toEqual([]);
    // A combining mark on an ASCII letter is an escape; on a letter of its own script it is text.
    expect(shown('e\u0301')).toBe('e\\u0301');
    expect(inspect('हिन्दी').findings).toEqual([]);
  });

  it('right-to-left letters are shown as they are, and reported', () => {
    const seen = inspect('שלום 123');
    expect(seen.parts).toEqual([{ text: 'שלום 123' }]);
    expect(seen.findings).toEqual([
      { kind: 'rtl', text: 'right-to-left letters: the order shown may differ from the order stored' },
    ]);
  });

  it('a line break and a tab are escapes too, but nothing to report', () => {
    expect(inspect('a\nb\tc')).toMatchObject({
      parts: [{ text: 'a' }, { text: '\\n', esc: true }, { text: 'b' }, { text: '\\t', esc: true }, { text: 'c' }],
      findings: [],
    });
  });

  it('findings name where they are: an argument, a key, the requester, the run, the context', () => {
    const v = cardView(
      approvalJson({
        args: { nested: { 'fi\u202Ele': ['x\u200By'] } },
        context: { repo: 'acme\u2066/api' },
        requester: { sub: 'agent\u0430', team: null, agent: null },
        run_id: 'run\u00A07',
      }),
    );
    expect(v.findings.map((f) => f.where)).toEqual([
      'args.nested["fi\\u202Ele"] (a key)',
      'args.nested["fi\\u202Ele"][0]',
      'context.repo',
      'the requester',
      'the run id',
    ]);
    expect(v.run.map((p) => p.text).join('')).toBe('run\\u00A07');
    expect(v.contextText).toBe('{\n  "repo": "acme\\u2066/api"\n}');
  });
});

describe('the card: every requirement, and the arguments no requirement picks', () => {
  const args = { amount: 10, memo: 'monthly rent', recipient_iban: 'XX00ATTACKER', currency: 'BTC' };

  it('lists each requirement with its policy, rule, kind and what it reviews; names the arguments none picks', () => {
    const v = cardView(
      approvalJson({
        args,
        requirements: [
          {
            policy: 'payments',
            rule: 'pay',
            kind: 'payment',
            reason: 'payments need an operator',
            capability: { amount: 10 },
            presentation: { memo: 'monthly rent' },
          },
          {
            policy: 'risk',
            rule: 'all',
            kind: 'confirm',
            reason: 'risk looks at everything',
            capability: { tool: 'send_payment', args },
            presentation: {},
          },
        ],
      }),
    );
    expect(v.requirements.map((r) => [r.reason.map((p) => p.text).join(''), r.source])).toEqual([
      ['payments need an operator', 'policy payments, rule pay, kind payment; it reviews amount, memo'],
      ['risk looks at everything', 'policy risk, rule all, kind confirm; it reviews the whole call'],
    ]);
    // The second requirement shows the whole call: nothing is left out.
    expect(v.unshown).toEqual([]);
  });

  it('flags the keys no shape shows, looking inside values shown only in part (dotted paths, array indexes)', () => {
    const one = (capability: object, presentation: object, a: object = args) =>
      cardView(approvalJson({ args: a, capability, presentation })).unshown;
    expect(one({ amount: 10 }, { amount: 10, memo: 'monthly rent' })).toEqual(['recipient_iban', 'currency']);
    expect(one({}, {})).toEqual(['amount', 'memo', 'recipient_iban', 'currency']);
    expect(one({ tool: 'send_payment', args }, {})).toEqual([]);
    const nested = {
      customer: { email: 'a@example.com', iban: 'XX00' },
      items: [{ sku: 'A', qty: 1 }, { sku: 'B' }],
      empty: {},
    };
    expect(one({ 'customer.email': 'a@example.com' }, { 'items.0.sku': 'A', items: nested.items }, nested)).toEqual([
      'customer.iban',
      'empty',
    ]);
  });
});

describe('the card: times', () => {
  const rel = (ms: number): string => runInNewContext(`${CARD_JS}\nrelativeTime(ms)`, { ms }) as string;
  it('says a span as a person would', () => {
    expect(rel(0)).toBe('just now');
    expect(rel(3_000)).toBe('in a few seconds');
    expect(rel(-45_000)).toBe('45 s ago');
    expect(rel(4 * 60_000)).toBe('in 4 min');
    expect(rel(86_340_000)).toBe('in 23 h 59 min');
    expect(rel(-2 * 86_400_000 - 3 * 3_600_000)).toBe('2 d 3 h ago');
    expect(runInNewContext(`${CARD_JS}\nabsoluteTime('2026-11-29T23:28:55.008Z')`)).toBe('2026-11-29 23:28:55 UTC');
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

  it("GET /approvals/{id} gives approvers the tool's schema (args_schema) for Edit and grant; the requester, not", async () => {
    const created = await post(
      a.app,
      '/approvals',
      { tool: 'send_payment', args: { amount: 1, memo: 'm' } },
      token({ sub: 'ui-schema' }),
    );
    expect(created.statusCode).toBe(201);
    const id = (created.json() as { id: string }).id;
    const read = async (tok: string) =>
      (
        await a.app.inject({ method: 'GET', url: `/approvals/${id}`, headers: { authorization: `Bearer ${tok}` } })
      ).json();
    expect((await read(approverToken())).args_schema).toEqual({
      type: 'object',
      required: ['amount', 'memo'],
      properties: { amount: { type: 'number' }, memo: { type: 'string' } },
    });
    expect(await read(token({ sub: 'ui-schema' }))).not.toHaveProperty('args_schema');
  });

  it('the operator sees recipient_iban and currency, named, and the amount exactly as sent', async () => {
    const created = await a.app.inject({
      method: 'POST',
      url: '/approvals',
      headers: { authorization: `Bearer ${token({ sub: 'ui-agent' })}`, 'content-type': 'application/json' },
      payload:
        '{"tool":"send_payment","args":{"amount":10.50,"memo":"monthly rent","recipient_iban":"XX00ATTACKER","currency":"BTC"}}',
    });
    expect(created.statusCode, created.body).toBe(201);
    const { id } = created.json() as { id: string };
    const whole = await a.app.inject({
      method: 'GET',
      url: `/approvals/${id}`,
      headers: { authorization: `Bearer ${approverToken()}` },
    });
    const v = cardView(whole.body);
    // The API returns args in canonical key order, numbers as written.
    expect(v.argsText).toBe(
      '{\n  "amount": 10.50,\n  "currency": "BTC",\n  "memo": "monthly rent",\n  "recipient_iban": "XX00ATTACKER"\n}',
    );
    expect(v.unshown).toEqual(['currency', 'recipient_iban']);
    expect(v.policies).toMatch(/^pay \(sha256:[0-9a-f]{12}…\)$/);
    expect(v.findings).toEqual([]);
    expect((await post(a.app, `/approvals/${id}/deny`, { note: 'x' }, approverToken())).statusCode).toBe(200);
  });
});

// What leads a card, the quorum's progress and the grants (docs/approvals.md, "The operator page"):
// card.js with money.js, on bodies as the API answers them, with and without the quorum fields.
describe('the lead, the quorum and the grants of a card', () => {
  const MONEY_JS = ui('money.js');
  const view = (body: string) =>
    JSON.parse(
      runInNewContext(
        `${MONEY_JS}\n${CARD_JS}\nconst v = cardView(parseExact(input)); JSON.stringify({ lead: v.lead.map((f) => ({ label: f.label, money: f.money, text: f.tokens && tokensText(f.tokens) })), leadText: v.leadText, quorum: v.quorum, grants: v.grants.map(partsText), who: partsText(v.who), fingerprint: v.fingerprint })`,
        { input: body },
      ) as string,
    ) as {
      lead: { label: string; money: string | null; text: string | null }[];
      leadText: string;
      quorum: { text: string; done: number; need: number };
      grants: string[];
      who: string;
      fingerprint: string;
    };
  const presented = (presentation: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
    approvalJson({
      requester: { sub: 'agent-1', team: 'support', agent: 'bot', name: 'Refund Bot' },
      requirements: [
        {
          policy: 'pay',
          rule: 'pay',
          kind: 'payment',
          reason: 'payments need an operator',
          capability: {},
          presentation,
        },
      ],
      ...extra,
    });

  it('leads with the presented fields, amounts grouped with their currency; other amounts follow', () => {
    const v = view(
      presented(
        { recipient: 'ACME', amount: 0 },
        {
          money: [
            { path: 'amount', currency: 'EUR' },
            { path: 'fee', currency_path: 'currency' },
          ],
          argsText: '{"amount":1234567.8915,"currency":"USD","fee":12.5,"recipient":"ACME"}',
        },
      ).replace('"amount":0', '"amount":1234567.8915'),
    );
    expect(v.lead).toEqual([
      { label: 'recipient', money: null, text: '"ACME"' },
      { label: 'amount', money: '1,234,567.8915 EUR', text: null },
      { label: 'fee', money: '12.5 USD', text: null },
    ]);
    expect(v.leadText).toBe('recipient "ACME"');
    expect(v.who).toBe('Refund Bot (agent-1)');
  });

  it('without quorum fields one grant decides ("0 of 1"); with them, each requirement says how far it is, and the grants are listed by name', () => {
    expect(view(presented({})).quorum).toEqual({ text: '0 of 1', done: 0, need: 1 });
    const body = approvalJson({
      requirements: [
        {
          policy: 'a',
          rule: 'r1',
          kind: 'k',
          reason: 'x',
          capability: {},
          presentation: {},
          quorum: 2,
          granted: ['op-1'],
        },
        { policy: 'b', rule: 'r2', kind: 'k', reason: 'y', capability: {}, presentation: {}, quorum: 1, granted: [] },
      ],
      grants: [{ by: 'op-1', name: 'Ada Lovelace', at: '2030-01-01T10:00:00.000Z', note: 'checked the invoice' }],
    });
    const v = view(body);
    expect(v.quorum).toEqual({ text: '1 of 2 · 0 of 1', done: 1, need: 3 });
    expect(v.grants).toEqual(['Ada Lovelace (op-1), 2030-01-01 10:00:00 UTC: checked the invoice']);
    // A grant changes what the card shows: it is another fingerprint.
    expect(v.fingerprint).not.toBe(
      view(body.replace('"granted":["op-1"]', '"granted":[]').replace(/"grants":\[[^\]]*\]/, '"grants":[]'))
        .fingerprint,
    );
  });
});

// edit.js (after card.js, as the page loads them): Edit and grant's text, check and change list.
const EDIT_JS = ui('edit.js');
/** Runs `expr` with card.js and edit.js loaded, `input` given; its JSON-able value back. */
function edit(expr: string, input: Record<string, unknown>): unknown {
  return JSON.parse(runInNewContext(`${CARD_JS}\n${EDIT_JS}\nJSON.stringify(${expr})`, input) as string);
}
const SCHEMA = {
  type: 'object',
  required: ['amount', 'to'],
  additionalProperties: false,
  properties: {
    amount: {
      type: 'number',
      minimum: 0,
      multipleOf: 0.01,
      'x-gatehouse-format': 'money',
      'x-gatehouse-currency': 'EUR',
    },
    to: { type: 'string', maxLength: 5, pattern: '^[A-Z]' },
    lines: { type: 'array', maxItems: 1, items: { type: 'object', properties: { qty: { type: 'integer' } } } },
    mode: { enum: ['fast', 'slow'] },
    when: { type: 'string', format: 'date' },
  },
};
const checked = (text: string, schema: unknown = SCHEMA) =>
  edit(
    '(() => { const r = readEdited(text); return r.args === null ? { read: r.problems } : checkArgs(r.args, schema); })()',
    { text, schema },
  );

describe('Edit and grant: the edited arguments (edit.js)', () => {
  it('writes the arguments out for editing with every number as written, and reads them back the same', () => {
    const text = '{"amount":12345678901234567890.50,"to":"A","lines":[{"qty":1e3}],"none":{},"empty":[]}';
    const pretty = edit('prettyJson(parseExact(text))', { text }) as string;
    expect(pretty).toBe(
      '{\n  "amount": 12345678901234567890.50,\n  "to": "A",\n  "lines": [\n    {\n      "qty": 1e3\n    }\n  ],\n  "none": {},\n  "empty": []\n}',
    );
    expect(edit('nodeText(readEdited(pretty).args)', { pretty })).toBe(text);
  });

  it('refuses text that is not a JSON object, or writes a key twice, naming where', () => {
    expect(checked('{"amount": 1,')).toEqual({ read: [{ where: 'args', text: expect.stringMatching(/^not JSON: /) }] });
    expect(checked('[1]')).toEqual({ read: [{ where: 'args', text: 'the arguments are a JSON object' }] });
    expect(checked('{"amount": 1, "lines": [{"qty": 1, "qty": 2}]}')).toEqual({
      read: [{ where: 'args.lines[0].qty', text: 'this key is written twice' }],
    });
  });

  it('checks the keywords tool schemas use, each failure where it is, and names the keywords it skips', () => {
    expect(checked('{"amount": 10.25, "to": "ACME", "lines": [{"qty": 2}], "mode": "fast", "when": "x"}')).toEqual({
      problems: [],
      unchecked: ['format'],
    });
    expect(
      (
        checked('{"amount": -1.001, "to": "acme-gmbh", "lines": [{"qty": 1.5}, {}], "mode": "FAST", "iban": "DE"}') as {
          problems: { where: string; text: string }[];
        }
      ).problems,
    ).toEqual([
      { where: 'args.amount', text: 'must be at least 0' },
      { where: 'args.amount', text: 'must be a multiple of 0.01' },
      { where: 'args.to', text: 'may have at most 5 characters' },
      { where: 'args.to', text: 'must match the pattern ^[A-Z]' },
      { where: 'args.lines[0].qty', text: 'must be integer, not number' },
      { where: 'args.lines', text: 'may have at most 1 item' },
      { where: 'args.mode', text: 'must be one of "fast", "slow"' },
      { where: 'args.iban', text: 'is not an argument of this tool' },
    ]);
    expect((checked('{"to": "A"}') as { problems: unknown[] }).problems).toEqual([
      { where: 'args', text: 'needs the key "amount"' },
    ]);
    // Several catalogue entries' schemas come joined with allOf: each must hold.
    const both = { allOf: [SCHEMA, { properties: { amount: { maximum: 100 } } }] };
    expect((checked('{"amount": 101, "to": "A"}', both) as { problems: unknown[] }).problems).toEqual([
      { where: 'args.amount', text: 'must be at most 100' },
    ]);
    expect((checked('{"a": 1}', false) as { problems: unknown[] }).problems).toEqual([
      { where: 'args', text: 'no value is allowed here' },
    ]);
  });

  it('lists what an edit changes, path by path, in the order of the original; the same call changes nothing', () => {
    const diff = (before: string, after: string) =>
      edit(
        'argsDiff(parseExact(before), parseExact(after)).map((c) => [c.where, c.before ? nodeText(c.before) : null, c.after ? nodeText(c.after) : null])',
        { before, after },
      );
    expect(
      diff(
        '{"amount":12000.50,"to":"A","lines":[1,2],"memo":"x"}',
        '{"to":"B","amount":12000.50,"lines":[1],"cc":{"a":1}}',
      ),
    ).toEqual([
      ['args.to', '"A"', '"B"'],
      ['args.lines[1]', '2', null],
      ['args.memo', '"x"', null],
      ['args.cc', null, '{"a":1}'],
    ]);
    expect(diff('{"a":{"b":1,"c":2}}', '{"a":{"c":2,"b":1}}')).toEqual([]);
    // Written differently is a change: the amended call binds what is written.
    expect(diff('{"n":1}', '{"n":1.0}')).toEqual([['args.n', '1', '1.0']]);
  });
});
