// inspect() (src/policy/inspect.ts, docs/spec.md section 2.5): guards on a tool's result and on a
// model's request or response, by stage, guard and action; the redaction's exact output; reasons
// that never carry a value; the approval hash that binds the result.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { approvalHash } from '../../src/json/canonical.js';
import { parseJson } from '../../src/json/parse.js';
import type { JsonObject, JsonValue } from '../../src/json/value.js';
import { decide } from '../../src/policy/decide.js';
import { inspect, inspects, NO_FINDING_RULE, type InspectRequest } from '../../src/policy/inspect.js';
import { buildPolicySet } from '../../src/policy/load.js';
import type { Identity, PolicySet } from '../../src/policy/model.js';

const enc = (s: string): Uint8Array => new TextEncoder().encode(s);
const setOf = (files: Record<string, string>, env: string | null = null): PolicySet =>
  buildPolicySet(
    Object.entries(files).map(([path, text]) => ({ path, bytes: enc(text) })),
    { env },
  );
const caller = (over: Partial<Identity> = {}): Identity => ({
  user: 'u1',
  team: null,
  agent: null,
  roles: [],
  ...over,
});
const parsed = (text: string): JsonObject => parseJson(Buffer.from(text)) as JsonObject;

const EMAIL = 'jane.doe@example.com';
const CARD = '4111 1111 1111 1111';
const GH = 'ghp_1234567890abcdefghijABCDEFGHIJ123456';
const AWS = 'AKIAIOSFODNN7EXAMPLE';

const result = (tool: string, value: JsonValue, args: JsonObject = {}): InspectRequest => ({
  stage: 'result',
  tool,
  args,
  result: value,
});

/** Every text the model, the caller or a log can see, but `redacted`. */
function shown(r: ReturnType<typeof inspect>): string {
  return JSON.stringify({ ...r, redacted: undefined });
}

