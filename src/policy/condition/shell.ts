// argv(s): the words of a shell command, as bash and a POSIX shell (dash) would both split them, or
// undefined wherever either would do more than split words and remove quotes. An allowlist written
// over argv() must never let through a second command, a redirection, a substitution or an
// expansion, so anything that could be one is refused rather than interpreted: `git status; rm -rf /`,
// `ls $(rm x)`, `ls | sh`, `cat a > /etc/passwd`, a second line, `X+=1 rm` and `time rm` are all
// undefined (undecidable), never words. One pass, linear in the length of the command.

/**
 * Unquoted, these make the shell do something other than split words (POSIX "Shell Command
 * Language", 2.2 Quoting and 2.6 Word Expansions): operators and separators `; & | < >`, expansions
 * `$` and backquote, grouping `( ) { }`, pathname expansion `* ? [`, comments `#`, and `!` (a
 * pipeline's negation, and history expansion in interactive shells). A tilde expands only at the
 * start of a word or after `=` or `:` (2.6.1), so `HEAD~1` is a word and `~/x` is refused.
 */
const UNQUOTED_SPECIAL = new Set([';', '&', '|', '<', '>', '$', '`', '(', ')', '{', '}', '*', '?', '[', '#', '!']);

/**
 * `NAME=value` before the command sets a variable for it (2.9.1), and so does bash's `NAME+=value`
 * (bash manual, 3.4 Shell Parameters): `PAGER=rm git log` and `git+=x rm -rf /` are refused, as
 * their first word is not the command that runs. Bash tests a name's letters byte by byte in the
 * locale, so in a single-byte locale some UTF-8 bytes are letters: any non-ASCII character counts.
 */
export const ASSIGNMENT = /^[A-Za-z_\u0080-\uffff][A-Za-z0-9_\u0080-\uffff]*\+?=/;

/**
 * Words that bash parses as reserved words (bash manual, 3.2 Shell Commands: `time` and `coproc`
 * run the words after them, `if`, `for`, `function` and the rest start or end a compound command)
 * and that POSIX reserves (2.4). As the first word, each makes the shell do something other than
 * run a command of that name: `time PAGER=x git log` runs `git log`. Refused however it is quoted
 * (`'time'` runs a program named time, but refusing is the fail-closed side). `! { } [[` hold a
 * character refused anyway.
 */
export const RESERVED_FIRST_WORDS = new Set([
  'case',
  'coproc',
  'do',
  'done',
  'elif',
  'else',
  'esac',
  'fi',
  'for',
  'function',
  'if',
  'in',
  'select',
  'then',
  'time',
  'until',
  'while',
  ']]',
]);

/** Inside double quotes these still expand (POSIX 2.2.3): `$`, backquote, and `!` in interactive shells. */
const DOUBLE_QUOTED_SPECIAL = new Set(['$', '`', '!']);

export function shellWords(command: string): string[] | undefined {
  const words: string[] = [];
  let word = '';
  let inWord = false;
  let i = 0;
  while (i < command.length) {
    const c = command[i]!; // i < length
    const code = c.charCodeAt(0);
    if (c === ' ' || c === '\t') {
      if (inWord) words.push(word);
      word = '';
      inWord = false;
      i++;
      continue;
    }
    // A newline separates commands; any other control character (NUL, CR, a vertical tab) is not
    // something an allowlist should have to reason about.
    if (code < 0x20 || code === 0x7f) return undefined;
    if (c === "'") {
      // Single quotes: everything literal up to the next single quote.
      const end = command.indexOf("'", i + 1);
      if (end < 0) return undefined;
      const quoted = command.slice(i + 1, end);
      if (hasControl(quoted)) return undefined;
      word += quoted;
      inWord = true;
      i = end + 1;
      continue;
    }
    if (c === '"') {
      i++;
      for (;;) {
        if (i >= command.length) return undefined; // unterminated
        const d = command[i]!; // i < length
        const dc = d.charCodeAt(0);
        if (d === '"') break;
        if (dc < 0x20 || dc === 0x7f || DOUBLE_QUOTED_SPECIAL.has(d)) return undefined;
        if (d === '\\') {
          const next = command[i + 1];
          if (next === undefined) return undefined;
          // Inside double quotes a backslash escapes only $ ` " \ (and a newline, refused above).
          if (next === '$' || next === '`' || next === '"' || next === '\\') {
            word += next;
            i += 2;
            continue;
          }
          if (next.charCodeAt(0) < 0x20) return undefined;
          word += d;
          i++;
          continue;
        }
        word += d;
        i++;
      }
      inWord = true;
      i++; // the closing quote
      continue;
    }
    if (c === '\\') {
      // Unquoted, a backslash makes the next character literal; before a newline it joins lines.
      const next = command[i + 1];
      if (next === undefined || next.charCodeAt(0) < 0x20 || next.charCodeAt(0) === 0x7f) return undefined;
      word += next;
      inWord = true;
      i += 2;
      continue;
    }
    if (UNQUOTED_SPECIAL.has(c)) return undefined;
    if (c === '~' && (!inWord || word.endsWith('=') || word.endsWith(':'))) return undefined;
    word += c;
    inWord = true;
    i++;
  }
  if (inWord) words.push(word);
  const first = words[0];
  if (first !== undefined && (ASSIGNMENT.test(first) || RESERVED_FIRST_WORDS.has(first))) return undefined;
  return words;
}

function hasControl(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const code = s.charCodeAt(i);
    if (code < 0x20 || code === 0x7f) return true;
  }
  return false;
}

/**
 * path(s): an absolute POSIX path with `.`, `..` and repeated `/` resolved, or undefined when it is
 * relative (empty included), when `..` would climb above `/`, or when it holds NUL. A trailing `/` is
 * kept (`/repo/` stays `/repo/`), as path.posix.normalize keeps it. Nothing else is rewritten: a
 * backslash or a `%2e` is an ordinary character, as it is to the kernel.
 */
/** A `//`, or a `.` or `..` segment: what normalizePath rewrites. */
const NEEDS_RESOLVING = /\/\/|\/\.\.?(?:\/|$)/;

export function normalizePath(p: string): string | undefined {
  if (p.length === 0 || p[0] !== '/' || p.includes('\0')) return undefined;
  if (!NEEDS_RESOLVING.test(p)) return p; // the common case: already normal
  const parts: string[] = [];
  for (const segment of p.split('/')) {
    if (segment === '' || segment === '.') continue;
    if (segment === '..') {
      if (parts.length === 0) return undefined;
      parts.pop();
      continue;
    }
    parts.push(segment);
  }
  const trailing = parts.length > 0 && p.endsWith('/');
  return `/${parts.join('/')}${trailing ? '/' : ''}`;
}
