// Conditions checked at load: static types of the language (built-ins, roots, literals) and the
// schemas of the tools a rule selects (src/policy/schema-check.ts). Each refusal names file, line,
// column and key, and the column inside the condition.
import { describe, expect, it } from 'vitest';
import { PolicyLoadError, type LoadProblem } from '../../src/policy/errors.js';
import { buildPolicySet } from '../../src/policy/load.js';

const enc = (s: string): Uint8Array => new TextEncoder().encode(s);

function load(text: string, more: Record<string, string> = {}): LoadProblem[] {
  try {
    buildPolicySet([
      { path: 'p.yaml', bytes: enc(text) },
      ...Object.entries(more).map(([path, t]) => ({ path, bytes: enc(t) })),
    ]);
    return [];
  } catch (err) {
    expect(err).toBeInstanceOf(PolicyLoadError);
    return [...(err as PolicyLoadError).problems];
  }
}

const REFUND = `policy: p
tools:
  refund:
    kind: remote_mutation
    schema:
      type: object
      additionalProperties: false
      properties:
        amount: {type: number}
        currency: {enum: [EUR, USD]}
        order:
          type: object
          additionalProperties: false
          properties:
            total: {type: integer}
            lines: {type: array, items: {type: string}}
        note: {type: string}
        meta: {type: object}
rules:
  - tools: [refund]
    when: `;

const refundWith = (condition: string): LoadProblem[] =>
  load(`${REFUND}${JSON.stringify(condition)}\n    allow: true\n`);

