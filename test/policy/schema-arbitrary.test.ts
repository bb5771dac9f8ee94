// Generated tool arguments (src/policy/schema-arbitrary.ts): what a schema of the subset it reads
// describes is what it generates, checked by the service's own schema compiler; free arguments are
// strict-body JSON; a counterexample shrinks to the simplest value.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalize } from '../../src/json/canonical.js';
import type { JsonObject, JsonValue } from '../../src/json/value.js';
import { createArgsAjv } from '../../src/policy/ajv.js';
import { freeArgsArbitrary, jsonArbitrary, schemaArbitrary } from '../../src/policy/schema-arbitrary.js';
import { runs } from '../helpers/runs.js';

const ajv = createArgsAjv();

// One schema per part of the subset (src/policy/schema-arbitrary.ts), as policy catalogues write them.
const SCHEMAS: Record<string, object> = {
  'the example refund': {
    type: 'object',
    required: ['order', 'amount'],
    additionalProperties: false,
    properties: {
      order: { type: 'string', maxLength: 64 },
      amount: { type: 'number', minimum: 0 },
      note: { type: 'string', maxLength: 2000 },
    },
  },
  'nested objects and arrays': {
    type: 'object',
    required: ['customer', 'items'],
    properties: {
      customer: {
        type: 'object',
        required: ['id'],
        additionalProperties: false,
        properties: { id: { type: 'string', minLength: 3 }, vip: { type: 'boolean' } },
      },
      items: {
        type: 'array',
        minItems: 1,
        maxItems: 3,
        items: {
          type: 'object',
          required: ['sku', 'qty'],
          properties: { sku: { type: 'string' }, qty: { type: 'integer', minimum: 1 } },
        },
      },
    },
  },
  'enum, const and a type list': {
    type: 'object',
    required: ['country', 'mode', 'ref'],
    properties: {
      country: { enum: ['FR', 'DE', 7, null] },
      mode: { const: 'dry-run' },
      ref: { type: ['string', 'null'] },
    },
  },
  'integer bounds and multipleOf': {
    type: 'object',
    required: ['a', 'b', 'c'],
    properties: {
      a: { type: 'integer', exclusiveMinimum: 10, exclusiveMaximum: 20 },
      b: { type: 'integer', multipleOf: 5, minimum: 3, maximum: 40 },
      c: { type: 'integer', maximum: -1000 },
    },
  },
  'number bounds': {
    type: 'object',
    required: ['ratio', 'price'],
    properties: {
      ratio: { type: 'number', exclusiveMinimum: 0, maximum: 1 },
      price: { type: 'number', minimum: 0.5, exclusiveMaximum: 250 },
    },
  },
  'string lengths and patterns': {
    type: 'object',
    required: ['code', 'sku', 'pin'],
    properties: {
      code: { type: 'string', minLength: 2, maxLength: 6 },
      sku: { type: 'string', pattern: '^[A-Z]{2}-\\d{3,5}$' },
      pin: { type: 'string', pattern: '^[0-9]+$', minLength: 4, maxLength: 6 },
    },
  },
  formats: {
    type: 'object',
    required: ['email', 'uri', 'date', 'dateTime', 'time', 'uuid', 'ipv4', 'ipv6', 'hostname'],
    properties: {
      email: { type: 'string', format: 'email' },
      uri: { type: 'string', format: 'uri' },
      date: { type: 'string', format: 'date' },
      dateTime: { type: 'string', format: 'date-time' },
      time: { type: 'string', format: 'time' },
      uuid: { type: 'string', format: 'uuid' },
      ipv4: { type: 'string', format: 'ipv4' },
      ipv6: { type: 'string', format: 'ipv6' },
      hostname: { type: 'string', format: 'hostname' },
    },
  },
  'tuples and unique items': {
    type: 'object',
    required: ['point', 'tags'],
    properties: {
      point: { type: 'array', prefixItems: [{ type: 'number' }, { type: 'number' }], items: false, minItems: 2 },
      tags: { type: 'array', items: { enum: ['a', 'b', 'c'] }, uniqueItems: true },
    },
  },
  'anyOf, oneOf and allOf': {
    type: 'object',
    required: ['target', 'payment'],
    allOf: [
      {
        properties: {
          target: {
            anyOf: [
              { type: 'string', minLength: 1 },
              { type: 'integer', minimum: 1 },
            ],
          },
        },
      },
      { required: ['target'] },
    ],
    properties: {
      payment: {
        oneOf: [
          {
            type: 'object',
            required: ['kind', 'iban'],
            additionalProperties: false,
            properties: { kind: { const: 'bank' }, iban: { type: 'string' } },
          },
          { type: 'object', required: ['kind'], additionalProperties: false, properties: { kind: { const: 'cash' } } },
        ],
      },
    },
  },
  'a local $ref': {
    $defs: {
      money: {
        type: 'object',
        required: ['amount', 'currency'],
        properties: { amount: { type: 'number', minimum: 0 }, currency: { enum: ['EUR', 'USD'] } },
      },
    },
    type: 'object',
    required: ['price'],
    properties: { price: { $ref: '#/$defs/money' }, discount: { $ref: '#/$defs/money' } },
  },
  'typed additional properties': {
    type: 'object',
    additionalProperties: { type: 'integer' },
    properties: { label: { type: 'string' } },
  },
  'no constraint at all': {},
};

