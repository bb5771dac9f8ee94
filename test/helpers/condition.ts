// A condition's input for tests that only exercise the arguments: a fixed caller, no context, no run.
import type { JsonObject } from '../../src/json/value.js';
import { compileCondition, ConditionError, type ConditionInput } from '../../src/policy/condition/compile.js';

export const CALLER = Object.freeze({ user: 'u-1', team: 'support', agent: 'bot', roles: Object.freeze(['agent']) });

export function on(args: JsonObject, more: Partial<Omit<ConditionInput, 'args'>> = {}): ConditionInput {
  return { args, caller: CALLER, context: undefined, run: undefined, env: null, ...more };
}

/** The load error a condition is refused with; fails the test when it compiles. */
export function compileError(source: string): ConditionError {
  try {
    compileCondition(source);
  } catch (err) {
    if (err instanceof ConditionError) return err;
    throw err;
  }
  throw new Error(`expected ${JSON.stringify(source)} to be refused`);
}
