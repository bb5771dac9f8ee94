// @ts-check
// The pure part of "Edit and grant" on the operator page (docs/approvals.md, "The operator page"):
// the arguments written out for editing (numbers as written), the edited text checked against the
// tool's schema (GET /approvals/{id} `args_schema`), and what changed, path by path. No DOM: card.js
// (loaded first) gives parseExact, nodeText, pathText and JsonNode; page.js shows what this returns.
//
// The check here is a convenience, so the operator sees a mistake before sending: it knows the
// keywords tool schemas commonly use (below) and names the ones it does not check. The grant itself
// decides the amended call under the serving policies, schema included, and refuses what they refuse.
'use strict';

/** @typedef {{ where: string, text: string }} EditProblem */
/** @typedef {{ where: string, before: JsonNode | undefined, after: JsonNode | undefined }} EditChange */

/**
 * A JSON value written out for editing: two-space indents, keys in their order, numbers as written.
 * @param {JsonNode} node
 * @param {string} [indent]
 * @returns {string}
 */
function prettyJson(node, indent) {
  const at = indent || '';
  const inner = at + '  ';
  if (node.t === 'obj') {
    if (node.entries.length === 0) return '{}';
    return (
      '{\n' +
      node.entries.map(([k, v]) => inner + JSON.stringify(k) + ': ' + prettyJson(v, inner)).join(',\n') +
      '\n' +
      at +
      '}'
    );
  }
  if (node.t === 'arr') {
    if (node.items.length === 0) return '[]';
    return '[\n' + node.items.map((v) => inner + prettyJson(v, inner)).join(',\n') + '\n' + at + ']';
  }
  return nodeText(node);
}

/**
 * The edited text read as arguments: a JSON object, each key once (Gatehouse refuses a body with a
 * key twice). `problems` says where it is not.
 * @param {string} text
 * @returns {{ args: JsonNode | null, problems: EditProblem[] }}
 */
function readEdited(text) {
  /** @type {JsonNode} */
  let tree;
  try {
    tree = parseExact(text.trim());
  } catch (err) {
    return {
      args: null,
      problems: [{ where: 'args', text: 'not JSON: ' + String(/** @type {Error} */ (err).message) }],
    };
  }
  if (tree.t !== 'obj') return { args: null, problems: [{ where: 'args', text: 'the arguments are a JSON object' }] };
  /** @type {EditProblem[]} */
  const problems = [];
  /** @type {(node: JsonNode, path: (string | number)[]) => void} */
  const visit = (node, path) => {
    if (node.t === 'obj') {
      const seen = new Set();
      for (const [k, v] of node.entries) {
        if (seen.has(k)) problems.push({ where: pathText([...path, k]), text: 'this key is written twice' });
        seen.add(k);
        visit(v, [...path, k]);
      }
    } else if (node.t === 'arr') {
      node.items.forEach((v, n) => {
        visit(v, [...path, n]);
      });
    }
  };
  visit(tree, ['args']);
  return { args: problems.length === 0 ? tree : null, problems };
}

// Keywords that only describe: nothing to check.
const ANNOTATIONS = new Set([
  '$schema',
  '$id',
  '$comment',
  'title',
  'description',
  'default',
  'examples',
  'deprecated',
  'readOnly',
  'writeOnly',
  'x-gatehouse-format',
  'x-gatehouse-currency',
  'x-gatehouse-currency-path',
]);
// Keywords checked here. Any other (format, $ref, if/then/else, dependentRequired, …) is named as
// not checked: the grant's decision checks it.
const CHECKED = new Set([
  'type',
  'enum',
  'const',
  'properties',
  'required',
  'additionalProperties',
  'patternProperties',
  'minProperties',
  'maxProperties',
  'items',
  'prefixItems',
  'minItems',
  'maxItems',
  'uniqueItems',
  'minLength',
  'maxLength',
  'pattern',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'multipleOf',
  'allOf',
  'anyOf',
  'oneOf',
  'not',
]);

/**
 * The edited arguments against the tool's schema (JSON Schema 2020-12, the subset in CHECKED):
 * every failure found, where, and the keywords this check skipped.
 * @param {JsonNode} args
 * @param {unknown} schema `args_schema` as the API sent it (an object or a boolean)
 * @returns {{ problems: EditProblem[], unchecked: string[] }}
 */
function checkArgs(args, schema) {
  /** @type {Set<string>} */
  const unchecked = new Set();
  const problems = validate(args, schema, ['args'], unchecked);
  return { problems, unchecked: [...unchecked].sort() };
}

/**
 * @param {JsonNode} node
 * @returns {string} the JSON Schema type of a node ("integer" for a whole number)
 */