describe('inspect(): the result stage', () => {
  const set = setOf({
    'p.yaml': `
policy: p
tools:
  crm_lookup: {kind: read_only, result_schema: {type: object, properties: {email: {type: string}, notes: {type: array}}}}
  read_file: {kind: read_only}
  other: {kind: read_only}
guards:
  - {id: crm-pii, guard: pii, tools: [crm_lookup], on: [result]}
  - {id: file-keys, guard: secrets, tools: [read_file], on: result, action: require_approval}
  - {id: args-only, guard: pii, tools: [other]}
`,
  });

  it('denies a result a deny guard finds something in: the guard and the path, never the value', () => {
    const r = inspect(set, result('crm_lookup', { name: 'Jane', email: EMAIL }), caller());
    expect(r).toMatchObject({ decision: 'deny', stage: 'result', rule: 'crm-pii' });
    expect(r.reason).toBe('guard "pii" found an email address at /email');
    expect(r.message).toBe(
      'The output of the "crm_lookup" action was withheld by policy. Reason: guard "pii" found an email address at /email. Tell the user it was withheld; do not try to obtain it another way.',
    );
    expect(r.redacted).toBeUndefined();
    expect(shown(r)).not.toContain('jane');
  });

  it('writes keys the result schema does not declare as `*`, indexes as they are', () => {
    const r = inspect(set, result('crm_lookup', { notes: ['ok', { [EMAIL]: 1 }], extra: { x: CARD } }), caller());
    expect(r.reason).toBe('guard "pii" found an email address in a key of /notes/1');
    const r2 = inspect(set, result('crm_lookup', { [EMAIL]: { x: CARD } }), caller());
    expect(r2.reason).toBe('guard "pii" found an email address in a key of /');
    const r3 = inspect(set, result('crm_lookup', { extra: { x: CARD } }), caller());
    expect(r3.reason).toBe('guard "pii" found a card number at /*/*');
  });

  it('reads every string, key and number of any JSON, the root included', () => {
    expect(inspect(set, result('crm_lookup', EMAIL), caller()).reason).toBe('guard "pii" found an email address at /');
    expect(inspect(set, result('crm_lookup', 4111111111111111), caller()).decision).toBe('deny');
    expect(inspect(set, result('crm_lookup', [1, 'x', null, true]), caller()).decision).toBe('allow');
    expect(inspect(set, result('crm_lookup', null), caller()).decision).toBe('allow');
  });

  it('allows what nothing is found in, and what no guard on results selects', () => {
    const clean = inspect(set, result('crm_lookup', { name: 'Jane' }), caller());
    expect(clean).toMatchObject({
      decision: 'allow',
      rule: NO_FINDING_RULE,
      reason: 'no guard found anything in the result',
    });
    expect(clean.redacted).toBeUndefined();
    expect(clean.message).toBe('The output of the "crm_lookup" action is allowed by policy.');
    // A guard on arguments only never reads results; a tool no guard selects is not read.
    expect(inspect(set, result('other', { email: EMAIL }), caller()).decision).toBe('allow');
    expect(inspect(set, result('unknown_tool', { email: EMAIL }), caller()).decision).toBe('allow');
  });

  it('never runs a result guard on a call’s arguments', () => {
    expect(decide(set, { tool: 'crm_lookup', args: { email: EMAIL } }, caller()).decision).toBe('allow');
    expect(decide(set, { tool: 'other', args: { email: EMAIL } }, caller()).decision).toBe('deny');
  });

  it('asks for approval with the guard kind, the call as capability, and a hash over the result too', () => {
    const args = { path: '.env' };
    const req = { stage: 'result', tool: 'read_file', args, result: `KEY=${AWS}`, context: { repo: 'r' } } as const;
    const r = inspect(set, req, caller());
    expect(r).toMatchObject({ decision: 'require_approval', rule: 'file-keys' });
    expect(r.reason).toBe('guard "secrets" found an AWS access key id at /');
    const approval = r.approval!;
    expect(approval.kind).toBe('secrets');
    expect(approval.capability).toEqual({ tool: 'read_file', args });
    expect(approval.requirements).toEqual([
      {
        policy: 'p',
        rule: 'file-keys',
        kind: 'secrets',
        reason: r.reason,
        capability: { tool: 'read_file', args },
        presentation: { tool: 'read_file', args },
      },
    ]);
    const shape = {
      kind: 'secrets',
      capability: { tool: 'read_file', args },
      presentation: { tool: 'read_file', args },
    };
    expect(approval.hash).toBe(
      approvalHash({ tool: 'read_file', args, context: { repo: 'r' }, ...shape, result: `KEY=${AWS}` }),
    );
    // The call's own approval (no result) is another hash; a changed result is another approval.
    expect(approval.hash).not.toBe(approvalHash({ tool: 'read_file', args, context: { repo: 'r' }, ...shape }));
    const changed = inspect(set, { ...req, result: `KEY=${AWS} ` }, caller());
    expect(changed.approval!.hash).not.toBe(approval.hash);
    const otherContext = inspect(set, { ...req, context: { repo: 's' } }, caller());
    expect(otherContext.approval!.hash).not.toBe(approval.hash);
    expect(shown(r)).not.toContain(AWS);
    expect(r.message).toBe(
      'The output of the "read_file" action is held for an operator\'s review (guard "secrets" found an AWS access key id at /). Wait for the approval; do not repeat the action meanwhile.',
    );
  });

  it('hashes the result as written: numbers keep their text', () => {
    const a = inspect(
      set,
      parsed(
        `{"stage":"result","tool":"read_file","args":{},"result":{"n":1.0,"k":"${AWS}"}}`,
      ) as unknown as InspectRequest,
      caller(),
    );
    const b = inspect(
      set,
      parsed(
        `{"stage":"result","tool":"read_file","args":{},"result":{"n":1,"k":"${AWS}"}}`,
      ) as unknown as InspectRequest,
      caller(),
    );
    expect(a.decision).toBe('require_approval');
    expect(a.approval!.hash).not.toBe(b.approval!.hash);
  });
});

