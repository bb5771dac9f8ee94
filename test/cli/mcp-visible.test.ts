// Which upstream tools mcp-proxy lists (src/cli/mcp/visible.ts), from a GET /tools inventory: a pure
// function, so every way a catalogue can describe a name is checked here; test/cli/mcp-proxy.test.ts
// checks it end to end against the real route.
import { describe, expect, it } from 'vitest';
import type { ToolsResponse } from '../../src/client/index.js';
import { refusalText } from '../../src/cli/mcp/proxy.js';
import { checkInventory, visibilityOf, visibleTools } from '../../src/cli/mcp/visible.js';

type Status = ToolsResponse['tools'][number]['status'];
const entry = (name: string, status: Status | string, policy = 'p') => ({
  name,
  policy,
  kind: 'remote_mutation' as const,
  tags: [],
  status: status as Status,
  rules: [],
});
const inventory = (...tools: ReturnType<typeof entry>[]): ToolsResponse => ({ env: 'dev', tools });

describe('visibilityOf', () => {
  it('lists what can run (allow, require_approval, depends) and hides what never does (deny, abort)', () => {
    const see = visibilityOf(
      inventory(
        entry('a', 'allow'),
        entry('b', 'require_approval'),
        entry('c', 'depends'),
        entry('d', 'deny'),
        entry('e', 'abort'),
      ),
    );
    expect(['a', 'b', 'c', 'd', 'e'].map((n) => see(n).listed)).toEqual([true, true, true, false, false]);
    expect(see('d')).toEqual({ listed: false, why: 'never_runs' });
  });

  it('hides a tool no catalogue describes (the default decides it as kind unknown)', () => {
    expect(visibilityOf(inventory(entry('a', 'allow')))('zzz')).toEqual({ listed: false, why: 'not_catalogued' });
    expect(visibilityOf(inventory())('a')).toEqual({ listed: false, why: 'not_catalogued' });
  });

  it('matches globs as the service does: `*` crosses dots and slashes', () => {
    const see = visibilityOf(inventory(entry('github.*', 'allow')));
    expect(see('github.create_issue').listed).toBe(true);
    expect(see('github.repos/list').listed).toBe(true);
    expect(see('gitlab.create_issue').listed).toBe(false);
  });

  it('an exact item speaks for its name, whatever a glob matching it says', () => {
    expect(
      visibilityOf(inventory(entry('github.*', 'deny'), entry('github.get_issue', 'allow')))('github.get_issue').listed,
    ).toBe(true);
    expect(
      visibilityOf(inventory(entry('github.*', 'allow', 'a'), entry('github.delete_repo', 'abort', 'b')))(
        'github.delete_repo',
      ).listed,
    ).toBe(false);
    expect(
      visibilityOf(inventory(entry('github.*', 'deny', 'a'), entry('github.get_issue', 'depends', 'b')))(
        'github.get_issue',
      ).listed,
    ).toBe(true);
  });

  it('a name several globs match (which the inventory does not speak for) is hidden when any of them never runs', () => {
    expect(visibilityOf(inventory(entry('g*', 'deny'), entry('github.*', 'allow')))('github.get_issue').listed).toBe(
      false,
    );
    expect(
      visibilityOf(inventory(entry('github.*', 'allow', 'a'), entry('github.get_*', 'abort', 'b')))('github.get_issue')
        .listed,
    ).toBe(false);
    expect(
      visibilityOf(inventory(entry('github.*', 'allow', 'a'), entry('github.delete_*', 'deny', 'b')))(
        'github.get_issue',
      ).listed,
    ).toBe(true);
    // A glob shadowed by an earlier one of its file describes no name: `depends`, which hides nothing.
    expect(visibilityOf(inventory(entry('x.*', 'require_approval'), entry('x.*y', 'depends')))('x.ay').listed).toBe(
      true,
    );
  });

  it('hides a status it does not know (a newer service): fail closed', () => {
    expect(visibilityOf(inventory(entry('a', 'maybe')))('a')).toEqual({ listed: false, why: 'never_runs' });
  });

  it('hides a name the service refuses as a tool name (spec 5.1), whatever the catalogue says', () => {
    const see = visibilityOf(inventory(entry('*', 'allow')));
    for (const name of ['has space', 'a/../b', 'a/.', '', 'x'.repeat(129), 'é'])
      expect(see(name), name).toEqual({ listed: false, why: 'not_a_tool_name' });
    expect(see('x'.repeat(128)).listed).toBe(true);
  });
});

describe('visibleTools', () => {
  it('names each tool to Gatehouse as prefix + upstream name, and keeps the listed ones untouched, in order', () => {
    const tools = [
      {
        name: 'create_issue',
        inputSchema: { type: 'object', additionalProperties: false },
        annotations: { destructiveHint: false },
      },
      { name: 'delete_repo', inputSchema: { type: 'object' } },
      { name: 'get_issue', inputSchema: { type: 'object' } },
    ];
    const inv = inventory(entry('github.*', 'depends'), entry('github.delete_repo', 'deny'));
    const shown = visibleTools(tools, inv, 'github.');
    expect(shown).toEqual([tools[0], tools[2]]);
    expect(shown[0]).toBe(tools[0]);
    // Without the prefix, the names are not the catalogue's: nothing is listed.
    expect(visibleTools(tools, inv, '')).toEqual([]);
  });
});

describe('checkInventory', () => {
  it('accepts what GET /tools answers and refuses anything else (the list is then an error, not unfiltered)', () => {
    expect(() => checkInventory(inventory(entry('a', 'allow')))).not.toThrow();
    for (const bad of [
      null,
      {},
      { tools: {} },
      { tools: [null] },
      { tools: [{ name: 'a', policy: 'p' }] },
      { tools: [{ name: 1, policy: 'p', status: 'allow' }] },
    ]) {
      expect(() => checkInventory(bad), JSON.stringify(bad)).toThrow(TypeError);
    }
  });
});

describe('refusalText', () => {
  it("is the decision's message; abort adds that the run must end; an approval left waiting is named", () => {
    expect(refusalText({ decision: 'deny', message: 'No.', reason: 'r' })).toBe('No.');
    expect(refusalText({ decision: 'abort', message: 'Stop.', reason: 'r' })).toBe(
      'Stop. Gatehouse answered abort: this run must end now; make no further tool calls in it.',
    );
    expect(
      refusalText({
        decision: 'require_approval',
        message: 'Wait.',
        reason: 'r',
        approval: { id: 'A-1', status: 'pending', expiresAt: null },
      }),
    ).toBe('Wait. (approval A-1: pending)');
    expect(refusalText({ decision: 'deny', message: '', reason: 'r' })).toBe(
      'Gatehouse answered deny: the call was not run.',
    );
  });
});
