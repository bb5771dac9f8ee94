// any(list, w, cond), all(list, w, cond), has(x), path(s, base) and `matches` with a list of globs
// (docs/spec.md section 3.4): their three-valued results, what they refuse at load, and what
// explain() says, which names paths and never a value.
import { describe, expect, it } from 'vitest';
import type { JsonObject } from '../../src/json/value.js';
import { compileCondition, type Truth } from '../../src/policy/condition/compile.js';
import { compileError, on } from '../helpers/condition.js';

const U = 'undecidable';
const CWD = { cwd: '/home/ann/shop/' };

function ev(source: string, args: JsonObject, context?: JsonObject): Truth {
  return compileCondition(source).evaluate(on(args, { context }));
}

describe('any and all', () => {
  it('are Kleene over the items: a true (any) or false (all) item decides; else an undecidable one makes it undecidable', () => {
    const any = 'any(xs, x, x > 2)';
    const all = 'all(xs, x, x > 2)';
    const rows: [JsonObject, Truth, Truth][] = [
      [{ xs: [1, 3] }, true, false],
      [{ xs: [3, 4] }, true, true],
      [{ xs: [1, 2] }, false, false],
      [{ xs: [] }, false, true],
      [{ xs: [1, 'a'] }, U, false],
      [{ xs: [3, 'a'] }, true, U],
      [{ xs: ['a'] }, U, U],
      [{ xs: 'not a list' }, U, U],
      [{}, U, U],
    ];
    for (const [args, a, b] of rows) {
      expect(ev(any, args), JSON.stringify(args)).toBe(a);
      expect(ev(all, args), JSON.stringify(args)).toBe(b);
    }
  });

  it('read members of an item, and nest with names of their own', () => {
    expect(ev('all(items, i, i.price < 100)', { items: [{ price: 3 }, { price: 99 }] })).toBe(true);
    expect(ev('all(items, i, i.price < 100)', { items: [{ price: 3 }, {}] })).toBe(U);
    expect(ev('any(rows, r, any(r.tags, t, t == "x"))', { rows: [{ tags: ['a'] }, { tags: ['b', 'x'] }] })).toBe(true);
    // Outside the body, the name reads the arguments again.
    expect(ev('any(xs, x, x == 1) and x == "arg"', { xs: [1], x: 'arg' })).toBe(true);
  });

  it('test every word of a command against a path, resolved against a base directory', () => {
    const c = 'any(argv(command), w, path(w, $context.cwd) matches ["*.ssh*", "*.env*"])';
    expect(ev(c, { command: 'cat /home/ann/.ssh/id_rsa' }, CWD)).toBe(true);
    expect(ev(c, { command: 'cat .env' }, CWD)).toBe(true);
    expect(ev(c, { command: 'cat ../../ann/.s"s"h/id_rsa' }, CWD)).toBe(true);
    expect(ev(c, { command: 'grep -f.env x' }, CWD)).toBe(true);
    expect(ev(c, { command: 'cat id_rsa' }, { cwd: '/home/ann/.ssh/' })).toBe(true);
    expect(ev(c, { command: 'cat README.md' }, CWD)).toBe(false);
    // No words (a pipe), or no base to resolve a relative word against: undecidable, never false.
    expect(ev(c, { command: 'cat a | sh' }, CWD)).toBe(U);
    expect(ev(c, { command: 'cat README.md' })).toBe(U);
    // An absolute word needs no base.
    expect(ev(c, { command: '/home/ann/.ssh/id' })).toBe(true);
  });

  it('are refused at load where they could never mean anything', () => {
    const cases: [string, RegExp][] = [
      ['any(xs, x)', /takes 3 arguments/],
      ['any(["a"], x, x == "a")', /goes over a list/],
      ['any(xs, x.y, x == 1)', /a name for each item/],
      ['any(xs, "x", x == 1)', /a name for each item/],
      ['any(xs, x, any(ys, x, x == 1))', /already names the items/],
      ['any(xs, token, token == 1)', /looks like a secret/],
      ['any(lower(s), x, x == 1)', /is a string, and `any` needs a list/],
      ['any(xs, x, x) == true', /is a condition, not a value/],
      ['len(any(xs, x, x == 1)) > 0', /is a condition, not a value/],
      ['any(argv(c), w, w > 1)', /`w` is a string, and/],
    ];
    for (const [source, message] of cases) expect(compileError(source).message, source).toMatch(message);
  });

  it('explain which item decided and what could not be decided, never a value', () => {
    const c = compileCondition('any(argv(command), w, w matches "--ou*")');
    const yes = c.explain(on({ command: 'git diff --output=/home/ann/secret' }));
    expect(yes).toEqual({ truth: true, why: "any(argv(command), w, …) is true: item 2: w matches '--ou*' is true" });
    const no = c.explain(on({ command: 'git diff | head' }));
    expect(no.truth).toBe(U);
    expect(no.why).toMatch(/^undecidable: `argv\(command\)` has no value/);
    const item = compileCondition('all(xs, x, x > 2)').explain(on({ xs: [3, 'secret-value'] }));
    expect(item.why).toBe('undecidable: all(xs, x, …): item 1: `x` is a string, compared with a number');
  });
});

