// Credentials inside text, found by what they look like rather than by the name of the key that
// holds them (docs/operations.md "Logs"): a bearer token, a JWT, a PEM
// private key, `NAME=value` or `NAME: value` with a secret-like NAME, a URL's password, and keys
// of a few providers by their documented prefixes. Pure: the decision log's redaction uses it, and
// a policy guard can.
//
// Every pattern runs in time linear in the text, on V8's backtracking engine too: each starts only
// at the start of a run of its characters (a lookbehind), each quantified class is followed by a
// character outside it, by nothing, or is bounded in length; no quantifier is nested. PEM blocks are paired in one pass over their markers rather
// than by a lazy `.*?` from every BEGIN, which an unterminated key repeated would make quadratic.
import { looksSecret } from './path.js';

export type CredentialKind =
  | 'private_key'
  | 'jwt'
  | 'bearer'
  | 'aws_access_key'
  | 'github_token'
  | 'slack_token'
  | 'stripe_key'
  | 'google_api_key'
  | 'openai_key'
  | 'anthropic_key'
  | 'url_password'
  | 'aws_secret_key'
  | 'named_secret';

/** A credential found in a text: `text.slice(start, end)` is the secret itself (not its name or scheme). */
export interface Credential {
  readonly kind: CredentialKind;
  readonly start: number;
  readonly end: number;
  /**
   * A `NAME=value` whose NAME is secret-like only loosely (`max_tokens`, `token_type`) or whose value
   * is a placeholder (`***`, `${VAR}`, `null`, too short): redacted from logs, not a guard's finding.
   */
  readonly weak?: true;
}

// Names of keys that carry credentials in HTTP-shaped data (`headers.Authorization`, `Cookie`) but
// are not on the condition language's list (src/policy/path.ts): secret-like names too.
const MORE_SECRET_WORDS = ['authorization', 'cookie', 'passwd', 'passphrase'];

/** Whether a key or variable name says its value is a secret: `password`, `api_key`, `AWS_SECRET_ACCESS_KEY`, `Authorization`… */
export function isSecretName(name: string): boolean {
  if (looksSecret(name)) return true;
  const norm = name.toLowerCase().replace(/[-_]/g, '');
  return MORE_SECRET_WORDS.some((w) => norm.includes(w));
}

interface Detector {
  readonly kind: CredentialKind;
  /** Flags `gd`: the secret is the last group that matched, else the whole match (secretSpan). */
  readonly pattern: RegExp;
  /** Text every match holds (one of them, or a match of it): most strings hold none, and a search for it costs less than the pattern. */
  readonly hints: readonly string[] | RegExp;
}

