// @ts-check
// The pure part of the operator page: what a card shows, from one approval of the API, as text runs
// (never HTML). No DOM, so test/http/ui.test.ts runs this very file in Node; page.js builds elements
// from the runs with textContent.
//
// What is shown must be what runs (docs/approvals.md, "The operator page"):
// - The API's JSON is read by parseExact into a tree that keeps each number's text as written and
//   each string as a string: a grant lets exactly these arguments run (the approval hash binds
//   them), and no in-band marker can make a string look like a number or the other way round.
// - Every character that can make a string look like another (controls, bidi controls, invisible
//   and format characters, spaces other than U+0020, look-alikes of ASCII letters and digits) is
//   shown as a visible \u escape and reported as a finding, which the card lists.
'use strict';

// ---- JSON, exactly as written ----------------------------------------------------------------------

/**
 * A JSON value as written: numbers keep their text.
 * @typedef {{ t: 'obj', entries: [string, JsonNode][] } | { t: 'arr', items: JsonNode[] } | { t: 'str', v: string } | { t: 'num', v: string } | { t: 'lit', v: string }} JsonNode
 */
/**
 * A run of text to show: as it is, or (`esc`) a character written as an escape, `title` saying what it is.
 * @typedef {{ text: string, esc?: boolean, title?: string }} Part
 */
/** @typedef {{ kind: string | null, text: string }} CharFinding what inspect() found in one string (kind null: shown escaped, not reported) */
/** @typedef {{ where: string, kind: string | null, text: string }} Finding */
/**
 * A value of the call as shown: `fold`, for a string over FOLD_CHARS, is its first lines (its findings
 * are the whole string's) and its size; the page shows the fold with "show all", the whole one click away.
 * A `group` is an object or array inside the arguments, its own tokens in `tokens`, folded like a
 * long string when its text is over FOLD_CHARS and FOLD_LINES lines.
 * @typedef {{ k: string, text?: string, parts?: Part[], fold?: Fold, tokens?: Token[] }} Token
 */
/** @typedef {{ parts: Part[], size: string }} Fold */

/**
 * Parse JSON text into a tree: {t:'obj', entries:[[key, node]…]}, {t:'arr', items}, {t:'str', v},
 * {t:'num', v: the number's text}, {t:'lit', v:'true'|'false'|'null'}. Throws on anything else.
 */
const NUMBER = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;

/**
 * @param {string} text
 * @returns {JsonNode}
 */
function parseExact(text) {
  let i = 0;
  /** @type {(what: string) => never} */
  const fail = (what) => {
    throw new SyntaxError('JSON: ' + what + ' at ' + i);
  };
  const ws = () => {
    while (i < text.length && ' \t\n\r'.includes(text[i])) i++;
  };
  /** @returns {JsonNode} */
  const value = () => {
    ws();
    const c = text[i];
    if (c === '{') {
      i++;
      /** @type {[string, JsonNode][]} */
      const entries = [];
      ws();
      if (text[i] === '}') {
        i++;
        return { t: 'obj', entries };
      }
      for (;;) {
        ws();
        if (text[i] !== '"') fail('a key expected');
        const key = string();
        ws();
        if (text[i++] !== ':') fail('":" expected');
        entries.push([key, value()]);
        ws();
        const next = text[i++];
        if (next === '}') return { t: 'obj', entries };
        if (next !== ',') fail('"," or "}" expected');
      }
    }
    if (c === '[') {
      i++;
      /** @type {JsonNode[]} */
      const items = [];
      ws();
      if (text[i] === ']') {
        i++;
        return { t: 'arr', items };
      }
      for (;;) {
        items.push(value());
        ws();
        const next = text[i++];
        if (next === ']') return { t: 'arr', items };
        if (next !== ',') fail('"," or "]" expected');
      }
    }
    if (c === '"') return { t: 'str', v: string() };
    NUMBER.lastIndex = i;
    const number = NUMBER.exec(text);
    if (number !== null) {
      i += number[0].length;
      return { t: 'num', v: number[0] };
    }
    for (const lit of ['true', 'false', 'null']) {
      if (text.startsWith(lit, i)) {
        i += lit.length;
        return { t: 'lit', v: lit };
      }
    }
    return fail('a value expected');
  };
  /** @type {Record<string, string>} */
  const ESCAPES = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };
  /** @returns {string} */
  const string = () => {
    i++; // the opening quote
    let out = '';
    for (;;) {
      const c = text[i++];
      if (c === undefined) fail('unterminated string');
      if (c === '"') return out;
      if (c !== '\\') {
        out += c;
        continue;
      }
      const e = text[i++];
      if (e === 'u') {
        const hex = text.slice(i, i + 4);
        if (!/^[0-9a-fA-F]{4}$/.test(hex)) fail('bad \\u escape');
        out += String.fromCharCode(Number.parseInt(hex, 16)); // lone surrogates kept as they are
        i += 4;
      } else if (Object.hasOwn(ESCAPES, e)) out += ESCAPES[e];
      else fail('bad escape');
    }
  };
  const tree = value();
  ws();
  if (i !== text.length) fail('trailing text');
  return tree;
}