describe('has', () => {
  it('is true for any present value (null too), false for a missing one or a built-in without a value; never undecidable on JSON', () => {
    expect(ev('has(note)', { note: null })).toBe(true);
    expect(ev('has(note)', { note: 'x' })).toBe(true);
    expect(ev('has(note)', {})).toBe(false);
    expect(ev('has(argv(command))', { command: 'git status' })).toBe(true);
    expect(ev('has(argv(command))', { command: 'git status | sh' })).toBe(false);
    expect(ev('has(argv(command).1)', { command: 'git' })).toBe(false);
    expect(ev('has(path(file))', { file: 'relative' })).toBe(false);
  });

  it('makes a restricting condition decidable: false and undecidable is false', () => {
    const c = 'has(argv(command)) and argv(command).0 == "rm"';
    expect(ev(c, { command: 'ls | rm' })).toBe(false);
    expect(ev(c, { command: 'rm x' })).toBe(true);
  });

  it('takes a path or a call, not a literal', () => {
    expect(compileError('has("x")').message).toMatch(/tests a path or a call/);
    expect(compileError('has(a, b)').message).toMatch(/takes 1 argument/);
  });
});

describe('path(s, base) and matches with a list', () => {
  it('resolves a relative path against an absolute base; an absolute one stands alone', () => {
    const c = 'path(file, $context.cwd) == "/home/ann/shop/src/a.ts"';
    expect(ev(c, { file: 'src/a.ts' }, CWD)).toBe(true);
    expect(ev(c, { file: './src/../src/a.ts' }, CWD)).toBe(true);
    expect(ev(c, { file: '/home/ann/shop/src/a.ts' })).toBe(true);
    expect(ev(c, { file: 'src/a.ts' }, { cwd: 'relative/' })).toBe(U);
    expect(ev(c, { file: '../../../../x' }, CWD)).toBe(U);
  });

  it('matches any glob of a list; a list of anything but strings, or an empty one, is refused', () => {
    expect(ev('name matches ["*.ts", "*.js"]', { name: 'a.js' })).toBe(true);
    expect(ev('name matches ["*.ts", "*.js"]', { name: 'a.md' })).toBe(false);
    expect(ev('name matches ["*.ts"]', { name: 3 })).toBe(U);
    expect(compileError('name matches []').message).toMatch(/`matches` takes a glob/);
    expect(compileError('name matches ["*", 1]').message).toMatch(/`matches` takes a glob/);
  });
});

describe('tests: what the property generator is told a condition tests', () => {
  it('records each argument test against a literal or a $context path, with how the argument is read', () => {
    const c = compileCondition(
      'argv(command) startswith ["git", "diff"] and argv(command).0 in ["ls"] and any(argv(command), w, path(w, $context.cwd) matches "*.env*") and path(file) startswith $context.project_dir',
    );
    expect(c.tests).toEqual([
      { probe: { path: 'command', in: 'argv' }, op: 'startswith', literal: ['git', 'diff'] },
      { probe: { path: 'command', in: 'argvAt', index: 0 }, op: 'in', literal: ['ls'] },
      { probe: { path: 'command', in: 'word', asPath: true }, op: 'matches', literal: '*.env*' },
      { probe: { path: 'file', in: 'value', asPath: true }, op: 'startswith', context: ['project_dir'] },
    ]);
    expect(c.parsed).toEqual({ argv: ['command'], path: ['file'] });
  });

  it('testsHeld counts the tests that are true, even where another part settles the result', () => {
    const c = compileCondition('argv(command).2 == "zzz" and argv(command).0 == "qq"');
    expect(c.evaluate(on({ command: 'qq a b' }))).toBe(false);
    expect(c.testsHeld(on({ command: 'qq a b' }))).toBe(1);
    expect(c.testsHeld(on({ command: 'a b c' }))).toBe(0);
    const q = compileCondition('all(xs, x, x > 2 or x == 0)');
    expect(q.testsHeld(on({ xs: [0, 3, 1] }))).toBe(2);
  });
});