describe('inspect(): redact', () => {
  const set = setOf({
    'p.yaml': `
policy: p
tools: {t: {kind: read_only, result_schema: {properties: {body: {}, n: {}}}}}
guards:
  - {id: pii-r, guard: pii, on: [result], action: redact}
  - {id: keys-r, guard: secrets, on: [result, llm_response], action: redact}
  - {id: tickets, guard: pattern, on: [result, llm_request], action: redact, patterns: [{name: ticket, regex: "TCK-[0-9]{4,8}"}, {name: room, regex: "(?i)room [a-z][0-9]{3}"}]}
`,
  });

  it('replaces each finding inside its string, keeps the rest, and lists findings by guard, type and path', () => {
    const r = inspect(
      set,
      result('t', { body: `see TCK-123456 and tck-1 in Room B204, token ${GH} ok`, n: 3, list: ['a', 'TCK-9999'] }),
      caller(),
    );
    expect(r.decision).toBe('allow');
    expect(r.redacted).toEqual({
      body: 'see [REDACTED:ticket] and tck-1 in [REDACTED:room], token [REDACTED:github_token] ok',
      n: 3,
      list: ['a', '[REDACTED:ticket]'],
    });
    expect(r.findings).toEqual([
      { guard: 'keys-r', type: 'github_token', path: '/body' },
      { guard: 'tickets', type: 'ticket', path: '/body' },
      { guard: 'tickets', type: 'room', path: '/body' },
      { guard: 'tickets', type: 'ticket', path: '/*/1' },
    ]);
    expect(r.rule).toBe('keys-r');
    expect(r.message).toMatch(
      /^The output of the "t" action is given with parts redacted by policy \(guard "secrets" found a GitHub token at \/body\)/,
    );
    expect(shown(r)).not.toContain('TCK-');
    expect(shown(r)).not.toContain('ghp_');
  });

  it('replaces a number that is a finding by the mark, and keeps other numbers as written', () => {
    const req = parsed(
      `{"stage":"result","tool":"t","args":{},"result":{"n":4111111111111111,"m":1.50,"p":[12, 4111111111111111.0]}}`,
    );
    const r = inspect(set, req as unknown as InspectRequest, caller());
    expect(r.redacted).toEqual({ n: '[REDACTED:card]', m: 1.5, p: [12, '[REDACTED:card]'] });
    expect(r.findings).toEqual([
      { guard: 'pii-r', type: 'card', path: '/n' },
      { guard: 'pii-r', type: 'card', path: '/*/1' },
    ]);
  });

  it('redacts keys, and two keys that redact alike stay two members', () => {
    const r = inspect(
      set,
      result('t', { [EMAIL]: 1, 'bob@example.org': 2, '[REDACTED:email]#2': 3, x: 'TCK-1234' }),
      caller(),
    );
    expect(r.redacted).toEqual({
      '[REDACTED:email]': 1,
      '[REDACTED:email]#3': 2,
      '[REDACTED:email]#2': 3,
      x: '[REDACTED:ticket]',
    });
    expect(Object.keys(r.redacted as JsonObject)).toEqual([
      '[REDACTED:email]',
      '[REDACTED:email]#3',
      '[REDACTED:email]#2',
      'x',
    ]);
    expect(r.findings).toEqual([
      { guard: 'pii-r', type: 'email', path: '/', in_key: true },
      { guard: 'tickets', type: 'ticket', path: '/*' },
    ]);
  });

  it('replaces each pii finding in place: cards, IBANs, emails, phone numbers', () => {
    const r = inspect(
      set,
      result('t', {
        body: `mail ${EMAIL} or a@b.co, pay ${CARD}, IBAN GB82 WEST 1234 5698 7654 32, call +44 20 7946 0958 or (555) 123-4567.`,
      }),
      caller(),
    );
    expect(r.redacted).toEqual({
      body: 'mail [REDACTED:email] or [REDACTED:email], pay [REDACTED:card], IBAN [REDACTED:iban], call [REDACTED:phone] or [REDACTED:phone].',
    });
    expect(r.findings).toEqual([
      { guard: 'pii-r', type: 'card', path: '/body' },
      { guard: 'pii-r', type: 'iban', path: '/body' },
      { guard: 'pii-r', type: 'email', path: '/body' },
      { guard: 'pii-r', type: 'phone', path: '/body' },
    ]);
  });

  it('replaces a finding made only in the folded text with the whole string', () => {
    const full = inspect(set, result('t', { body: 'ref TCK-１２３４ ok' }), caller()); // full-width digits
    expect(full.redacted).toEqual({ body: '[REDACTED:ticket]' });
    const zw = inspect(set, result('t', { body: 'write to jane\u200b@example.com' }), caller());
    expect(zw.redacted).toEqual({ body: '[REDACTED:email]' });
  });

  it('leaves what it redacted alone when inspected again', () => {
    const first = inspect(set, result('t', { body: `x TCK-12345 password=hunter22 ${GH}` }), caller());
    const again = inspect(set, result('t', first.redacted!), caller());
    expect(again.decision).toBe('allow');
    expect(again.redacted).toBeUndefined();
  });

  it('redacts exactly the matching text of 1 MiB adversarial results, in keys and values', () => {
    const evil = setOf({
      'e.yaml':
        'policy: e\nguards:\n  - {id: e, guard: pattern, on: result, action: redact, patterns: [{name: evil, regex: "(a+)+$"}]}\n',
    });
    const MiB = 1 << 20;
    const attack = `${'a'.repeat(MiB)}!`;
    const r = inspect(evil, result('t', { [`${attack}aa`]: [attack, `${attack}a`], b: 'a'.repeat(MiB) }), caller());
    expect(r.decision).toBe('allow');
    expect(r.redacted).toEqual({
      [`${attack}[REDACTED:evil]`]: [attack, `${attack}[REDACTED:evil]`],
      b: '[REDACTED:evil]',
    });
    expect(r.findings).toEqual([
      { guard: 'e', type: 'evil', path: '/', in_key: true },
      { guard: 'e', type: 'evil', path: '/*/1' },
      { guard: 'e', type: 'evil', path: '/*' },
    ]);
  });

  it('is not given when a deny guard also finds something; is given with require_approval', () => {
    const both = setOf({
      'a.yaml':
        'policy: a\nguards:\n  - {id: r, guard: pattern, on: result, action: redact, patterns: [{name: t, regex: "TCK-[0-9]+"}]}\n',
      'b.yaml':
        'policy: b\nguards:\n  - {id: d, guard: pii, on: result}\n  - {id: q, guard: secrets, on: result, action: require_approval}\n',
    });
    const denied = inspect(both, result('x', `TCK-1 ${EMAIL}`), caller());
    expect(denied).toMatchObject({ decision: 'deny', rule: 'd' });
    expect(denied.redacted).toBeUndefined();
    expect(denied.findings).toBeUndefined();
    const asked = inspect(both, result('x', `TCK-1 ${AWS}`), caller());
    expect(asked).toMatchObject({ decision: 'require_approval', rule: 'q', redacted: `[REDACTED:t] ${AWS}` });
  });
});