/**
 * The member `key` of an object node, or undefined.
 * @param {JsonNode | undefined} node
 * @param {string} key
 * @returns {JsonNode | undefined}
 */
function member(node, key) {
  if (node?.t !== 'obj') return undefined;
  for (const [k, v] of node.entries) if (k === key) return v;
  return undefined;
}

/**
 * A string member as a JS string ('' when absent or not a string).
 * @param {JsonNode | undefined} node
 * @param {string} key
 * @returns {string}
 */
function memberText(node, key) {
  const v = member(node, key);
  return v && v.t === 'str' ? v.v : '';
}

/**
 * Compact JSON text of a node, numbers as written: equal texts are equal values.
 * @param {JsonNode} node
 * @returns {string}
 */
function nodeText(node) {
  switch (node.t) {
    case 'obj':
      return '{' + node.entries.map(([k, v]) => JSON.stringify(k) + ':' + nodeText(v)).join(',') + '}';
    case 'arr':
      return '[' + node.items.map(nodeText).join(',') + ']';
    case 'str':
      return JSON.stringify(node.v);
    default:
      return node.v;
  }
}

// ---- characters that hide or pose as others -----------------------------------------------------------

/** @type {Record<number, string>} */
const CHARACTER_NAMES = {
  0: 'NULL',
  160: 'NO-BREAK SPACE',
  173: 'SOFT HYPHEN',
  847: 'COMBINING GRAPHEME JOINER',
  1564: 'ARABIC LETTER MARK',
  4447: 'HANGUL CHOSEONG FILLER',
  4448: 'HANGUL JUNGSEONG FILLER',
  6158: 'MONGOLIAN VOWEL SEPARATOR',
  8203: 'ZERO WIDTH SPACE',
  8204: 'ZERO WIDTH NON-JOINER',
  8205: 'ZERO WIDTH JOINER',
  8206: 'LEFT-TO-RIGHT MARK',
  8207: 'RIGHT-TO-LEFT MARK',
  8232: 'LINE SEPARATOR',
  8233: 'PARAGRAPH SEPARATOR',
  8234: 'LEFT-TO-RIGHT EMBEDDING',
  8235: 'RIGHT-TO-LEFT EMBEDDING',
  8236: 'POP DIRECTIONAL FORMATTING',
  8237: 'LEFT-TO-RIGHT OVERRIDE',
  8238: 'RIGHT-TO-LEFT OVERRIDE',
  8239: 'NARROW NO-BREAK SPACE',
  8287: 'MEDIUM MATHEMATICAL SPACE',
  8288: 'WORD JOINER',
  8294: 'LEFT-TO-RIGHT ISOLATE',
  8295: 'RIGHT-TO-LEFT ISOLATE',
  8296: 'FIRST STRONG ISOLATE',
  8297: 'POP DIRECTIONAL ISOLATE',
  10240: 'BRAILLE PATTERN BLANK',
  12288: 'IDEOGRAPHIC SPACE',
  12644: 'HANGUL FILLER',
  65279: 'ZERO WIDTH NO-BREAK SPACE (BOM)',
  65440: 'HALFWIDTH HANGUL FILLER',
  65532: 'OBJECT REPLACEMENT CHARACTER',
  65533: 'REPLACEMENT CHARACTER',
};

// Letters of other scripts (and a few Latin ones) drawn like an ASCII letter: a subset of Unicode's
// confusables (UTS #39, https://www.unicode.org/reports/tr39/), the letters that pass for ASCII in
// common fonts. Each maps to the ASCII letter it looks like.
const LOOKALIKES = (() => {
  /** @type {Record<string, string>} */
  const table = {};
  /** @type {(chars: string, latin: string) => void} */
  const add = (chars, latin) => {
    for (let k = 0; k < chars.length; k++) table[chars[k]] = latin[k];
  };
  add('аеорсухѕіјһԁԛԝӏүвкмнт', 'aeopcyxsijhdqwlybkmht'); // Cyrillic small
  add('АВЕКМНОРСТХУЅІЈԚԜҮӀ', 'ABEKMHOPCTXYSIJQWYI'); // Cyrillic capital
  add('ΑΒΕΖΗΙΚΜΝΟΡΤΥΧ', 'ABEZHIKMNOPTYX'); // Greek capital
  add('οαικνρυϲϳ', 'oaikvpucj'); // Greek small
  add('օսհոզ', 'ouhnq'); // Armenian
  add('ᎪᏴᏟᎬᎻᎫᏦᎷᏢᏚᎢᏔᏃ', 'ABCEHJKMPSTWZ'); // Cherokee
  add('ıɩɑɡǀ', 'iiagl'); // Latin letters that pass for others
  return table;
})();

const SCRIPTS = ['Latin', 'Cyrillic', 'Greek', 'Armenian', 'Cherokee'];
const scriptOf = (/** @type {string} */ ch) =>
  SCRIPTS.find((s) => new RegExp('\\p{Script=' + s + '}', 'u').test(ch)) || 'another script';

