// The checks an entry of the client's approval memory passes before gate() uses it, and those a redeem's allow
// passes before gate() answers allow (src/client/entry.ts): table cases of what is kept and what is
// discarded. The same attacks end to end, through the hook and a real server: test/cli/hook.test.ts.
import { describe, expect, it } from 'vitest';
import { entryFor, isConsentFor, redeemBody } from '../../src/client/entry.js';
import type { DecisionBody, ToolCall } from '../../src/client/types.js';

const ID = '0190a3b4-1111-7000-8000-000000000001';
const CALL: ToolCall = {
  tool: 'mcp__github__delete_repo',
  args: { repo: 'acme/shop', force: true, depth: 2 },
  context: { cwd: '/home/ann/shop/', project_dir: '/home/ann/shop/' },
  run: { id: 'session-1', steps: [] },
};
const entry = (body: string, id = ID): string => JSON.stringify({ id, redeem: { key: 'gatehouse-client:k1', body } });

describe('entryFor: an entry is used only for the call it was written for', () => {
  it('keeps what gate() writes: an approval alone, or with the redeem of this call', () => {
    expect(entryFor(JSON.stringify({ id: ID }), CALL)).toEqual({ id: ID });
    const body = redeemBody(CALL, ID);
    expect(entryFor(entry(body), CALL)).toEqual({ id: ID, redeem: { key: 'gatehouse-client:k1', body } });
  });

  it('a redeem of other arguments is kept only as the amendment Gatehouse names, exactly', () => {
    const amended = { repo: 'acme/shop', force: false, depth: 2 };
    const body = redeemBody({ ...CALL, args: amended }, ID);
    expect(entryFor(entry(body), CALL)).toBeUndefined();
    expect(entryFor(entry(body), CALL, amended)).toEqual({ id: ID, redeem: { key: 'gatehouse-client:k1', body } });
    expect(entryFor(entry(body), CALL, { ...amended, depth: 3 })).toBeUndefined();
    // Still this call in all else: another tool with the amended arguments is not.
    expect(entryFor(entry(redeemBody({ ...CALL, tool: 'Bash', args: amended }, ID)), CALL, amended)).toBeUndefined();
  });

  it('compares canonical forms, not text: key order and spacing do not matter', () => {
    const reordered = `{ "approval_id": "${ID}", "run": {"steps": [], "id": "session-1"},
      "context": {"project_dir": "/home/ann/shop/", "cwd": "/home/ann/shop/"},
      "args": {"depth": 2, "force": true, "repo": "acme/shop"}, "tool": "mcp__github__delete_repo" }`;
    expect(entryFor(entry(reordered), CALL)?.redeem?.body).toBe(reordered);
    // Absent and empty are the same arguments and context, as /decide reads them.
    const bare: ToolCall = { tool: 'Bash', run: { id: 'r' } };
    expect(
      entryFor(entry(JSON.stringify({ tool: 'Bash', args: {}, context: {}, run: { id: 'r' }, approval_id: ID })), bare),
    ).toBeDefined();
  });

  const other = (patch: Record<string, unknown>) =>
    entry(JSON.stringify({ ...JSON.parse(redeemBody(CALL, ID)), ...patch }));
  const discarded: [string, string][] = [
    ['another tool', other({ tool: 'Bash' })],
    ['other arguments', other({ args: { repo: 'acme/other', force: true, depth: 2 } })],
    ['an argument more', other({ args: { ...CALL.args, extra: 1 } })],
    ['an argument less', other({ args: { repo: 'acme/shop', force: true } })],
    [
      'a number written otherwise (2.0 is not 2 in the canonical form)',
      entry(redeemBody(CALL, ID).replace('"depth":2', '"depth":2.0')),
    ],
    ['another context', other({ context: { cwd: '/tmp/', project_dir: '/tmp/' } })],
    ['no context', other({ context: undefined })],
    ['another run', other({ run: { id: 'session-2', steps: [] } })],
    ['no run', other({ run: undefined })],
    ['a run that is not an object', other({ run: 'session-1' })],
    ['another approval cited', other({ approval_id: 'another' })],
    ['no approval cited', other({ approval_id: undefined })],
    ['a field a call does not have', other({ user: 'admin' })],
    [
      'a repeated key (first and last readings differ)',
      entry(redeemBody(CALL, ID).replace('{"tool":', '{"tool":"Bash","tool":')),
    ],
    ['a body that is not JSON', entry('{"tool":')],
    ['a body that is not an object', entry('[]')],
    ['an entry that is not JSON', '{"id":'],
    ['an entry that is not an object', 'null'],
    ['an id that is not a string', JSON.stringify({ id: 7 })],
    ['an empty id', JSON.stringify({ id: '' })],
    ['an id longer than /decide takes', JSON.stringify({ id: 'x'.repeat(65) })],
    ['a field an entry does not have', JSON.stringify({ id: ID, allow: true })],
    ['a redeem that is not an object', JSON.stringify({ id: ID, redeem: 'x' })],
    ['a redeem without its key', JSON.stringify({ id: ID, redeem: { body: redeemBody(CALL, ID) } })],
    ['a redeem without its body', JSON.stringify({ id: ID, redeem: { key: 'k' } })],
  ];
  it.each(discarded)('discards %s', (_what, text) => {
    expect(entryFor(text, CALL)).toBeUndefined();
  });
});

describe("isConsentFor: a redeem's allow counts only as this approval consumed for this call's hash", () => {
  const HASH = 'sha256:0f0e';
  const fresh = { decision: 'require_approval', approval: { kind: 'confirm', hash: HASH } } as DecisionBody;
  const allow = (approval: Record<string, unknown> | undefined) =>
    ({ decision: 'allow', ...(approval ? { approval } : {}) }) as DecisionBody;

  it('consumed, the approval cited, the hash of this call: consent', () => {
    expect(isConsentFor(allow({ id: ID, status: 'consumed', kind: 'confirm', hash: HASH }), ID, fresh)).toBe(true);
  });

  it.each([
    ['another approval', allow({ id: 'other', status: 'consumed', hash: HASH })],
    [
      'another hash (another call, or what the policy asks changed)',
      allow({ id: ID, status: 'consumed', hash: 'sha256:beef' }),
    ],
    ['not consumed', allow({ id: ID, status: 'granted', hash: HASH })],
    ['no approval: an allow that used no grant', allow(undefined)],
  ])('not %s', (_what, answer) => {
    expect(isConsentFor(answer, ID, fresh)).toBe(false);
  });

  it('never without a hash to compare with, or for anything but allow', () => {
    const consumed = allow({ id: ID, status: 'consumed', hash: HASH });
    expect(isConsentFor(consumed, ID, { ...fresh, approval: undefined })).toBe(false);
    expect(
      isConsentFor(allow({ id: ID, status: 'consumed', hash: '' }), ID, {
        ...fresh,
        approval: { kind: 'confirm', hash: '' } as DecisionBody['approval'],
      }),
    ).toBe(false);
    expect(isConsentFor({ ...consumed, decision: 'deny' }, ID, fresh)).toBe(false);
  });
});