const DETECTORS: readonly Detector[] = [
  // A JWS or JWT: a base64url JSON header (`{"` is `eyJ`), a payload and a signature (empty for alg none).
  {
    kind: 'jwt',
    pattern: /(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*/dg,
    hints: ['eyJ'],
  },
  // RFC 6750 section 2.1: `Bearer` and a b64token; the scheme is case-insensitive (RFC 9110 section 11.1).
  { kind: 'bearer', pattern: /(?<![A-Za-z0-9_-])bearer[ \t]+([A-Za-z0-9._~+/-]{8,}=*)/dgi, hints: /bearer/i },
  {
    kind: 'aws_access_key',
    pattern: /(?<![A-Za-z0-9])(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Za-z0-9])/dg,
    hints: ['AKIA', 'ASIA', 'ABIA', 'ACCA'],
  },
  {
    kind: 'github_token',
    pattern: /(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})/dg,
    hints: ['gh', 'github_pat_'],
  },
  { kind: 'slack_token', pattern: /(?<![A-Za-z0-9_-])(?:xoxe\.)?xox[a-z]-[A-Za-z0-9-]{10,}/dg, hints: ['xox'] },
  // OpenAI (`sk-…`, `sk-proj-…`) and Anthropic (`sk-ant-…`) API keys: long, and holding a digit
  // (checked after the match), so a hyphenated word after `sk-` is not one.
  { kind: 'anthropic_key', pattern: /(?<![A-Za-z0-9_-])sk-ant-[A-Za-z0-9_-]{32,}/dg, hints: ['sk-ant-'] },
  { kind: 'openai_key', pattern: /(?<![A-Za-z0-9_-])sk-(?!ant-)[A-Za-z0-9_-]{32,}/dg, hints: ['sk-'] },
  {
    kind: 'stripe_key',
    pattern: /(?<![A-Za-z0-9_])[rs]k_(?:live|test)_[A-Za-z0-9]{10,}/dg,
    hints: ['k_live_', 'k_test_'],
  },
  { kind: 'google_api_key', pattern: /(?<![A-Za-z0-9_-])AIza[A-Za-z0-9_-]{35,}/dg, hints: ['AIza'] },
  // scheme://user:password@host: the password.
  {
    kind: 'url_password',
    pattern: /(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{0,31}:\/\/[^\s/?#@:]{0,256}:([^\s/?#@]{1,256})@/dg,
    hints: ['://'],
  },
];

// `NAME=value`, `NAME: value`, `"NAME": "value"`, `--NAME=value`: the NAME and the separator. The
// value is read by hand (namedSecrets), only after a secret-like NAME, so that a value is scanned
// once: a pattern reading it would read it again from every NAME inside a value that is not one.
const NAME_AND_SEPARATOR = /(?<![A-Za-z0-9_])([A-Za-z_][A-Za-z0-9_.-]{0,63})["']?[ \t]*[:=][ \t]*/g;
// An HTTP authentication scheme starting a value (`Authorization: Basic dXNlcjpw…`): the secret follows it.
const SCHEME = /(?:bearer|basic|token|bot|digest)[ \t]+/iy;
/** What ends an unquoted value: whitespace, a quote, and the separators of query strings and lists. */
const VALUE_END = /[\s"'&,;]/;

const PEM_BEGIN = /-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----/g;
const PEM_END = /-----END [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----/g;

/** Most specific first: where kinds overlap, the one named is the earlier in this list (the secrets guard reports by it too). */
export const CREDENTIAL_RANK: readonly CredentialKind[] = [
  'private_key',
  'jwt',
  'aws_access_key',
  'github_token',
  'slack_token',
  'stripe_key',
  'google_api_key',
  'anthropic_key',
  'openai_key',
  'bearer',
  'url_password',
  'aws_secret_key',
  'named_secret',
];

// Something every credential's text holds (a hint of each detector, a separator of NAME=value, a PEM
// marker): a string without any, most of them, is passed over after one search.
const ANY_HINT =
  /[:=]|eyJ|[Bb][Ee][Aa][Rr][Ee][Rr]|A[BKS]IA|ACCA|gh|github_pat_|xox|k_(?:live|test)_|AIza|sk-|-----BEGIN /;

/** The credentials in `text`, in order, not overlapping (overlapping finds are one, named by CREDENTIAL_RANK). */
export function findCredentials(text: string): Credential[] {
  if (!ANY_HINT.test(text)) return [];
  const found: Credential[] = [...privateKeys(text), ...namedSecrets(text)];
  for (const d of DETECTORS) {
    if (Array.isArray(d.hints) ? !d.hints.some((h) => text.includes(h)) : !(d.hints as RegExp).test(text)) continue;
    d.pattern.lastIndex = 0;
    for (let m = d.pattern.exec(text); m !== null; m = d.pattern.exec(text)) {
      const [start, end] = secretSpan(m);
      if ((d.kind === 'openai_key' || d.kind === 'anthropic_key') && !/[0-9]/.test(text.slice(start, end))) continue;
      if (end > start) found.push({ kind: d.kind, start, end });
    }
  }
  return merge(found);
}

/** `text` with each credential replaced by `[redacted:KIND]`; the rest kept as it was. */
export function redactCredentials(text: string): string {
  const found = findCredentials(text);
  if (found.length === 0) return text;
  let out = '';
  let at = 0;
  for (const c of found) {
    out += `${text.slice(at, c.start)}[redacted:${c.kind}]`;
    at = c.end;
  }
  return out + text.slice(at);
}

/** The span of the last group that matched (a detector's one group is its secret), else of the whole match. */
function secretSpan(m: RegExpExecArray): [number, number] {
  const indices = m.indices!; // the `d` flag
  for (let i = indices.length - 1; i >= 1; i--) {
    const span = indices[i];
    if (span !== undefined) return span;
  }
  return indices[0]!;
}

/**
 * PEM private keys, BEGIN to END, paired in one pass: each BEGIN with the first END after it; a
 * BEGIN with no END runs to the end of the text (a cut key is still a secret).
 */
function privateKeys(text: string): Credential[] {
  if (!text.includes('-----BEGIN ')) return [];
  const ends: { start: number; end: number }[] = [];
  PEM_END.lastIndex = 0;
  for (let m = PEM_END.exec(text); m !== null; m = PEM_END.exec(text))
    ends.push({ start: m.index, end: m.index + m[0].length });
  const out: Credential[] = [];
  let e = 0;
  let covered = 0;
  PEM_BEGIN.lastIndex = 0;
  for (let m = PEM_BEGIN.exec(text); m !== null; m = PEM_BEGIN.exec(text)) {
    if (m.index < covered) continue; // inside the block of an earlier BEGIN
    const after = m.index + m[0].length;
    while (e < ends.length && ends[e]!.start < after) e++;
    const end = e < ends.length ? ends[e]!.end : text.length;
    out.push({ kind: 'private_key', start: m.index, end });
    covered = end;
    PEM_BEGIN.lastIndex = Math.max(PEM_BEGIN.lastIndex, end);
  }
  return out;
}

/**
 * The value after each secret-like NAME (isSecretName): quoted, up to its closing quote or the
 * line's end; else up to whitespace, a quote, `&`, `,` or `;`.
 */
function namedSecrets(text: string): Credential[] {
  const out: Credential[] = [];
  if (!text.includes('=') && !text.includes(':')) return out;
  NAME_AND_SEPARATOR.lastIndex = 0;
  for (let m = NAME_AND_SEPARATOR.exec(text); m !== null; m = NAME_AND_SEPARATOR.exec(text)) {
    if (!isSecretName(m[1]!)) continue; // its value is scanned for NAMEs in turn
    let at = NAME_AND_SEPARATOR.lastIndex;
    SCHEME.lastIndex = at;
    if (SCHEME.test(text)) at = SCHEME.lastIndex;
    const quote = text[at];
    let end = at;
    if (quote === '"' || quote === "'") {
      end = ++at;
      while (end < text.length && text[end] !== quote && text[end] !== '\n' && text[end] !== '\r') end++;
    } else {
      while (end < text.length && !VALUE_END.test(text[end]!)) end++;
    }
    if (end > at) {
      const name = m[1]!;
      const kind = isAwsSecretName(name) ? 'aws_secret_key' : 'named_secret';
      const weak = !isAssignmentName(name) || isPlaceholder(text.slice(at, end));
      out.push(weak ? { kind, start: at, end, weak } : { kind, start: at, end });
    }
    NAME_AND_SEPARATOR.lastIndex = end;
  }
  return out;
}

// The endings of a NAME that assigns a credential, after `-`, `_` and `.` are removed and case is
// folded: `password`, `db_password`, `api_key`, `client_secret`, `access_token`, `Authorization`. A
// NAME that only contains such a word (`max_tokens`, `token_type`, `password_hint`) does not.
const ASSIGNMENT_ENDINGS = [
  'password',
  'passwd',
  'passphrase',
  'secret',
  'secretkey',
  'apikey',
  'accesskey',
  'privatekey',
  'signingkey',
  'token',
  'credential',
  'credentials',
  'authorization',
  'cookie',
];

/** Whether NAME in `NAME=value` says the value is a credential (stricter than isSecretName). */
export function isAssignmentName(name: string): boolean {
  const norm = name.toLowerCase().replace(/[-_.]/g, '');
  return ASSIGNMENT_ENDINGS.some((w) => norm.endsWith(w));
}

export function isAwsSecretName(name: string): boolean {
  const norm = name.toLowerCase().replace(/[-_.]/g, '');
  return norm.includes('secretaccesskey') || (norm.includes('aws') && norm.endsWith('secretkey'));
}

const PLACEHOLDER_WORDS = new Set([
  'null',
  'none',
  'nil',
  'true',
  'false',
  'undefined',
  'empty',
  'redacted',
  'hidden',
  'masked',
  'secret',
  'password',
  'string',
]);

/**
 * A value that stands for no credential: shorter than 4 characters, one character repeated (`****`),
 * a reference or template (`$VAR`, `${VAR}`, `{{ x }}`, `<token>`, `%VAR%`), a redaction marker
 * (`[REDACTED:…]`), or a word such as `null` or `redacted`.
 */
export function isPlaceholder(value: string): boolean {
  if (value.length < 4) return true;
  if (value.split('').every((c) => c === value[0])) return true;
  if (/^(?:\$|\{\{|<|%)/.test(value) || /^\[redacted/i.test(value)) return true;
  return PLACEHOLDER_WORDS.has(value.toLowerCase());
}

/** Sorted by start; overlapping or touching spans become one, named by the best-ranked kind among them. */
function merge(found: Credential[]): Credential[] {
  if (found.length <= 1) return found;
  found.sort((a, b) => a.start - b.start || b.end - a.end);
  const out: Credential[] = [];
  let cur = found[0]!;
  for (let i = 1; i < found.length; i++) {
    const next = found[i]!;
    if (next.start <= cur.end) {
      const kind = CREDENTIAL_RANK.indexOf(next.kind) < CREDENTIAL_RANK.indexOf(cur.kind) ? next.kind : cur.kind;
      // Weak only when every part is: a strong credential stays one inside a loose NAME=value.
      const weak = cur.weak === true && next.weak === true;
      cur = { kind, start: cur.start, end: Math.max(cur.end, next.end), ...(weak ? { weak } : {}) };
    } else {
      out.push(cur);
      cur = next;
    }
  }
  out.push(cur);
  return out;
}