const BIDI_CONTROLS = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/u;
// Invisible or blank: format characters, default-ignorable code points, separators, spaces other than
// U+0020, private use, unassigned, noncharacters, and characters drawn as nothing.
const INVISIBLE =
  /[\p{Cf}\p{Default_Ignorable_Code_Point}\p{Zl}\p{Zp}\p{Co}\p{Cn}\p{Noncharacter_Code_Point}\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000\u2800\u115f\u1160\u3164\uffa0\ufffc]/u;
const CONTROL = /\p{Cc}/u;
const SURROGATE = /\p{Cs}/u;
const MARK = /\p{M}/u;
const WORD_CHAR = /[\p{L}\p{M}\p{N}]/u;
const LETTER = /\p{L}/u;
const ASCII_ALNUM = /[A-Za-z0-9]/;
const RTL =
  /[\p{Script=Hebrew}\p{Script=Arabic}\p{Script=Syriac}\p{Script=Thaana}\p{Script=Nko}\p{Script=Samaritan}\p{Script=Mandaic}\p{Script=Adlam}]/u;
/** @type {Record<string, string>} */
const SHORT_ESCAPES = { '\n': '\\n', '\t': '\\t', '\r': '\\r', '\b': '\\b', '\f': '\\f' };

/** @param {number} cp */
function hex(cp) {
  return cp.toString(16).toUpperCase().padStart(4, '0');
}

/**
 * How a character is written as an escape: \uXXXX, or \u{XXXXX} beyond the BMP.
 * @param {string} ch one code point
 * @returns {string}
 */
function escapeOf(ch) {
  if (Object.hasOwn(SHORT_ESCAPES, ch)) return SHORT_ESCAPES[ch];
  const cp = /** @type {number} */ (ch.codePointAt(0));
  return cp > 0xffff ? '\\u{' + hex(cp) + '}' : '\\u' + hex(cp);
}

/**
 * "U+202E RIGHT-TO-LEFT OVERRIDE", or the code point and what it is.
 * @param {string} ch one code point
 * @param {string} what
 */
function describe(ch, what) {
  const cp = /** @type {number} */ (ch.codePointAt(0));
  const name = CHARACTER_NAMES[cp];
  return 'U+' + hex(cp) + (name ? ' ' + name : '') + ' (' + what + ')';
}

/**
 * A string as runs of text to show: `{text}` as it is, or `{text: '\\u202E', esc: true, title}`
 * for a character that must be seen; and the findings, each `{kind, text}` (kind: bidi, invisible,
 * control, confusable, rtl). With `json`, quotes and backslashes are escaped as JSON writes them.
 * @param {string} s
 * @param {boolean} json
 * @returns {{ parts: Part[], findings: CharFinding[] }}
 */
function inspect(s, json) {
  const chars = Array.from(s); // code points; a lone surrogate stays one unit
  /** @type {(CharFinding | null)[]} */
  const escaped = new Array(chars.length).fill(null); // index → the finding's description
  /** @type {CharFinding[]} */
  const findings = [];
  // Look-alike letters: in a word that also holds ASCII letters or digits, or a word made only of
  // look-alikes (an all-Cyrillic "раура" reads as "paypa").
  for (let start = 0; start < chars.length; ) {
    if (!WORD_CHAR.test(/** @type {string} */ (chars[start]))) {
      start++;
      continue;
    }
    let end = start;
    while (end < chars.length && WORD_CHAR.test(/** @type {string} */ (chars[end]))) end++;
    const word = chars.slice(start, end);
    const ascii = word.some((c) => ASCII_ALNUM.test(c));
    const letters = word.filter((c) => LETTER.test(c));
    const allAlike = letters.length > 0 && letters.every((c) => Object.hasOwn(LOOKALIKES, c));
    if (ascii || allAlike) {
      for (let k = start; k < end; k++) {
        const c = /** @type {string} */ (chars[k]);
        if (Object.hasOwn(LOOKALIKES, c))
          escaped[k] = { kind: 'confusable', text: describe(c, 'looks like "' + LOOKALIKES[c] + '", ' + scriptOf(c)) };
      }
    }
    start = end;
  }
  chars.forEach((c, k) => {
    if (escaped[k] !== null) return;
    const cp = /** @type {number} */ (c.codePointAt(0));
    if (c === '\n' || c === '\t') escaped[k] = { kind: null, text: describe(c, c === '\n' ? 'a line break' : 'a tab') };
    else if (SURROGATE.test(c)) escaped[k] = { kind: 'control', text: describe(c, 'half of a character') };
    else if (CONTROL.test(c)) escaped[k] = { kind: 'control', text: describe(c, 'a control character') };
    else if (BIDI_CONTROLS.test(c))
      escaped[k] = { kind: 'bidi', text: describe(c, 'a bidi control: it reorders what is shown') };
    else if (INVISIBLE.test(c)) escaped[k] = { kind: 'invisible', text: describe(c, 'invisible, or drawn as a blank') };
    else if (
      MARK.test(c) &&
      (k === 0 || /** @type {number} */ (chars[k - 1].codePointAt(0)) < 0x80 || escaped[k - 1] !== null)
    ) {
      escaped[k] = { kind: 'confusable', text: describe(c, 'a combining mark on the character before it') };
    } else if (cp >= 0x80 && /\p{Nd}/u.test(c)) {
      escaped[k] = { kind: 'confusable', text: describe(c, 'a digit other than 0-9') };
    } else if (cp >= 0x80) {
      // Compatibility forms drawn like ASCII: fullwidth letters, mathematical letters, ligatures, superscripts.
      const folded = c.normalize('NFKC');
      if (folded !== c && /[!-~]/.test(folded))
        escaped[k] = { kind: 'confusable', text: describe(c, 'looks like "' + folded + '"') };
    }
  });
  /** @type {Part[]} */
  const parts = [];
  let plain = '';
  const flush = () => {
    if (plain !== '') parts.push({ text: plain });
    plain = '';
  };
  chars.forEach((c, k) => {
    const e = escaped[k];
    if (e !== null) {
      flush();
      parts.push({ text: escapeOf(c), esc: true, title: e.text });
      if (e.kind !== null) findings.push(e);
    } else if (json && (c === '"' || c === '\\')) plain += '\\' + c;
    else plain += c;
  });
  flush();
  if (chars.some((c, k) => escaped[k] === null && RTL.test(c)))
    findings.push({ kind: 'rtl', text: 'right-to-left letters: the order shown may differ from the order stored' });
  return { parts, findings };
}