describe('a condition against the schema of the tool its rule selects', () => {
  it.each([
    ['amount > 100'],
    ['order.total >= 5 and currency == "EUR"'],
    ['order.lines contains "x"'],
    ['order.lines.0 startswith "sku-"'],
    ['len(note) < 10 and lower(note) matches "*urgent*"'],
    ['meta.anything == 1'], // an open object: anything may be there
    ['note == null'],
    ['amount in [1, 2]'],
  ])('%s loads', (condition) => {
    expect(refundWith(condition)).toEqual([]);
  });

  const refused: [string, number, RegExp][] = [
    ['amout > 100', 1, /`amout` is not declared by the schema of tool `refund` \(did you mean `amount`\?\)/],
    ['ammount > 100', 1, /did you mean `amount`/],
    ['order.totl > 1', 1, /`order.totl` is not declared .* \(did you mean `order.total`\?\)/],
    ['amount > 1 and zzz == 2', 16, /`zzz` is not declared by the schema of tool `refund`, so it is never there/],
    [
      'amount == "100"',
      1,
      /`amount` is a number in the schema of tool `refund`, and `==` with a string literal needs a string/,
    ],
    ['"100" == amount', 10, /`amount` is a number in the schema/],
    [
      'amount startswith "1"',
      1,
      /`amount` is a number in the schema of tool `refund`, and `startswith` with a string literal needs a string/,
    ],
    ['amount matches "1*"', 1, /`amount` is a number .* `matches` needs a string/],
    ['lower(amount) == "x"', 7, /`amount` is a number .* lower\(\) needs a string/],
    ['note > 3', 1, /`note` is a string .* `>` with a number literal needs a number/],
    ['currency == 1', 1, /`currency` is a string .* needs a number/],
    ['amount', 1, /`amount` is a number .* a condition needs a boolean/],
    ['note.x == 1', 1, /`note` is a string in the schema of tool `refund`, so `note.x` is never there/],
    [
      'meta == 1',
      1,
      /`meta` is an object in the schema of tool `refund`, and `==` with a number literal needs a number/,
    ],
    ['order.lines != "x"', 1, /`order.lines` is a list in the schema/],
    ['amount in ["1", "2"]', 1, /`amount` is a number .* `in` with this list needs a string/],
  ];
  it.each(refused)('%s is a load error at column %i', (condition, column, message) => {
    const problems = refundWith(condition);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatchObject({ file: 'p.yaml', line: 21, key: 'rules.0.when' });
    expect(problems[0]!.message).toMatch(message);
    expect(problems[0]!.message).toContain(`(column ${column})`);
  });

  it('checks a confirm condition too, at its own key', () => {
    const problems = load(`${REFUND}amount > 1\n    allow: true\n    confirm: amout > 100\n`);
    expect(problems.map((p) => [p.key, p.line])).toEqual([['rules.0.confirm', 23]]);
  });

  it('checks tools selected by kind or by a glob, and counts the others it fails on', () => {
    const two = `policy: p
tools:
  a: {kind: read_only, schema: {type: object, additionalProperties: false, properties: {x: {type: number}}}}
  b: {kind: read_only, schema: {type: object, additionalProperties: false, properties: {x: {type: number}}}}
  c: {kind: read_only}
rules:
  - kinds: [read_only]
    when: y > 1
    allow: true
`;
    const problems = load(two);
    expect(problems).toHaveLength(1);
    expect(problems[0]!.message).toMatch(
      /`y` is not declared by the schema of tool `a`, so it is never there \(column 1\) \(and 1 more tool\)/,
    );

    const globbed =
      'policy: p\ntools:\n  "t_*": {kind: read_only, schema: {type: object, additionalProperties: false}}\nrules:\n  - tools: ["t_*"]\n    when: y > 1\n    allow: true\n';
    expect(load(globbed)[0]!.message).toMatch(/`y` is not declared by the schema of tool `t_\*`/);
  });

  it("respects the file's scope: a rule is checked only against the tools its file is consulted for", () => {
    const catalogue =
      'policy: tools\ntools:\n  a: {kind: read_only, schema: {type: object, additionalProperties: false, properties: {x: {type: number}}}}\n  b: {kind: read_only}\n';
    const scoped = (scope: string): LoadProblem[] =>
      load(`policy: p\nscope: {tools: ${scope}}\nrules:\n  - when: y > 1\n    allow: true\n`, {
        'tools.yaml': catalogue,
      });
    expect(scoped('b')).toEqual([]);
    expect(scoped('a').map((p) => p.key)).toEqual(['rules.0.when']);
  });

  it('takes the catalogue of another file into account', () => {
    const catalogue =
      'policy: tools\ntools:\n  t: {kind: read_only, schema: {type: object, additionalProperties: false, properties: {n: {type: number}}}}\n';
    const rules = 'policy: rules\nrules:\n  - tools: [t]\n    when: n == "x"\n    allow: true\n';
    expect(load(rules, { 'tools.yaml': catalogue }).map((p) => [p.file, p.key])).toEqual([['p.yaml', 'rules.0.when']]);
  });

  it('does not check what a schema leaves open or cannot say for sure', () => {
    const open = (schema: string): LoadProblem[] =>
      load(
        `policy: p\ntools:\n  t: {kind: read_only, schema: ${schema}}\nrules:\n  - tools: [t]\n    when: x.y == "a"\n    allow: true\n`,
      );
    expect(open('{type: object}')).toEqual([]); // additional properties allowed
    expect(
      open('{type: object, properties: {x: {anyOf: [{type: string}, {type: object}]}}, additionalProperties: false}'),
    ).toEqual([]);
    expect(open('{type: object, patternProperties: {"^x": {}}, additionalProperties: false}')).toEqual([]);
    expect(
      open(
        '{type: object, properties: {x: {$ref: "#/$defs/o"}}, additionalProperties: false, $defs: {o: {type: object}}}',
      ),
    ).toEqual([]);
    expect(open('{type: object, properties: {x: {type: [string, object]}}, additionalProperties: false}')).toEqual([]);
    // A tool a rule does not select is not checked against it.
    expect(
      load(
        'policy: p\ntools:\n  t: {kind: read_only, schema: {type: object, additionalProperties: false}}\nrules:\n  - tools: [u]\n    when: x == 1\n    allow: true\n',
      ),
    ).toEqual([]);
  });

  it('reads list items by index, and refuses an index past a closed tuple', () => {
    const tuple = (when: string): LoadProblem[] =>
      load(
        `policy: p\ntools:\n  t: {kind: read_only, schema: {type: object, properties: {xs: {type: array, prefixItems: [{type: string}], items: false}}}}\nrules:\n  - tools: [t]\n    when: ${JSON.stringify(when)}\n    allow: true\n`,
      );
    expect(tuple('xs.0 == "a"')).toEqual([]);
    expect(tuple('xs.0 == 1')[0]!.message).toMatch(/`xs.0` is a string/);
    expect(tuple('xs.1 == "a"')[0]!.message).toMatch(/`xs.1` is not declared/);
  });
});

