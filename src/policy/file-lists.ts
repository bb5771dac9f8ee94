// Lists of strings in a policy file may be written as a single string (`tools: refund`, `teams:
// support`): docs/spec.md section 2.2. This module knows where those lists are and turns a string
// written there into a list of that one string, before the file schema is checked.
import type { JsonObject, JsonValue } from '../json/value.js';
import type { KeyPath } from './source/common.js';

/** The selector keys of a rule, a guard, a budget, a rate limit and a file's `scope`. */
export const SELECTOR_KEYS = ['tools', 'kinds', 'tags', 'envs', 'teams', 'users', 'agents'] as const;

const RULE_LISTS: readonly string[] = SELECTOR_KEYS;
const GUARD_LISTS: readonly string[] = [...SELECTOR_KEYS, 'on'];
const APPROVAL_LISTS: readonly string[] = ['capability', 'presentation'];
const APPROVER_LISTS: readonly string[] = ['roles', 'teams', 'users'];

/**
 * Whether `path` (as the file schema reports it) is a place that holds a list of strings, so that a
 * wrong type there can say that a string is accepted too.
 */
export function isStringListPath(path: KeyPath): boolean {
  const [top, second, third, fourth] = path;
  switch (path.length) {
    case 1:
      return top === 'environments';
    case 2:
      return top === 'scope' && RULE_LISTS.includes(String(second));
    case 3:
      if (top === 'tools') return third === 'tags';
      if (typeof second !== 'number') return false;
      if (top === 'rules') return RULE_LISTS.includes(String(third));
      if (top === 'guards') return GUARD_LISTS.includes(String(third));
      if (top === 'budgets' || top === 'rate_limits') return RULE_LISTS.includes(String(third));
      return false;
    case 4:
      return (
        ((top === 'rules' && typeof second === 'number') || top === 'tools') &&
        third === 'approval' &&
        APPROVAL_LISTS.includes(String(fourth))
      );
    case 5:
      return (
        ((top === 'rules' && typeof second === 'number') || top === 'tools') &&
        third === 'approval' &&
        fourth === 'approvers' &&
        APPROVER_LISTS.includes(String(path[4]))
      );
    default:
      return false;
  }
}

/**
 * A copy of the parsed document in which every string written where a list of strings belongs is
 * that list of one string. Only the objects on the way to such a string are copied; anything of the
 * wrong shape is left as it is, for the file schema to refuse.
 */
export function withListsSpelledOut(doc: JsonValue): JsonValue {
  if (!isObject(doc)) return doc;
  const out: JsonObject = { ...doc };
  listify(out, ['environments']);
  if (isObject(out['scope'])) out['scope'] = listify({ ...out['scope'] }, RULE_LISTS);
  if (isObject(out['tools'])) {
    const tools: JsonObject = { ...out['tools'] };
    for (const [name, entry] of Object.entries(tools)) {
      if (!isObject(entry)) continue;
      if (typeof entry['tags'] === 'string' || isObject(entry['approval'])) {
        const copy = listify({ ...entry }, ['tags']);
        if (isObject(copy['approval'])) copy['approval'] = approvalLists(copy['approval']);
        Object.defineProperty(tools, name, own(copy));
      }
    }
    out['tools'] = tools;
  }
  if (Array.isArray(out['rules'])) {
    out['rules'] = out['rules'].map((rule) => {
      if (!isObject(rule)) return rule;
      const copy = listify({ ...rule }, RULE_LISTS);
      if (isObject(copy['approval'])) copy['approval'] = approvalLists(copy['approval']);
      return copy;
    });
  }
  if (Array.isArray(out['guards']))
    out['guards'] = out['guards'].map((guard) => (isObject(guard) ? listify({ ...guard }, GUARD_LISTS) : guard));
  for (const key of ['budgets', 'rate_limits']) {
    const list = out[key];
    if (Array.isArray(list))
      out[key] = list.map((entry) => (isObject(entry) ? listify({ ...entry }, RULE_LISTS) : entry));
  }
  return out;
}

/** An `approval` block (a rule's or a catalogue entry's) with its lists spelled out. */
function approvalLists(block: JsonObject): JsonObject {
  const copy = listify({ ...block }, APPROVAL_LISTS);
  if (isObject(copy['approvers'])) copy['approvers'] = listify({ ...copy['approvers'] }, APPROVER_LISTS);
  return copy;
}

function listify(obj: JsonObject, keys: readonly string[]): JsonObject {
  for (const key of keys) {
    const value = obj[key];
    if (Object.hasOwn(obj, key) && typeof value === 'string') obj[key] = [value];
  }
  return obj;
}

// A tool name is the operator's text: `__proto__` must stay an own data property.
function own(value: JsonValue): PropertyDescriptor {
  return { value, enumerable: true, writable: true, configurable: true };
}

function isObject(v: JsonValue | undefined): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