function typeOf(node) {
  switch (node.t) {
    case 'obj':
      return 'object';
    case 'arr':
      return 'array';
    case 'str':
      return 'string';
    case 'num':
      return Number.isInteger(Number(node.v)) ? 'integer' : 'number';
    default:
      return node.v === 'null' ? 'null' : 'boolean';
  }
}

/**
 * Two values equal as JSON Schema compares them (`enum`, `const`, `uniqueItems`): numbers by value,
 * objects whatever the order of their keys.
 * @param {JsonNode} a
 * @param {JsonNode} b
 * @returns {boolean}
 */
function sameValue(a, b) {
  if (a.t === 'num' && b.t === 'num') return Number(a.v) === Number(b.v);
  if (a.t !== b.t) return false;
  if (a.t === 'obj' && b.t === 'obj') {
    if (a.entries.length !== b.entries.length) return false;
    return a.entries.every(([k, v]) => {
      const other = member(b, k);
      return other !== undefined && sameValue(v, other);
    });
  }
  if (a.t === 'arr' && b.t === 'arr')
    return a.items.length === b.items.length && a.items.every((v, n) => sameValue(v, b.items[n]));
  return nodeText(a) === nodeText(b);
}

/**
 * A plain JS value (the schema's `enum` and `const`) as a node, to compare with sameValue.
 * @param {unknown} value
 * @returns {JsonNode}
 */
function nodeOf(value) {
  return parseExact(JSON.stringify(value === undefined ? null : value));
}

/** @param {unknown} v */
const isObject = (v) => typeof v === 'object' && v !== null && !Array.isArray(v);

/** "1 item", "3 items". */
const count = (/** @type {number} */ n, /** @type {string} */ one) => n + ' ' + one + (n === 1 ? '' : 's');

/**
 * Whether `text` matches a schema's pattern, as ajv reads it (a Unicode RegExp); null when this
 * browser cannot read the pattern (then Gatehouse's check is the one that counts).
 * @param {string} pattern
 * @param {string} text
 * @returns {boolean | null}
 */
function matchesPattern(pattern, text) {
  try {
    return new RegExp(pattern, 'u').test(text);
  } catch {
    return null;
  }
}

/**
 * @param {JsonNode} node
 * @param {unknown} schema
 * @param {(string | number)[]} path
 * @param {Set<string>} unchecked
 * @returns {EditProblem[]}
 */