describe('static types of the language, without any schema', () => {
  const refused: [string, number, RegExp][] = [
    ['lower(name)', 1, /`lower\(name\)` is a string, and a condition needs a boolean/],
    ['len(name) == "3"', 1, /`len\(name\)` is a number, and `==` with a string literal needs a string/],
    ['name startswith 1', 17, /`1` is a number, and `startswith` needs a string or a list/],
    ['len(3) > 1', 5, /`3` is a number, and len\(\) needs a string or a list/],
    ['count($run.steps, "x") > "a"', 1, /is a number, and `>` with a string literal needs a string/],
    ['$env == 1', 1, /`\$env` is a string, and `==` with a number literal needs a number/],
    ['$caller.user > 3', 1, /`\$caller.user` is a string/],
    ['argv(cmd) == other', 1, /`argv\(cmd\)` is a list, and `==` needs a string, a number, a boolean or null/],
    ['$caller.roles != "admin"', 1, /`\$caller.roles` is a list, and `!=` needs/],
    ['argv(cmd).x == "a"', 1, /only argv\(\) has members/],
    ['lower(a).0 == "x"', 1, /only argv\(\) has members/],
    ['f(x)', 1, /`f` cannot be called; the built-ins are lower\(\), len\(\), path\(\), argv\(\), count\(\)/],
    ['lower(a, b) == "x"', 1, /`lower` takes 1 argument/],
    ['count($run.steps) > 1', 1, /`count` takes 2 or 3 arguments/],
    ['count($run.steps, "[") > 1', 20, /the glob of `count`: unclosed '\['/],
    ['count($run.steps, "x", "maybe") > 1', 24, /`count` takes a decision as its third argument/],
    ['count($run.steps, name) > 1', 19, /`count` takes the tools to count as a glob written as a string/],
    ['name matches other', 14, /`matches` takes a glob written as a string/],
    ['name matches "a[b"', 16, /the glob of `matches`/],
    ['$nope.x == 1', 1, /unknown root `\$nope`; the roots are \$caller, \$context, \$run, \$env and \$approval/],
    ['$caller.bad == 1', 1, /`\$caller` has `user`, `team`, `agent`, `roles` and `claims.NAME`/],
    ['$run.other == 1', 1, /`\$run` has `\$run.id`, `\$run.steps` and `\$run.approvals`/],
    ['$env.x == 1', 1, /`\$env` is the environment's name and has no members/],
    ['$context == 1', 1, /`\$context` is read by a path/],
    ['$caller.claims.api_token == "x"', 1, /looks like a secret/],
    ['"a" startswith "b"', 5, /compares two constants/],
  ];
  it.each(refused)('%s is a load error at column %i', (condition, column, message) => {
    const problems = load(
      `policy: p\nrules:\n  - tools: [t]\n    when: ${JSON.stringify(condition)}\n    allow: true\n`,
    );
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatchObject({ line: 4, key: 'rules.0.when' });
    expect(problems[0]!.message).toMatch(message);
    expect(problems[0]!.message).toContain(`(column ${column})`);
  });
});