describe('inspect(): the model stages', () => {
  const set = setOf(
    {
      'p.yaml': `
policy: p
environments: [dev, prod]
guards:
  - {id: out-keys, guard: secrets, on: [llm_response]}
  - {id: in-pii, guard: pii, on: [llm_request], action: redact, teams: [support]}
  - {id: in-prod, guard: pattern, on: [llm_request], envs: [prod], patterns: [{name: codename, regex: "(?i)project (falcon|osprey)"}]}
`,
    },
    'prod',
  );
  const request = { messages: [{ role: 'user', content: `my card is ${CARD}, about Project Falcon?` }] };

  it('llm_request: guards for the caller and the environment; keys written `*`, indexes shown', () => {
    const r = inspect(set, { stage: 'llm_request', content: request }, caller({ team: 'support' }));
    expect(r).toMatchObject({ decision: 'deny', rule: 'in-prod', stage: 'llm_request' });
    expect(r.reason).toBe('guard "pattern" found text matching pattern "codename" at /*/0/*');
    expect(r.message).toMatch(/^The request to the model was withheld by policy\. Reason: /);
    const dev = setOf(
      {
        'p.yaml':
          'policy: p\nenvironments: [dev, prod]\nguards:\n  - {id: in-prod, guard: pattern, on: llm_request, envs: [prod], patterns: [{name: c, regex: "x+"}]}\n',
      },
      'dev',
    );
    expect(inspect(dev, { stage: 'llm_request', content: 'xxx' }, caller()).decision).toBe('allow');
  });

  it('llm_request: a guard for another team does not apply', () => {
    const r = inspect(set, { stage: 'llm_request', content: { text: `card ${CARD}` } }, caller({ team: 'sales' }));
    expect(r.decision).toBe('allow');
    const own = inspect(set, { stage: 'llm_request', content: { text: `card ${CARD}` } }, caller({ team: 'support' }));
    expect(own).toMatchObject({ decision: 'allow', rule: 'in-pii', redacted: { text: 'card [REDACTED:card]' } });
    expect(own.findings).toEqual([{ guard: 'in-pii', type: 'card', path: '/*' }]);
    expect(own.message).toMatch(/^The request to the model is given with parts redacted by policy/);
  });

  it('llm_response: the secrets guard, and nothing from guards on other stages', () => {
    const r = inspect(set, { stage: 'llm_response', content: { choices: [{ text: `use ${GH}` }] } }, caller());
    expect(r).toMatchObject({
      decision: 'deny',
      rule: 'out-keys',
      reason: 'guard "secrets" found a GitHub token at /*/0/*',
    });
    expect(r.message).toMatch(/^The model's response was withheld by policy/);
    expect(shown(r)).not.toContain('ghp_');
    expect(inspect(set, { stage: 'llm_response', content: `card ${CARD}` }, caller({ team: 'support' })).decision).toBe(
      'allow',
    );
  });
});

describe('inspect(): the secrets guard', () => {
  const set = setOf({ 'p.yaml': 'policy: p\nguards:\n  - {guard: secrets, on: result}\n' });
  const found = (text: string): string | null => {
    const r = inspect(set, result('t', { text }), caller());
    return r.decision === 'deny' ? r.reason.replace(/^guard "secrets" found | at \/\*$/g, '') : null;
  };

  it.each([
    ['an AWS access key id', `id ${AWS}`],
    ['an AWS secret access key', 'aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY'],
    ['a GitHub token', GH],
    ['a GitHub token', 'github_pat_11ABCDEFG0123456789_ZYXWVUTSRQPONMLKJIzyxw'],
    ['a Slack token', 'xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx'],
    ['a Stripe key', 'sk_live_51H8abcdefghijklmnopqrstu'],
    ['a Google API key', 'AIzaSyD-1234567890abcdefghijklmnopqrstu'],
    ['a JSON Web Token', 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJlMTIz'],
    ['a private key', '-----BEGIN EC PRIVATE KEY-----\nMHcCAQEE\n-----END EC PRIVATE KEY-----'],
    ['a bearer token', 'Authorization: Bearer 0f3c9a7b2d4e6f8a1b3c'],
    ['a secret assigned to a secret-like name', 'password=hunter22'],
    ['a secret assigned to a secret-like name', 'API_KEY: "q8w7e6r5t4y3"'],
    ['a secret assigned to a secret-like name', 'client_secret=Zx81kLm0'],
    ['an OpenAI API key', 'sk-proj-Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56Qr78'],
    ['an Anthropic API key', 'sk-ant-api03-Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56Qr78'],
  ])('%s: %s', (text, value) => {
    expect(found(value)).toBe(text);
  });

  it('reads a JSON member as a NAME and its value: the whole value is the finding', () => {
    const member = (value: JsonValue) => inspect(set, result('t', value), caller());
    expect(member({ db: { password: 'hunter22' } }).reason).toBe(
      'guard "secrets" found a secret assigned to a secret-like name at /*/*',
    );
    expect(member({ AWS_SECRET_ACCESS_KEY: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY' }).reason).toBe(
      'guard "secrets" found an AWS secret access key at /*',
    );
    expect(member({ max_tokens: '4096', token_type: 'Bearer', password: '***', api_key: null }).decision).toBe('allow');
    const redacting = setOf({
      'p.yaml': 'policy: p\nguards:\n  - {id: r, guard: secrets, on: result, action: redact}\n',
    });
    const r = inspect(redacting, result('t', { user: 'bob', password: 'hunter22', n: 1 }), caller());
    expect(r.redacted).toEqual({ user: 'bob', password: '[REDACTED:named_secret]', n: 1 });
    expect(r.findings).toEqual([{ guard: 'r', type: 'named_secret', path: '/*' }]);
  });

  it.each([
    ['a loose name', 'max_tokens=4096'],
    ['a placeholder', 'password=***'],
    ['a reference', 'api_key=${API_KEY}'],
    ['a short value', 'secret=abc'],
    ['a word', 'password: null'],
    ['prose', 'the password is hunter2'],
    ['an AWS secret key without its name', 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY'],
    ['a hyphenated word after sk-', 'sk-learn-tutorial-for-absolute-beginners'],
  ])('not: %s', (_name, value) => {
    expect(found(value)).toBeNull();
  });
});

describe('inspects(): whether any guard reads a stage', () => {
  const set = setOf({
    'p.yaml': `
policy: p
guards:
  - {guard: pii, tools: [crm_*], on: [args, result], teams: [support]}
  - {guard: secrets, on: [llm_response]}
`,
  });
  it('for the tool and the caller', () => {
    expect(inspects(set, 'result', caller({ team: 'support' }), 'crm_lookup')).toBe(true);
    expect(inspects(set, 'result', caller({ team: 'sales' }), 'crm_lookup')).toBe(false);
    expect(inspects(set, 'result', caller({ team: 'support' }), 'other')).toBe(false);
    expect(inspects(set, 'llm_response', caller())).toBe(true);
    expect(inspects(set, 'llm_request', caller())).toBe(false);
  });
});

describe('seed 003: the Python policy file with its pii guard on arguments and results', () => {
  const text = readFileSync(new URL('../fixtures/policies/seed-003/policy.toml', import.meta.url), 'utf8');
  const set = setOf({ 'policy.toml': text }, 'prod');

  it('loads, and the guard reads both', () => {
    expect(set.files).toHaveLength(1);
    expect(decide(set, { tool: 'send_note', args: { to: EMAIL } }, caller()).decision).toBe('deny');
    expect(inspect(set, result('send_note', { sent: EMAIL }), caller())).toMatchObject({
      decision: 'deny',
      rule: 'policy#guards.0',
    });
    expect(inspect(set, result('lookup_order', { sent: EMAIL }), caller()).decision).toBe('allow');
  });
});