function validate(node, schema, path, unchecked) {
  if (schema === true || schema === undefined) return [];
  const where = pathText(path);
  if (schema === false) return [{ where, text: 'no value is allowed here' }];
  if (!isObject(schema)) return [];
  const s = /** @type {Record<string, any>} */ (schema); // a schema's keywords, each read as what it is
  /** @type {EditProblem[]} */
  const out = [];
  const fail = (/** @type {string} */ text) => out.push({ where, text });
  for (const k of Object.keys(s)) if (!ANNOTATIONS.has(k) && !CHECKED.has(k)) unchecked.add(k);
  const type = typeOf(node);
  if (s.type !== undefined) {
    const types = Array.isArray(s.type) ? s.type : [s.type];
    const ok = types.some((t) => t === type || (t === 'number' && type === 'integer'));
    if (!ok) {
      fail('must be ' + types.join(' or ') + ', not ' + (type === 'integer' ? 'number' : type));
      return out; // the other keywords say little about a value of the wrong type
    }
  }
  if (Array.isArray(s.enum) && !s.enum.some((/** @type {unknown} */ v) => sameValue(node, nodeOf(v))))
    fail('must be one of ' + s.enum.map((/** @type {unknown} */ v) => JSON.stringify(v)).join(', '));
  if (Object.hasOwn(s, 'const') && !sameValue(node, nodeOf(s.const))) fail('must be ' + JSON.stringify(s.const));
  if (node.t === 'obj') {
    const props = isObject(s.properties) ? s.properties : {};
    const patterns = isObject(s.patternProperties) ? Object.keys(s.patternProperties) : [];
    for (const name of Array.isArray(s.required) ? s.required : [])
      if (member(node, name) === undefined) fail('needs the key ' + JSON.stringify(name));
    if (typeof s.minProperties === 'number' && node.entries.length < s.minProperties)
      fail('needs at least ' + count(s.minProperties, 'key'));
    if (typeof s.maxProperties === 'number' && node.entries.length > s.maxProperties)
      fail('may have at most ' + count(s.maxProperties, 'key'));
    for (const [k, v] of node.entries) {
      let described = false;
      if (Object.hasOwn(props, k)) {
        described = true;
        out.push(...validate(v, props[k], [...path, k], unchecked));
      }
      for (const p of patterns) {
        const hit = matchesPattern(p, k);
        if (hit === null) unchecked.add('patternProperties');
        if (hit === true) {
          described = true;
          out.push(...validate(v, s.patternProperties[p], [...path, k], unchecked));
        }
      }
      if (!described && s.additionalProperties !== undefined) {
        if (s.additionalProperties === false)
          out.push({ where: pathText([...path, k]), text: 'is not an argument of this tool' });
        else out.push(...validate(v, s.additionalProperties, [...path, k], unchecked));
      }
    }
  }
  if (node.t === 'arr') {
    const prefix = Array.isArray(s.prefixItems) ? s.prefixItems : [];
    node.items.forEach((v, n) => {
      if (n < prefix.length) out.push(...validate(v, prefix[n], [...path, n], unchecked));
      else if (s.items !== undefined) {
        if (s.items === false) out.push({ where: pathText([...path, n]), text: 'no more items are allowed' });
        else out.push(...validate(v, s.items, [...path, n], unchecked));
      }
    });
    if (typeof s.minItems === 'number' && node.items.length < s.minItems)
      fail('needs at least ' + count(s.minItems, 'item'));
    if (typeof s.maxItems === 'number' && node.items.length > s.maxItems)
      fail('may have at most ' + count(s.maxItems, 'item'));
    if (s.uniqueItems === true && node.items.some((v, n) => node.items.slice(0, n).some((w) => sameValue(v, w))))
      fail('its items must all differ');
  }
  if (node.t === 'str') {
    const length = Array.from(node.v).length; // JSON Schema counts code points
    if (typeof s.minLength === 'number' && length < s.minLength)
      fail('needs at least ' + count(s.minLength, 'character'));
    if (typeof s.maxLength === 'number' && length > s.maxLength)
      fail('may have at most ' + count(s.maxLength, 'character'));
    if (typeof s.pattern === 'string') {
      const hit = matchesPattern(s.pattern, node.v);
      if (hit === null) unchecked.add('pattern');
      if (hit === false) fail('must match the pattern ' + s.pattern);
    }
  }
  if (node.t === 'num') {
    const n = Number(node.v);
    if (typeof s.minimum === 'number' && n < s.minimum) fail('must be at least ' + s.minimum);
    if (typeof s.maximum === 'number' && n > s.maximum) fail('must be at most ' + s.maximum);
    if (typeof s.exclusiveMinimum === 'number' && n <= s.exclusiveMinimum) fail('must be over ' + s.exclusiveMinimum);
    if (typeof s.exclusiveMaximum === 'number' && n >= s.exclusiveMaximum) fail('must be under ' + s.exclusiveMaximum);
    if (typeof s.multipleOf === 'number' && !Number.isInteger(Number((n / s.multipleOf).toPrecision(15))))
      fail('must be a multiple of ' + s.multipleOf);
  }
  if (Array.isArray(s.allOf)) for (const sub of s.allOf) out.push(...validate(node, sub, path, unchecked));
  if (
    Array.isArray(s.anyOf) &&
    !s.anyOf.some((/** @type {unknown} */ sub) => validate(node, sub, path, unchecked).length === 0)
  )
    fail('matches none of the alternatives the schema allows (anyOf)');
  if (Array.isArray(s.oneOf)) {
    const n = s.oneOf.filter((/** @type {unknown} */ sub) => validate(node, sub, path, unchecked).length === 0).length;
    if (n !== 1)
      fail(n === 0 ? 'matches none of the alternatives (oneOf)' : 'matches more than one alternative (oneOf)');
  }
  if (s.not !== undefined && validate(node, s.not, path, unchecked).length === 0)
    fail('matches what the schema rules out (not)');
  return out;
}

/**
 * What the edit changes, path by path, in the order of the original (then what it adds): a value
 * written differently is a change (`1.0` for `1` too: the amended call binds the text); objects and
 * arrays are compared member by member.
 * @param {JsonNode} before
 * @param {JsonNode} after
 * @returns {EditChange[]}
 */
function argsDiff(before, after) {
  /** @type {EditChange[]} */
  const out = [];
  /** @type {(a: JsonNode | undefined, b: JsonNode | undefined, path: (string | number)[]) => void} */
  const visit = (a, b, path) => {
    if (a !== undefined && b !== undefined && nodeText(a) === nodeText(b)) return;
    if (a?.t === 'obj' && b?.t === 'obj') {
      for (const [k, v] of a.entries) visit(v, member(b, k), [...path, k]);
      for (const [k, v] of b.entries) if (member(a, k) === undefined) visit(undefined, v, [...path, k]);
      return;
    }
    if (a?.t === 'arr' && b?.t === 'arr') {
      for (let n = 0; n < Math.max(a.items.length, b.items.length); n++) visit(a.items[n], b.items[n], [...path, n]);
      return;
    }
    out.push({ where: pathText(path), before: a, after: b });
  };
  visit(before, after, ['args']);
  return out;
}