/**
 * The text a person reads from runs (the textContent of what page.js builds).
 * @param {readonly Part[]} parts
 */
function partsText(parts) {
  return parts.map((p) => p.text).join('');
}

// ---- the arguments, as JSON with every string inspected -------------------------------------------

/**
 * Where a value is, as a person reads it: args.order, args.items[0], args["a b"].
 * @param {readonly (string | number)[]} path
 */
function pathText(path) {
  let out = '';
  for (const step of path) {
    if (typeof step === 'number') out += '[' + step + ']';
    else if (/^[A-Za-z_][A-Za-z0-9_]*$/.test(step)) out += (out === '' ? '' : '.') + step;
    else out += '["' + partsText(inspect(step, true).parts) + '"]';
  }
  return out;
}

/** Strings longer than this (characters) are folded to their first lines on the card. */
const FOLD_CHARS = 200;
/** A folded string shows at most this many of its lines. */
const FOLD_LINES = 3;

/**
 * The folded form of a long string: its first lines, at most FOLD_CHARS characters, escaped as
 * the whole is; null for a string short enough to show whole.
 * @param {string} s
 * @returns {Fold | null}
 */
function foldOf(s) {
  const chars = Array.from(s);
  if (chars.length <= FOLD_CHARS) return null;
  let end = FOLD_CHARS;
  for (let k = 0, lines = 0; k < end; k++) if (chars[k] === '\n' && ++lines === FOLD_LINES) end = k;
  const head = inspect(chars.slice(0, end).join(''), true);
  return { parts: [{ text: '"' }, ...head.parts, { text: '…' }], size: sizeText(utf8Bytes(s)) };
}

/** @param {string} s */
function utf8Bytes(s) {
  let n = 0;
  for (const c of s) {
    const cp = /** @type {number} */ (c.codePointAt(0));
    n += cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
  }
  return n;
}

/**
 * "0.4 KB", "58.6 KB", "1.2 MB".
 * @param {number} bytes
 */
function sizeText(bytes) {
  return bytes >= 1024 * 1024 ? (bytes / 1024 / 1024).toFixed(1) + ' MB' : (bytes / 1024).toFixed(1) + ' KB';
}

/**
 * A JSON node pretty-printed (two spaces, as JSON.stringify(v, null, 2)) as tokens: `{k:'punct',
 * text}`, `{k:'num'|'lit', text}`, `{k:'str'|'key', parts}` (the parts include the quotes). Every
 * string's findings go to `findings` with where they were.
 * @param {JsonNode} node
 * @param {(string | number)[]} path
 * @param {Finding[]} findings
 * @param {number} indent
 * @param {Token[]} [out]
 * @returns {Token[]}
 */