describe('schemaArbitrary', () => {
  it.each(Object.keys(SCHEMAS))('generates only arguments the schema accepts: %s', (name) => {
    const schema = SCHEMAS[name]!;
    const validate = ajv.compile(schema);
    const refused = fc
      .sample(schemaArbitrary(schema), { seed: 42, numRuns: runs(300) })
      .filter((v) => !validate(v))
      .map((v) => `${JSON.stringify(v)}: ${JSON.stringify(validate.errors?.[0])}`);
    expect(refused).toEqual([]);
  });

  it('terminates on a recursive $ref, with arguments the schema mostly accepts', () => {
    const schema = {
      $defs: {
        node: {
          type: 'object',
          required: ['name'],
          properties: { name: { type: 'string' }, children: { type: 'array', items: { $ref: '#/$defs/node' } } },
        },
      },
      $ref: '#/$defs/node',
    };
    const validate = ajv.compile(schema);
    const values = fc.sample(schemaArbitrary(schema), { seed: 1, numRuns: 200 });
    expect(values.filter((v) => validate(v)).length).toBeGreaterThan(150);
  });

  it('reaches both sides of the numbers the conditions compare against', () => {
    const amounts = fc
      .sample(schemaArbitrary(SCHEMAS['the example refund'], { numbers: [100], strings: [], paths: ['amount'] }), {
        seed: 3,
        numRuns: 300,
      })
      .map((v) => (v as JsonObject).amount as number);
    expect(amounts).toContain(100);
    expect(amounts.some((a) => a > 100)).toBe(true);
    expect(amounts.some((a) => a < 100)).toBe(true);
  });

  it('writes the conditions’ strings and text the pii guard finds', () => {
    const strings = fc.sample(schemaArbitrary({ type: 'string' }, { numbers: [], strings: ['FR'], paths: [] }), {
      seed: 5,
      numRuns: 300,
    });
    expect(strings).toContain('FR');
    expect(strings.some((s) => typeof s === 'string' && s.includes('@example.com'))).toBe(true);
  });

  it('shrinks a counterexample to the simplest arguments the schema accepts', () => {
    const validate = ajv.compile(SCHEMAS['the example refund']!);
    const details = fc.check(
      fc.property(schemaArbitrary(SCHEMAS['the example refund']), (v) => {
        fc.pre(validate(v));
        return false;
      }),
      { seed: 9, numRuns: runs(10) },
    );
    expect(details.counterexample?.[0]).toEqual({ order: '', amount: 0 });
  });

  it('never writes -0, NaN or infinities', () => {
    for (const v of fc.sample(schemaArbitrary({ type: 'number' }), { seed: 11, numRuns: runs(500) })) {
      expect(Number.isFinite(v)).toBe(true);
      expect(Object.is(v, -0)).toBe(false);
    }
  });
});

describe('free arguments (a tool without a schema)', () => {
  it('are objects of strict-body JSON: canonical JSON accepts every one', () => {
    fc.assert(
      fc.property(freeArgsArbitrary(), (args) => {
        expect(Object.getPrototypeOf(args)).toBe(Object.prototype);
        expect(() => canonicalize(args)).not.toThrow();
      }),
      { seed: 13, numRuns: runs(300) },
    );
    fc.assert(
      fc.property(jsonArbitrary(), (v) => {
        expect(() => canonicalize(v)).not.toThrow();
      }),
      { seed: 14, numRuns: runs(300) },
    );
  });

  it('hold the paths the conditions read, nested as written', () => {
    const hints = { numbers: [50], strings: [], paths: ['order.total', 'items.0.sku', 'express'] };
    const values = fc.sample(freeArgsArbitrary(hints), { seed: 17, numRuns: 300 });
    const total = (v: JsonObject): JsonValue | undefined => (v.order as JsonObject | undefined)?.total;
    const sku = (v: JsonObject): JsonValue | undefined =>
      ((v.items as JsonValue[] | undefined)?.[0] as JsonObject | undefined)?.sku;
    expect(values.some((v) => typeof total(v) === 'number')).toBe(true);
    expect(values.some((v) => total(v) === 50)).toBe(true);
    expect(values.some((v) => sku(v) !== undefined)).toBe(true);
    expect(values.some((v) => Object.hasOwn(v, 'express'))).toBe(true);
  });
});
