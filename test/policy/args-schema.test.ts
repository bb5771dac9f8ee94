// The schema the operator page checks an edited call against (src/policy/args-schema.ts): each
// catalogue entry's, several joined with allOf (a call must match every one), none when none gives one.
import { describe, expect, it } from 'vitest';
import { argsSchemaOf } from '../../src/policy/args-schema.js';

const catalogue = (...schemas: (object | boolean | undefined)[]) => ({
  plan: () => ({ entries: schemas.map((schema) => (schema === undefined ? {} : { schema })) as never[] }),
});

describe('argsSchemaOf', () => {
  it('is null without a schema, the one schema, or all of several joined with allOf', () => {
    expect(argsSchemaOf(catalogue(), 'refund')).toBeNull();
    expect(argsSchemaOf(catalogue(undefined), 'refund')).toBeNull();
    expect(argsSchemaOf(catalogue({ type: 'object' }, undefined), 'refund')).toEqual({ type: 'object' });
    expect(argsSchemaOf(catalogue({ type: 'object' }, { required: ['a'] }), 'refund')).toEqual({
      allOf: [{ type: 'object' }, { required: ['a'] }],
    });
    expect(argsSchemaOf(catalogue(false), 'refund')).toBe(false);
  });
});