function jsonTokens(node, path, findings, indent, out) {
  const all = out || [];
  // A nested object or array is gathered apart, to be folded whole when it is long.
  const nested = path.length > 1 && (node.t === 'obj' || node.t === 'arr');
  /** @type {Token[]} */
  const tokens = nested ? [] : all;
  const pad = (/** @type {number} */ n) => '  '.repeat(n);
  /** @type {(s: string, k: string, where: (string | number)[]) => void} */
  const str = (s, k, where) => {
    const seen = inspect(s, true);
    for (const f of seen.findings)
      findings.push({ where: pathText(where) + (k === 'key' ? ' (a key)' : ''), kind: f.kind, text: f.text });
    /** @type {Token} */
    const token = { k, parts: [{ text: '"' }, ...seen.parts, { text: '"' }] };
    const fold = foldOf(s);
    if (fold !== null) token.fold = fold;
    tokens.push(token);
  };
  switch (node.t) {
    case 'obj':
      if (node.entries.length === 0) tokens.push({ k: 'punct', text: '{}' });
      else {
        tokens.push({ k: 'punct', text: '{\n' });
        node.entries.forEach(([key, v], n) => {
          tokens.push({ k: 'punct', text: pad(indent + 1) });
          str(key, 'key', path.concat(key));
          tokens.push({ k: 'punct', text: ': ' });
          jsonTokens(v, path.concat(key), findings, indent + 1, tokens);
          tokens.push({ k: 'punct', text: n < node.entries.length - 1 ? ',\n' : '\n' });
        });
        tokens.push({ k: 'punct', text: pad(indent) + '}' });
      }
      break;
    case 'arr':
      if (node.items.length === 0) tokens.push({ k: 'punct', text: '[]' });
      else {
        tokens.push({ k: 'punct', text: '[\n' });
        node.items.forEach((v, n) => {
          tokens.push({ k: 'punct', text: pad(indent + 1) });
          jsonTokens(v, path.concat(n), findings, indent + 1, tokens);
          tokens.push({ k: 'punct', text: n < node.items.length - 1 ? ',\n' : '\n' });
        });
        tokens.push({ k: 'punct', text: pad(indent) + ']' });
      }
      break;
    case 'str':
      str(node.v, 'str', path);
      break;
    case 'num':
      tokens.push({ k: 'num', text: node.v });
      break;
    default:
      tokens.push({ k: 'lit', text: node.v });
  }
  if (nested) {
    const fold = groupFold(tokens, node);
    if (fold === null) all.push(...tokens);
    else all.push({ k: 'group', tokens, fold });
  }
  return all;
}

/**
 * The text of tokens, as shown.
 * @param {readonly Token[]} tokens
 * @returns {string}
 */
function tokensText(tokens) {
  return tokens.map((t) => (t.tokens ? tokensText(t.tokens) : t.parts ? partsText(t.parts) : t.text)).join('');
}

/**
 * The runs of tokens, in order, as shown whole.
 * @param {readonly Token[]} tokens
 * @returns {Part[]}
 */
function tokensParts(tokens) {
  return tokens.flatMap((t) =>
    t.tokens ? tokensParts(t.tokens) : t.parts ? t.parts : [{ text: /** @type {string} */ (t.text) }],
  );
}

/**
 * The fold of a long object or array: its first FOLD_LINES lines, at most FOLD_CHARS characters
 * (an escape is never cut), and its size; null when it is short enough to show whole.
 * @param {readonly Token[]} tokens
 * @param {JsonNode} node
 * @returns {Fold | null}
 */
function groupFold(tokens, node) {
  const parts = tokensParts(tokens);
  const text = partsText(parts);
  if (Array.from(text).length <= FOLD_CHARS && text.split('\n').length <= FOLD_LINES + 1) return null;
  /** @type {Part[]} */
  const head = [];
  let chars = 0;
  let lines = 0;
  for (const p of parts) {
    if (p.esc) {
      if (chars + p.text.length > FOLD_CHARS) break;
      head.push(p);
      chars += p.text.length;
      continue;
    }
    let cut = '';
    for (const c of p.text) {
      if (chars >= FOLD_CHARS || (c === '\n' && ++lines === FOLD_LINES)) break;
      cut += c;
      chars++;
    }
    if (cut !== '') head.push({ text: cut });
    if (cut !== p.text) break;
  }
  head.push({ text: '…' });
  return { parts: head, size: sizeText(utf8Bytes(nodeText(node))) };
}

// ---- one card ----------------------------------------------------------------------------------------

/**
 * Everything a card shows of one approval (its exact tree, from GET /approvals/{id}): the call once,
 * every requirement, who asked, when, the expiry, the id, the policy versions, and every finding.
 * @param {JsonNode} tree
 */
