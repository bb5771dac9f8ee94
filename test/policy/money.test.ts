// Money annotations in a catalogue schema (docs/spec.md section 2.2, "Amounts"): accepted by the
// strict schema compiler, their values checked at load, collected per tool for the operator page,
// and never a change to what the schema accepts or what is decided.
import { describe, expect, it } from 'vitest';
import { decide } from '../../src/policy/decide.js';
import { PolicyLoadError, type LoadProblem } from '../../src/policy/errors.js';
import { buildPolicySet } from '../../src/policy/load.js';
import { moneyOf } from '../../src/policy/money.js';

const enc = (s: string): Uint8Array => new TextEncoder().encode(s);
const load = (text: string) => buildPolicySet([{ path: 'pay.yaml', bytes: enc(text) }]);
const problemsOf = (text: string): LoadProblem[] => {
  try {
    load(text);
  } catch (err) {
    expect(err).toBeInstanceOf(PolicyLoadError);
    return [...(err as PolicyLoadError).problems];
  }
  throw new Error('expected the load to fail');
};
const policy = (schema: string): string => `policy: pay
tools:
  refund: {kind: remote_mutation, schema: ${schema}}
rules:
  - {id: refunds, tools: [refund], allow: true, confirm: true, reason: refunds need an operator}
`;

describe('money annotations', () => {
  it('a fixed currency, a currency named by another argument, nested fields: collected per tool', () => {
    const set = load(
      policy(`{type: object, properties: {
        amount: {type: number, x-gatehouse-format: money, x-gatehouse-currency: EUR},
        fee: {type: [number, string], x-gatehouse-format: money, x-gatehouse-currency-path: currency},
        currency: {type: string},
        refund: {type: object, properties: {total: {type: integer, x-gatehouse-format: money, x-gatehouse-currency-path: refund.code}}}}}`),
    );
    expect(moneyOf(set, 'refund')).toEqual([
      { path: 'amount', currency: 'EUR' },
      { path: 'fee', currency_path: 'currency' },
      { path: 'refund.total', currency_path: 'refund.code' },
    ]);
    expect(moneyOf(set, 'other_tool')).toEqual([]);
    // Annotations only: the schema accepts and refuses what it would without them.
    const call = (args: object) =>
      decide(set, { tool: 'refund', args: args as never }, { user: 'u', team: null, agent: null, roles: [] });
    expect(call({ amount: 10, fee: 'x' }).decision).toBe('require_approval');
    expect(call({ amount: 'ten' }).decision).toBe('deny');
  });

  it.each([
    [
      'a currency that is not three capital letters',
      '{type: number, x-gatehouse-format: money, x-gatehouse-currency: eur}',
      /x-gatehouse-currency/,
    ],
    [
      'a format other than money',
      '{type: number, x-gatehouse-format: cash, x-gatehouse-currency: EUR}',
      /x-gatehouse-format/,
    ],
    [
      'a currency path that is not an argument path',
      '{type: number, x-gatehouse-format: money, x-gatehouse-currency-path: "a b"}',
      /x-gatehouse-currency-path/,
    ],
  ])('%s is a load error of the schema', (_, field, message) => {
    const problems = problemsOf(policy(`{type: object, properties: {amount: ${field}}}`));
    expect(problems).toHaveLength(1);
    expect(problems[0]!.key).toBe('tools.refund.schema');
    expect(problems[0]!.message).toMatch(message);
  });

  it.each([
    [
      'money without a currency',
      '{type: object, properties: {amount: {type: number, x-gatehouse-format: money}}}',
      'tools.refund.schema.properties.amount',
      /exactly one of/,
    ],
    [
      'both currency keywords',
      '{type: object, properties: {amount: {type: number, x-gatehouse-format: money, x-gatehouse-currency: EUR, x-gatehouse-currency-path: c}}}',
      'tools.refund.schema.properties.amount',
      /exactly one of/,
    ],
    [
      'a currency without the money format',
      '{type: object, properties: {amount: {type: number, x-gatehouse-currency: EUR}}}',
      'tools.refund.schema.properties.amount',
      /go with/,
    ],
    [
      'money on a string-only field',
      '{type: object, properties: {amount: {type: string, x-gatehouse-format: money, x-gatehouse-currency: EUR}}}',
      'tools.refund.schema.properties.amount',
      /admit `number`/,
    ],
    [
      'money with no one argument path (inside items)',
      '{type: object, properties: {lines: {type: array, items: {type: number, x-gatehouse-format: money, x-gatehouse-currency: EUR}}}}',
      'tools.refund.schema.properties.lines.items',
      /under `properties`/,
    ],
  ])('%s is a load error naming where', (_, schema, key, message) => {
    const problems = problemsOf(policy(schema));
    expect(problems, JSON.stringify(problems)).toHaveLength(1);
    expect(problems[0]!.key).toBe(key);
    expect(problems[0]!.message).toMatch(message);
  });
});