function cardView(tree) {
  /** @type {Finding[]} */
  const findings = [];
  /** @type {(s: string, where: string) => Part[]} */
  const text = (s, where) => {
    const seen = inspect(s, false);
    for (const f of seen.findings) findings.push({ where, kind: f.kind, text: f.text });
    return seen.parts;
  };
  const tool = memberText(tree, 'tool');
  const asked = member(tree, 'args') || /** @type {JsonNode} */ ({ t: 'obj', entries: [] });
  // An operator amended the call (Edit and grant): the amended arguments are what a grant lets run,
  // so they are what the card shows as the call; the arguments the agent sent follow, marked so.
  const amended = amendedArgsOf(tree);
  const args = amended || asked;
  const context = member(tree, 'context');
  const argsTokens = jsonTokens(args, ['args'], findings, 0);
  const amendment = amended
    ? {
        by: text(memberText(tree, 'amended_by'), 'the amendment'),
        at: memberText(tree, 'amended_at'),
        asked: jsonTokens(asked, ['asked'], findings, 0),
        askedTree: asked,
        tree: amended,
      }
    : null;
  const contextTokens = context ? jsonTokens(context, ['context'], findings, 0) : null;
  // A tool's result held for review (POST /inspect): a tool's output, shown as data like the arguments.
  const result = member(tree, 'result');
  const resultTokens = result ? jsonTokens(result, ['result'], findings, 0) : null;
  const requester = member(tree, 'requester');
  const sub = memberText(requester, 'sub');
  const team = memberText(requester, 'team');
  const agent = memberText(requester, 'agent');
  const name = memberText(requester, 'name');
  /** @type {Part[]} */
  const nameParts = name ? text(name, 'the requester’s name') : [];
  /** @type {Part[]} */
  const whoParts = name
    ? [...nameParts, { text: ' (' }, ...text(sub, 'the requester'), { text: ')' }]
    : text(sub, 'the requester');
  /** @type {Part[]} */
  const requesterParts = [
    ...whoParts,
    ...(team ? [{ text: ' · team ' }, ...text(team, 'the team')] : []),
    ...(agent ? [{ text: ' · agent ' }, ...text(agent, 'the agent')] : []),
  ];
  const run = memberText(tree, 'run_id');
  const runParts = run ? text(run, 'the run id') : [{ text: '(none)' }];
  const requirements = requirementsOf(tree).map((r, n) => ({
    reason: text(memberText(r, 'reason'), 'requirement ' + (n + 1)),
    source:
      'policy ' +
      memberText(r, 'policy') +
      ', rule ' +
      memberText(r, 'rule') +
      ', kind ' +
      memberText(r, 'kind') +
      reviewText(reviewed(r, tree)),
  }));
  const policies = member(tree, 'policies');
  const policyText =
    policies && policies.t === 'arr'
      ? policies.items
          .map(
            (p) =>
              memberText(p, 'policy') +
              (memberText(p, 'version') ? ' v' + memberText(p, 'version') : '') +
              ' (' +
              memberText(p, 'digest').slice(0, 19) +
              '…)',
          )
          .join(', ')
      : '';
  // One finding per place and character: the list stays readable.
  const seen = new Set();
  const unique = findings.filter((f) => {
    const key = f.where + '|' + f.text;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
  const lead = leadOf(tree);
  return {
    id: memberText(tree, 'id'),
    status: memberText(tree, 'status'),
    hash: memberText(tree, 'hash'),
    fingerprint: fingerprintOf(tree),
    lead: lead.fields,
    leadText: lead.text,
    who: whoParts,
    team: team ? text(team, 'the team') : [],
    quorum: quorumOf(tree),
    grants: grantsOf(tree, findings),
    grantedBy: grantersOf(tree),
    question: questionOf(tree),
    tool,
    args: argsTokens,
    argsTree: args,
    amendment,
    context: contextTokens,
    result: resultTokens,
    requirements,
    unshown: unshownPaths(tree),
    requester: requesterParts,
    requesterSub: sub,
    run: runParts,
    createdAt: memberText(tree, 'created_at'),
    expiresAt: memberText(tree, 'expires_at'),
    policies: policyText,
    findings: unique,
  };
}

// The approval a runtime files itself after a crash (docs/spec.md section 5.4): no policy asked, so
// the card asks the runtime's question instead of saying why policies ask. Known by its kind and its
// one requirement, the runtime's (a file cannot name a rule `runtime#…`: rule ids hold no `#`).
const INTERRUPTED_QUESTION =
  'The agent’s runtime stopped (a crash) after this call was decided, and cannot tell whether it ran. ' +
  'Did it run before the crash? Grant to run it again; the policies decide it again before it runs. ' +
  'Deny if it already ran, or must not run again.';

/**
 * The question a card asks instead of the policies' reasons; null for an approval a policy asked.
 * @param {JsonNode} tree
 * @returns {string | null}
 */
function questionOf(tree) {
  const requirements = requirementsOf(tree);
  const only = requirements.length === 1 ? requirements[0] : undefined;
  return memberText(tree, 'kind') === 'interrupted_side_effect' &&
    only !== undefined &&
    memberText(only, 'policy') === 'runtime' &&
    memberText(only, 'rule') === 'runtime#interrupted_side_effect'
    ? INTERRUPTED_QUESTION
    : null;
}

/**
 * Every policy file that asked for this approval; an approval without the list has one.
 * @param {JsonNode} tree
 * @returns {JsonNode[]}
 */
function requirementsOf(tree) {
  const list = member(tree, 'requirements');
  if (list && list.t === 'arr' && list.items.length > 0) return list.items;
  return [tree];
}

/** @param {string[] | null} paths */
function reviewText(paths) {
  if (paths === null) return '; it reviews the whole call';
  return paths.length === 0 ? '; it picks no argument for review' : '; it reviews ' + paths.join(', ');
}

/**
 * The argument paths a requirement's shape picks for review; null when it shows the whole call.
 * @param {JsonNode} requirement
 * @param {JsonNode} tree
 * @returns {string[] | null}
 */
function reviewed(requirement, tree) {
  /** @type {Set<string>} */
  const paths = new Set();
  let whole = false;
  for (const name of ['capability', 'presentation']) {
    const view = member(requirement, name);
    if (view?.t !== 'obj') continue;
    if (isWholeCall(view, tree)) whole = true;
    else for (const [k] of view.entries) paths.add(k);
  }
  return whole ? null : [...paths].sort();
}

/**
 * @param {{ t: 'obj', entries: [string, JsonNode][] }} view
 * @param {JsonNode} tree
 */
function isWholeCall(view, tree) {
  if (view.entries.length !== 2) return false;
  const tool = member(view, 'tool');
  const args = member(view, 'args');
  return (
    !!tool &&
    tool.t === 'str' &&
    tool.v === memberText(tree, 'tool') &&
    !!args &&
    nodeText(args) === nodeText(member(tree, 'args') || { t: 'obj', entries: [] })
  );
}

// The argument paths (dotted, as a rule's approval shape names them) that no requirement's
// capability or presentation shows. A view that is the default shape {tool, args} shows every argument.
/**
 * @param {JsonNode} tree
 * @returns {string[]}
 */
function unshownPaths(tree) {
  const args = member(tree, 'args') || /** @type {JsonNode} */ ({ t: 'obj', entries: [] });
  /** @type {string[][]} */
  const shown = [];
  for (const r of requirementsOf(tree)) {
    for (const name of ['capability', 'presentation']) {
      const view = member(r, name);
      if (view?.t !== 'obj') continue;
      if (isWholeCall(view, tree)) shown.push([]);
      else for (const [path] of view.entries) shown.push(path.split('.'));
    }
  }
  /** @type {string[]} */
  const out = [];
  /** @type {(node: JsonNode) => [string, JsonNode][]} */
  const inner = (node) =>
    node.t === 'obj' ? node.entries : node.t === 'arr' ? node.items.map((v, n) => [String(n), v]) : [];
  /** @type {(node: JsonNode, path: string[]) => void} */
  const visit = (node, path) => {
    if (shown.some((s) => isPrefix(s, path))) return; // shown, or inside a shown value
    const children = inner(node);
    // Only part of this value is shown: look inside it. Otherwise none of it is.
    if (children.length > 0 && shown.some((s) => isPrefix(path, s)))
      for (const [k, v] of children) visit(v, path.concat(k));
    else out.push(path.join('.'));
  };
  // The API's args are an object; anything else fails here, as it always did.
  for (const [k, v] of /** @type {{ t: 'obj', entries: [string, JsonNode][] }} */ (args).entries) visit(v, [k]);
  return out;
}

/**
 * @param {readonly string[]} prefix
 * @param {readonly string[]} path
 */
function isPrefix(prefix, path) {
  if (prefix.length > path.length) return false;
  for (let k = 0; k < prefix.length; k++) if (prefix[k] !== path[k]) return false;
  return true;
}

// ---- what leads the card -------------------------------------------------------------------------------

/**
 * The arguments an operator's amendment put in place of the agent's (`amended_args`), or null.
 * @param {JsonNode} tree
 * @returns {JsonNode | null}
 */
function amendedArgsOf(tree) {
  const amended = member(tree, 'amended_args');
  return amended?.t === 'obj' ? amended : null;
}

/**
 * A node at a dotted argument path of the arguments ("refund.total"), or undefined.
 * @param {JsonNode | undefined} args
 * @param {string} path
 */
function atPath(args, path) {
  /** @type {JsonNode | undefined} */
  let node = args;
  for (const step of path.split('.')) node = member(node, step);
  return node;
}

/**
 * The money fields the approval's view names (GET /approvals/{id} `money`): path → its currency,
 * read from the annotation or from the argument it names ('' when that holds no currency code).
 * @param {JsonNode} tree
 * @returns {Map<string, string>}
 */
function moneyOfTree(tree) {
  /** @type {Map<string, string>} */
  const out = new Map();
  const list = member(tree, 'money');
  if (list?.t !== 'arr') return out;
  const args = amendedArgsOf(tree) || member(tree, 'args');
  for (const field of list.items) {
    const path = memberText(field, 'path');
    if (!path) continue;
    const fixed = memberText(field, 'currency');
    const from = memberText(field, 'currency_path');
    const code = fixed || (from ? atPath(args, from) : undefined);
    const text = typeof code === 'string' ? code : code?.t === 'str' ? code.v : '';
    out.set(path, isCurrencyCode(text) ? text : '');
  }
  return out;
}

/**
 * What leads the card: the fields the requirements present (else the ones they capture), each as
 * shown in the call (folded when long) or, for an amount, grouped with its currency; then every
 * other amount of the arguments. A requirement whose shape is the whole call adds no field: the
 * call follows the lead. `text`: the first field, for the queue's row.
 * @param {JsonNode} tree
 * @returns {{ fields: { label: string, tokens: Token[] | null, money: string | null }[], text: string }}
 */
function leadOf(tree) {
  const money = moneyOfTree(tree);
  const amended = amendedArgsOf(tree);
  const args = amended || member(tree, 'args');
  /** @type {Map<string, JsonNode>} */
  const picked = new Map();
  for (const r of requirementsOf(tree)) {
    for (const name of ['presentation', 'capability']) {
      const view = member(r, name);
      if (view?.t !== 'obj' || isWholeCall(view, tree)) continue;
      // Amended, a presented field shows the amended value (the shape named the agent's).
      for (const [path, value] of view.entries)
        if (!picked.has(path)) picked.set(path, (amended && atPath(amended, path)) || value);
      break; // the presentation when there is one; the capability only without it
    }
  }
  for (const path of money.keys()) {
    const value = atPath(args, path);
    if (!picked.has(path) && value !== undefined) picked.set(path, value);
  }
  /** @type {{ label: string, tokens: Token[] | null, money: string | null }[]} */
  const fields = [];
  const ignored = /** @type {Finding[]} */ ([]); // the call lists these strings' findings already
  for (const [path, value] of picked) {
    const currency = money.get(path);
    if (currency !== undefined && value.t === 'num')
      fields.push({
        label: path,
        tokens: null,
        money: currency ? formatMoney(value.v, currency) : value.v + ' (no currency code: ' + path + ')',
      });
    else fields.push({ label: path, tokens: jsonTokens(value, ['args', ...path.split('.')], ignored, 0), money: null });
  }
  const first = fields[0];
  const text =
    first === undefined
      ? ''
      : first.label +
        ' ' +
        (first.money !== null
          ? first.money
          : tokensText(
              /** @type {Token[]} */ (first.tokens).map((t) => (t.fold ? { k: t.k, parts: t.fold.parts } : t)),
            ));
  return { fields, text: text.length > 120 ? text.slice(0, 119) + '…' : text };
}

/**
 * How far the grants are: per requirement, who granted and how many must (`quorum`, 1 when the
 * server does not say), and the text a row shows ("1 of 2").
 * @param {JsonNode} tree
 * @returns {{ text: string, done: number, need: number }}
 */
function quorumOf(tree) {
  const status = memberText(tree, 'status');
  const granted = status === 'granted' || status === 'consumed';
  let done = 0;
  let need = 0;
  const parts = requirementsOf(tree).map((r) => {
    const q = member(r, 'quorum');
    const quorum = q?.t === 'num' ? Number(q.v) : 1;
    const list = member(r, 'granted');
    const n = granted ? quorum : list?.t === 'arr' ? Math.min(list.items.length, quorum) : 0;
    done += n;
    need += quorum;
    return n + ' of ' + quorum;
  });
  const text = parts.length <= 1 || parts.every((p) => p === parts[0]) ? parts[0] || '0 of 1' : parts.join(' · ');
  return { text, done, need };
}

/**
 * The grants so far (`grants: [{by, name, at, note}]`), as lines to show: "Ada (op-1), 12:03 UTC: note".
 * @param {JsonNode} tree
 * @param {Finding[]} findings
 * @returns {Part[][]}
 */
function grantsOf(tree, findings) {
  const list = member(tree, 'grants');
  if (list?.t !== 'arr') return [];
  return list.items.map((g) => {
    /** @type {(s: string, where: string) => Part[]} */
    const text = (s, where) => {
      const seen = inspect(s, false);
      for (const f of seen.findings) findings.push({ where, kind: f.kind, text: f.text });
      return seen.parts;
    };
    const by = memberText(g, 'by');
    const name = memberText(g, 'name');
    const note = memberText(g, 'note');
    return [
      ...(name
        ? [...text(name, 'a grant’s name'), { text: ' (' }, ...text(by, 'a grant'), { text: ')' }]
        : text(by, 'a grant')),
      { text: ', ' + absoluteTime(memberText(g, 'at')) },
      ...(note ? [{ text: ': ' }, ...text(note, 'a grant’s note')] : []),
    ];
  });
}

/**
 * Who granted so far, each by name when the grant carries one (else the `sub`), escapes shown: a queue row's list.
 * @param {JsonNode} tree
 * @returns {string[]}
 */
function grantersOf(tree) {
  const list = member(tree, 'grants');
  if (list?.t !== 'arr') return [];
  return list.items.map((g) => partsText(inspect(memberText(g, 'name') || memberText(g, 'by'), false).parts));
}

/**
 * What makes two renderings of an approval the same card: the call it binds (the hash), its grants
 * and any amendment. A decision is only sent from a card whose fingerprint is the approval's.
 * @param {JsonNode} tree
 */
function fingerprintOf(tree) {
  const part = (/** @type {string} */ key) => {
    const v = member(tree, key);
    return v === undefined ? '' : nodeText(v);
  };
  return [part('hash'), part('grants'), part('amended_at'), part('amended_args')].join('|');
}

// ---- times ---------------------------------------------------------------------------------------------

/**
 * A span of time as a person says it: "in 23 h 59 min", "4 min ago", "just now".
 * @param {number} deltaMs
 */
function relativeTime(deltaMs) {
  const s = Math.round(Math.abs(deltaMs) / 1000);
  if (s < 5) return deltaMs > 0 ? 'in a few seconds' : 'just now';
  let span;
  if (s < 60) span = s + ' s';
  else if (s < 3600) span = Math.floor(s / 60) + ' min';
  else if (s < 86400) {
    const m = Math.floor((s % 3600) / 60);
    span = Math.floor(s / 3600) + ' h' + (m > 0 ? ' ' + m + ' min' : '');
  } else {
    const h = Math.floor((s % 86400) / 3600);
    span = Math.floor(s / 86400) + ' d' + (h > 0 ? ' ' + h + ' h' : '');
  }
  return deltaMs >= 0 ? 'in ' + span : span + ' ago';
}

/**
 * An instant of the API as "2026-11-29 23:28:55 UTC": one reading wherever the operator is.
 * @param {string | null | undefined} iso '' when there is none
 */
function absoluteTime(iso) {
  return iso ? iso.replace('T', ' ').slice(0, 19) + ' UTC' : '';
}
