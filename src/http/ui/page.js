// @ts-check
// The operator's web page: the approvals queue and its history, live, through the REST API
// (docs/approvals.md, "The operator page"). card.js (loaded first) says what a card shows; this file
// puts it on the page with textContent only (never parsed as HTML), and decides nothing by itself:
// - a grant is two deliberate acts on the card it belongs to: Grant, then the confirmation that
//   repeats the exact call; Enter in a text field never decides (no form holds them);
// - a denial too: Deny, then the confirmation that repeats the call and takes the message for the
//   model; a second click of a double click never confirms;
// - a decision is sent only from a card that shows the approval as it stands: one that changed
//   since it was drawn (its hash, its grants, an amendment) is drawn again first, and the approval is
//   read again just before a decision is sent;
// - a card stays where it is once decided, with its outcome written on it, so nothing moves under
//   the pointer; new approvals join the end of the queue (oldest first);
// - the compact queue shows one row per approval; Enter opens a row's card and never decides;
// - while a decision is in flight its buttons are disabled.
'use strict';
/**
 * One of the page's elements that the script reads or sets: inputs, buttons, labels, text. Typed as
 * what those offer together (`value`, `disabled`, `htmlFor`, `hidden`): each is used as what it is.
 * @typedef {HTMLInputElement & HTMLLabelElement} Field
 */
/** @typedef {{ sub: string, team?: string | null, name?: string | null, can: { decide: boolean } }} Me GET /me's answer */
/**
 * An approval as the API sends it (a summary in lists and the stream, the whole one from
 * GET /approvals/{id}): the fields the page reads (docs/spec.md).
 * @typedef {object} Summary
 * @property {string} id
 * @property {string} status
 * @property {string} [tool]
 * @property {string} [kind]
 * @property {{ sub: string, name?: string | null }} requester
 * @property {string} [hash]
 * @property {string} [rule]
 * @property {string} [created_at]
 * @property {string | null} decided_by
 * @property {string | null} [decided_at]
 * @property {string | null} [decision_note]
 * @property {string | null} [decision_message]
 * @property {string} expires_at
 * @property {string | null} [consumed_at]
 */
/**
 * A card on the page and what it shows.
 * @typedef {object} Card
 * @property {string} id
 * @property {HTMLElement} el
 * @property {ReturnType<typeof cardView>} view
 * @property {Summary} summary
 * @property {boolean} busy
 * @property {boolean} stale read again: its decisions wait until it is drawn as the approval stands
 * @property {HTMLLIElement} row its row in the compact queue
 * @property {string} outcome
 * @property {number} checkedAt
 * @property {(name: string) => Field} f the card's element of that data-f name (every name asked for is in the template)
 * @property {unknown} schema the tool's argument schema (GET /approvals/{id} `args_schema`), undefined without one
 * @property {{ args: JsonNode | null, changes: EditChange[] }} edit the editor's arguments as last checked (null: not sendable)
 */
/**
 * An answer of the API: the status, the JSON (any: its shape is the route's, docs/spec.md) and the
 * text it was parsed from (for parseExact: numbers as written).
 * @typedef {{ status: number, ok: boolean, json: any, text: string }} Answer
 */
(() => {
  /** @type {(id: string) => Field} every id asked for here is in page.html */
  const $ = (id) => /** @type {Field} */ (document.getElementById(id));
  const tokenInput = $('token');
  const statusLine = $('status');
  const whoLine = $('who');
  const filters = $('filters');
  const liveLine = $('live');
  const noticeText = $('notice-text');
  const noticeShow = $('notice-show');
  const list = $('approvals');
  const moreButton = $('more');
  const moreNote = $('more-note');
  const template = /** @type {HTMLTemplateElement} */ (/** @type {HTMLElement} */ ($('card')));
  const dialog = /** @type {HTMLDialogElement} */ (/** @type {HTMLElement} */ ($('confirm')));
  const TOKEN_KEY = 'gatehouse-token';
  const CARD_PAGE = 25;
  const QUEUE_PAGE = 50; // rows are a line or two: a phone shows 300 in six pages
  const VIEW_KEY = 'gatehouse-view';
  const READERS = 6;
  const TITLE = 'Gatehouse approvals';

  let token = sessionStorage.getItem(TOKEN_KEY) || '';
  tokenInput.value = token;
  /** @type {Me | null} */
  let me = null;
  let generation = 0; // a new load makes the answers of older ones moot
  /** @type {string | null} */
  let cursor = null; // the next page of the current list, or null when it is all shown
  let loadedOnce = false;
  /** @type {AbortController | null} */
  let stream = null; // the AbortController of the open stream
  /** @type {ReturnType<typeof setTimeout> | null} */
  let streamRetry = null;
  // Reconnecting: doubles while it fails, capped at RETRY_MAX_MS, so a Gatehouse back after any
  // outage is live again within about 4 s (the cap, plus the connection).
  const RETRY_FIRST_MS = 500;
  const RETRY_MAX_MS = 4000;
  // A stream that says nothing for this long is dead (the server's heartbeat comes every 15 s).
  const SILENCE_MS = 40_000;
  let retryMs = RETRY_FIRST_MS;
  let clockSkewMs = 0; // the server's clock minus ours, from Date headers
  let arrived = 0; // approvals that match the list but wait behind "Show them"
  /** @type {ReturnType<typeof setTimeout> | null} */
  let countTimer = null;
  /** @type {Card | null} */
  let confirming = null; // the card the confirmation is open for
  /** @type {'grant' | 'deny' | 'amend'} */
  let confirmAction = 'grant';
  let confirmPrint = ''; // the fingerprint of the card the confirmation shows
  /** @type {JsonNode | null} */
  let confirmArgs = null; // an amend's arguments, as the confirmation shows them
  /** @type {'cards' | 'queue'} */
  let view = localStorage.getItem(VIEW_KEY) === 'queue' ? 'queue' : 'cards';
  /** @type {Card | null} */
  let opened = null; // in the queue view, the card shown instead of the rows
  const queue = /** @type {HTMLUListElement} */ (/** @type {HTMLElement} */ ($('queue')));
  const announcer = $('announce');
  const pageSize = () => (view === 'queue' ? QUEUE_PAGE : CARD_PAGE);
  /** @type {ReturnType<typeof filterValues> | null} */
  let applied = null; // the filters of the list shown (the form may hold edits not applied yet)
  /** @type {Map<string, Card>} */
  const cards = new Map(); // approval id → card state

  // ---- the one way to the API ----------------------------------------------------------------------

  // Every request goes through send(), which adds the caller's credentials: signed in with the
  // identity provider (session.js), the session's CSRF token, the browser adding the session cookie
  // (fetch's default credentials, same-origin); else the pasted bearer token.
  /**
   * @param {string} method
   * @param {string} path
   * @param {{ body?: unknown, text?: string, signal?: AbortSignal }} [options] `text`: a body already written as JSON
   */
  async function send(method, path, options) {
    const o = options || {};
    const session = gatehouseSession.current();
    /** @type {Record<string, string>} */
    const headers = session ? gatehouseSession.headers() : { authorization: 'Bearer ' + token };
    if (o.body !== undefined || o.text !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(path, {
      method,
      headers,
      body: o.text !== undefined ? o.text : o.body === undefined ? undefined : JSON.stringify(o.body),
      signal: o.signal,
      cache: 'no-store',
    });
    if (res.status === 401 && session) gatehouseSession.lost(); // it ended: session.js offers Sign in again
    return res;
  }

  /**
   * A JSON call: {status, ok, json, text}; the text is kept for parseExact (numbers as written).
   * @param {string} method
   * @param {string} path
   * @param {unknown} [body]
   * @param {string} [text] the body already written as JSON (an edited call's numbers as written)
   * @returns {Promise<Answer>}
   */
  async function api(method, path, body, text) {
    const res = await send(method, path, text === undefined ? { body } : { text });
    const answer = await res.text();
    const date = Date.parse(res.headers.get('date') || '');
    if (!Number.isNaN(date)) clockSkewMs = date + 500 - Date.now(); // Date has whole seconds: the middle of one
    let json = null;
    try {
      json = answer === '' ? null : JSON.parse(answer);
    } catch {
      json = null;
    }
    return { status: res.status, ok: res.ok, json, text: answer };
  }
  const serverNow = () => Date.now() + clockSkewMs;
  const problemText = (/** @type {Answer} */ r) => (r.json && (r.json.detail || r.json.title)) || 'HTTP ' + r.status;
  const say = (/** @type {string} */ text) => {
    statusLine.textContent = text;
  };

  // ---- building elements from card.js's runs ---------------------------------------------------------

  /**
   * @param {HTMLElement} el
   * @param {readonly Part[]} parts
   */
  function fillParts(el, parts) {
    el.textContent = '';
    for (const p of parts) {
      if (p.esc) {
        const span = document.createElement('span');
        span.className = 'esc';
        span.title = /** @type {string} */ (p.title); // an escaped run always has one
        span.textContent = p.text;
        el.append(span);
      } else el.append(document.createTextNode(p.text));
    }
  }
  /**
   * @param {HTMLElement} el
   * @param {readonly Token[]} tokens
   */
  function fillTokens(el, tokens) {
    el.textContent = '';
    for (const t of tokens) {
      if (t.k === 'punct') el.append(document.createTextNode(/** @type {string} */ (t.text)));
      else {
        const span = document.createElement('span');
        span.className = t.k;
        if (t.tokens) fillTokens(span, t.tokens);
        else if (t.parts) fillParts(span, t.parts);
        else span.textContent = /** @type {string} */ (t.text);
        el.append(span);
      }
    }
  }
  const plainOf = (/** @type {string | null | undefined} */ s) => partsText(inspect(s || '', false).parts);

  // ---- signing in -------------------------------------------------------------------------------------

  $('signin').addEventListener('submit', (event) => {
    event.preventDefault();
    token = tokenInput.value.trim();
    sessionStorage.setItem(TOKEN_KEY, token);
    start();
  });
  $('signout').addEventListener('click', () => {
    token = '';
    tokenInput.value = '';
    sessionStorage.removeItem(TOKEN_KEY);
    stop();
    whoLine.textContent = '';
    say('Signed out.');
  });

  async function start() {
    stop();
    say('Checking the token…');
    let r;
    try {
      r = await api('GET', '/me');
    } catch {
      say('Gatehouse cannot be reached: nothing is listed.');
      return;
    }
    if (r.status === 401) return say('This token was refused: it has expired or is not valid. Paste a current one.');
    if (!r.ok) return say('Signing in failed: ' + problemText(r));
    me = /** @type {Me} */ (r.json);
    const signedIn = gatehouseSession.current() !== null; // session.js says who, and signs out
    $('signout').hidden = signedIn;
    if (!signedIn)
      whoLine.textContent =
        'Signed in as ' +
        (me.name
          ? plainOf(me.name) + ' (' + plainOf(me.sub) + (me.team ? ', team ' + plainOf(me.team) : '') + ')'
          : plainOf(me.sub) + (me.team ? ' (team ' + plainOf(me.team) + ')' : '')) +
        '.';
    if (!me.can.decide) {
      say(
        (signedIn ? 'This account (' : 'This token (') +
          plainOf(me.sub) +
          ') cannot grant or deny: it does not have the approver role, and would see only its own approvals.' +
          (signedIn ? '' : ' Sign in with an approver token.'),
      );
      return;
    }
    filters.hidden = false;
    $('viewbar').hidden = false;
    setView(view);
    followLink();
    say('Loading…');
    openStream();
    loadStats(me);
  }

  // ---- how approvals went (GET /approvals/stats) -----------------------------------------------------------

  const WEEK_MS = 7 * 86_400_000;
  const seconds = (/** @type {number | null} */ s) =>
    s === null
      ? '–'
      : s < 60
        ? s.toFixed(1) + ' s'
        : s < 3600
          ? (s / 60).toFixed(1) + ' min'
          : (s / 3600).toFixed(1) + ' h';
  /** @type {Record<string, string>} */
  const POINTS_TO = {
    always_granted: 'always granted: a candidate for allow, with a cap',
    always_denied: 'always denied: a candidate for deny',
  };

  // `who`: the sign-in it was asked for; a sign-out or another sign-in meanwhile makes the answer moot.
  /** @param {Me} who */
  async function loadStats(who) {
    const since = new Date(serverNow() - WEEK_MS).toISOString();
    let r;
    try {
      r = await api('GET', '/approvals/stats?since=' + encodeURIComponent(since));
    } catch {
      return; // the queue says when Gatehouse cannot be reached
    }
    if (who !== me || !r.ok || r.json === null) return;
    const rows = $('stats-rows');
    rows.textContent = '';
    for (const s of r.json.rules) {
      const tr = document.createElement('tr');
      const cells = [
        plainOf(s.rule),
        plainOf(s.kind),
        String(s.filed),
        String(s.granted),
        String(s.denied),
        String(s.expired),
        String(s.cancelled),
        seconds(s.decide_p50_seconds) + ' / ' + seconds(s.decide_p90_seconds),
        s.fast_grants > 0 ? s.fast_grants + ' under ' + r.json.fast_grant_seconds + ' s' : '0',
        POINTS_TO[s.suggestion] || '',
      ];
      for (const text of cells) {
        const td = document.createElement('td');
        td.textContent = text;
        tr.append(td);
      }
      if (s.suggestion) tr.dataset.suggestion = s.suggestion;
      rows.append(tr);
    }
    $('stats-note').textContent =
      r.json.rules.length === 0
        ? 'No approvals were filed in the last 7 days.'
        : 'Fast grants were given within ' +
          r.json.fast_grant_seconds +
          ' s of the request: too fast to have been read.';
    $('stats').hidden = false;
  }

  // A link to one approval (a webhook's: /ui#approval=ID) shows that approval, whatever its status:
  // the filters say so, and Clear goes back to the queue.
  function followLink() {
    const linked = /^#approval=([0-9a-fA-F-]{36})$/.exec(location.hash);
    if (linked === null) return false;
    for (const id of ['f-tool', 'f-kind', 'f-requester']) $(id).value = '';
    $('f-status').value = '';
    $('f-q').value = linked[1].toLowerCase();
    return true;
  }
  window.addEventListener('hashchange', () => {
    if (me?.can.decide && followLink()) load();
  });

  function stop() {
    generation++;
    const open = stream;
    stream = null; // first: the stream's abort is then not taken for silence
    if (open) open.abort();
    clearTimeout(/** @type {number | undefined} */ (streamRetry)); // null is no timer, as the DOM allows
    streamRetry = null;
    retryMs = RETRY_FIRST_MS;
    loadedOnce = false;
    applied = null;
    me = null;
    cards.clear();
    list.textContent = '';
    queue.textContent = '';
    opened = null;
    announcer.textContent = '';
    filters.hidden = true;
    $('viewbar').hidden = true;
    queue.hidden = true;
    $('queue-help').hidden = true;
    $('back-part').hidden = true;
    $('stats').hidden = true;
    $('signout').hidden = true;
    moreButton.hidden = true;
    moreNote.textContent = '';
    liveLine.textContent = '';
    setNotice(0);
    document.title = TITLE;
    if (dialog.open) dialog.close();
  }

  // ---- live: the stream of changes -----------------------------------------------------------------

  async function openStream() {
    const abort = new AbortController();
    const previous = stream;
    stream = abort; // first: the previous stream's abort is then not taken for silence
    if (previous) previous.abort();
    // A connection a proxy or a sleeping laptop left half-open delivers nothing, not even the
    // heartbeat (nor, before it, the answer's head): after SILENCE_MS without a byte it is given up
    // and opened again.
    /** @type {ReturnType<typeof setTimeout> | null} */
    let silence = null;
    const listen = () => {
      if (silence !== null) clearTimeout(silence);
      silence = setTimeout(() => abort.abort(), SILENCE_MS);
    };
    const quiet = () => {
      if (silence !== null) clearTimeout(silence);
    };
    let silent = false;
    abort.signal.addEventListener('abort', () => {
      silent = stream === abort; // aborted by the watchdog, not by stop() or another stream
    });
    let res;
    listen();
    try {
      res = await send('GET', '/approvals/stream', { signal: abort.signal });
    } catch {
      quiet();
      if (!abort.signal.aborted || silent) streamLost();
      return;
    }
    if (!res.ok) {
      quiet();
      if (res.status === 401) {
        stop();
        return say('The token has expired: paste a current one to go on.');
      }
      return streamLost();
    }
    const reader = /** @type {ReadableStream<Uint8Array>} */ (res.body).getReader(); // an answer of the stream has a body
    const decoder = new TextDecoder();
    let buffer = '';
    try {
      for (;;) {
        listen();
        const { done, value } = await reader.read();
        if (done) break;
        buffer += decoder.decode(value, { stream: true });
        for (let end = buffer.indexOf('\n\n'); end !== -1; end = buffer.indexOf('\n\n')) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          let name = 'message';
          let data = '';
          for (const line of block.split('\n')) {
            if (line.startsWith('event: ')) name = line.slice(7);
            else if (line.startsWith('data: ')) data += line.slice(6);
          }
          if (data !== '') onStreamEvent(name, data);
        }
      }
    } catch {
      // the connection broke, or stop() or the watchdog aborted it
    }
    quiet();
    if (!abort.signal.aborted || silent) streamLost();
  }

  function streamLost() {
    liveLine.textContent = 'Live updates interrupted: reconnecting…';
    liveLine.className = 'live off';
    if (!loadedOnce) load();
    clearTimeout(/** @type {number | undefined} */ (streamRetry)); // null is no timer, as the DOM allows
    streamRetry = setTimeout(() => {
      streamRetry = null;
      openStream();
    }, retryMs);
    retryMs = Math.min(RETRY_MAX_MS, retryMs * 2);
  }

  // The browser says the network is back: try at once rather than at the next retry.
  window.addEventListener('online', () => {
    if (streamRetry !== null) {
      clearTimeout(streamRetry);
      streamRetry = null;
      openStream();
    }
  });

  /**
   * @param {string} name
   * @param {string} data
   */
  function onStreamEvent(name, data) {
    if (name === 'ready') {
      retryMs = RETRY_FIRST_MS;
      liveLine.textContent = 'Live: changes appear as they happen.';
      liveLine.className = 'live on';
      if (loadedOnce) refresh();
      else load();
    } else if (name === 'reset') refresh();
    else if (name === 'approval') {
      let summary;
      try {
        summary = JSON.parse(data);
      } catch {
        return;
      }
      onChange(summary);
    }
  }

  // ---- the list ----------------------------------------------------------------------------------------

  function filterValues() {
    return {
      status: $('f-status').value,
      tool: $('f-tool').value.trim(),
      kind: $('f-kind').value.trim(),
      requester: $('f-requester').value.trim(),
      q: $('f-q').value.trim(),
      mine: $('f-mine').checked,
    };
  }
  const oldestFirst = () => applied !== null && applied.status === 'pending';

  /**
   * @param {string | null} after
   * @param {string} [only] an approval's id: the list narrowed to it (is it still in this list?)
   */
  function listPath(after, only) {
    const f = /** @type {ReturnType<typeof filterValues>} */ (applied); // called once a list is applied
    const q = new URLSearchParams({ limit: String(pageSize()), count: 'true' });
    if (f.status === 'history') q.set('decided', 'true');
    else if (f.status !== '') q.set('status', f.status);
    if (f.status === 'pending') q.set('order', 'oldest');
    // Mine to answer: the approvals this approver may answer and has not granted yet.
    if (f.mine) q.set('eligible', 'true');
    for (const name of /** @type {const} */ (['tool', 'kind', 'requester', 'q']))
      if (f[name] !== '') q.set(name, f[name]);
    if (after) q.set('cursor', after);
    if (only) q.set('q', only);
    return '/approvals?' + q.toString();
  }

  /**
   * Whether an approval (a summary) belongs in the list the filters ask for, as far as a summary tells.
   * @param {Summary} s
   */
  function matches(s) {
    const f = applied;
    if (f === null) return false;
    if (f.status === 'history' ? s.decided_by === null : f.status !== '' && s.status !== f.status) return false;
    if (
      (f.tool && s.tool !== f.tool) ||
      (f.kind && s.kind !== f.kind) ||
      (f.requester && s.requester.sub !== f.requester)
    )
      return false;
    return true;
  }

  filters.addEventListener('submit', (event) => {
    event.preventDefault();
    load();
  });
  filters.addEventListener('reset', () => setTimeout(load, 0));
  moreButton.addEventListener('click', () => nextPage(generation));
  noticeShow.addEventListener('click', () => load());

  async function load() {
    const gen = ++generation;
    loadedOnce = true;
    applied = filterValues();
    cards.clear();
    list.textContent = '';
    queue.textContent = '';
    opened = null;
    cursor = null;
    setNotice(0);
    if (dialog.open) dialog.close();
    await nextPage(gen);
    scheduleCount();
  }

  /** @param {number} gen */
  async function nextPage(gen) {
    moreButton.disabled = true;
    list.setAttribute('aria-busy', 'true');
    let r;
    try {
      r = await api('GET', listPath(cursor));
    } catch {
      r = null;
    }
    if (gen !== generation) return;
    moreButton.disabled = false;
    if (r === null || !r.ok) {
      list.setAttribute('aria-busy', 'false');
      return say('Listing failed: ' + (r ? problemText(r) : 'Gatehouse cannot be reached') + '.');
    }
    cursor = r.json.next_cursor;
    const wholes = await readWhole(r.json.items.map((/** @type {Summary} */ s) => s.id));
    if (gen !== generation) return;
    for (const w of wholes) if (w !== null && !cards.has(w.json.id)) addCard(w);
    showTotals(r.json.count);
    list.setAttribute('aria-busy', 'false');
  }

  /** @param {number} count */
  function showTotals(count) {
    const f = /** @type {ReturnType<typeof filterValues>} */ (applied); // called once a list is applied
    const what =
      f.status === 'pending' ? 'pending ' : f.status === 'history' ? 'decided ' : f.status === '' ? '' : f.status + ' ';
    if (count === 0) say(f.status === 'pending' ? 'No pending approvals.' : 'No approvals match.');
    else
      say(
        count +
          ' ' +
          what +
          (count === 1 ? 'approval' : 'approvals') +
          (f.status === 'pending' ? ', oldest first.' : ', newest first.'),
      );
    moreButton.hidden = cursor === null;
    moreNote.textContent = cursor === null ? '' : cards.size + ' shown of ' + count + '.';
  }

  /**
   * The whole approvals (arguments included), a few reads at a time; null for one not visible.
   * @param {string[]} ids
   * @returns {Promise<({ json: Summary, tree: JsonNode } | null)[]>}
   */
  async function readWhole(ids) {
    /** @type {({ json: Summary, tree: JsonNode } | null)[]} */
    const out = new Array(ids.length).fill(null);
    let next = 0;
    const reader = async () => {
      while (next < ids.length) {
        const n = next++;
        try {
          const r = await api('GET', '/approvals/' + encodeURIComponent(ids[n]));
          if (r.ok) out[n] = { json: r.json, tree: parseExact(r.text) };
        } catch {
          // left out: the list says what it could show
        }
      }
    };
    await Promise.all(Array.from({ length: READERS }, reader));
    return out;
  }

  /** Back after the stream was interrupted: every live card read again, and what joined the queue. */
  async function refresh() {
    const gen = generation;
    const live = [...cards.values()].filter((c) => c.summary.status === 'pending' || c.summary.status === 'granted');
    const wholes = await readWhole(live.map((c) => c.id));
    if (gen !== generation) return;
    wholes.forEach((w, n) => {
      const c = live[n];
      if (w === null || cards.get(c.id) !== c) return;
      if (cardView(w.tree).fingerprint !== c.view.fingerprint) redraw(c, w);
      else setState(c, w.json);
    });
    if (cursor === null && oldestFirst()) {
      // The whole queue is shown: anything new belongs at its end.
      let after = null;
      do {
        /** @type {Answer | null} */
        const r = await api('GET', listPath(after)).catch(() => null);
        if (gen !== generation || r === null || !r.ok) return;
        for (const s of r.json.items) if (!cards.has(s.id)) await arrive(s, gen);
        after = r.json.next_cursor;
      } while (after !== null);
    }
    scheduleCount();
  }

  /** @param {Summary} summary */
  function onChange(summary) {
    const c = cards.get(summary.id);
    if (c) {
      // Still pending, yet it changed (a grant towards a quorum, an amendment): read it again, and
      // draw it again if what it binds changed. Its decisions wait until then.
      const changed = summary.status === 'pending' && c.summary.status === 'pending';
      setState(c, summary);
      if (changed) recheck(c);
    } else if (matches(summary)) {
      // Oldest first with the whole queue shown: the new one joins the end, below the pointer's
      // work (in the compact queue, where the sort places it). Otherwise it would go above or
      // between what is shown: it waits behind "Show them".
      if (oldestFirst() && cursor === null) arrive(summary, generation);
      else setNotice(arrived + 1);
    }
    scheduleCount();
  }

  /**
   * Reads the approval again; a card that no longer shows it as it stands is drawn again.
   * @param {Card} c
   */
  async function recheck(c) {
    c.stale = true;
    renderState(c);
    const gen = generation;
    const [w] = await readWhole([c.id]);
    if (gen !== generation || cards.get(c.id) !== c) return;
    c.stale = false;
    if (w !== null && cardView(w.tree).fingerprint !== c.view.fingerprint) redraw(c, w);
    else if (w !== null) setState(c, w.json);
    else renderState(c);
  }

  /**
   * @param {Summary} summary
   * @param {number} gen
   */
  async function arrive(summary, gen) {
    const [w] = await readWhole([summary.id]);
    if (gen !== generation || w === null || cards.has(w.json.id) || !matches(w.json)) return;
    // Mine to answer: the server says whether it is mine (a summary cannot).
    if (applied?.mine) {
      const mine = await api('GET', listPath(null, summary.id)).catch(() => null);
      if (gen !== generation || cards.has(w.json.id) || !mine?.ok) return;
      if (!mine.json.items.some((/** @type {Summary} */ s) => s.id === summary.id)) return;
    }
    const c = addCard(w);
    // Said once, politely: a screen reader hears it between what it is reading.
    announcer.textContent =
      'New approval: ' +
      c.view.tool +
      ', asked by ' +
      partsText(c.view.who) +
      (c.view.leadText ? ', ' + c.view.leadText : '') +
      '.';
  }

  /** @param {number} n */
  function setNotice(n) {
    arrived = n;
    noticeText.textContent =
      n === 0 ? '' : n + (n === 1 ? ' approval has' : ' approvals have') + ' arrived that this list does not show yet.';
    noticeShow.hidden = n === 0;
  }

  // The title carries the number of pending approvals (all of them, whatever the filters); the
  // status line, how many the list's filters match.
  function scheduleCount() {
    clearTimeout(/** @type {number | undefined} */ (countTimer)); // null is no timer, as the DOM allows
    countTimer = setTimeout(async () => {
      const gen = generation;
      if (applied === null) return;
      const [all, listed] = await Promise.all([
        api('GET', '/approvals?status=pending&limit=1&count=true').catch(() => null),
        api('GET', listPath(null).replace('limit=' + pageSize(), 'limit=1')).catch(() => null),
      ]);
      if (gen !== generation) return;
      if (all?.ok) document.title = '(' + all.json.count + ') ' + TITLE;
      // Not while a page is being read: the count would be said before its cards are shown.
      if (listed?.ok && list.getAttribute('aria-busy') !== 'true') showTotals(listed.json.count);
    }, 250);
  }

  // ---- one card --------------------------------------------------------------------------------------

  /** @type {Record<string, number>} */
  const RANK = { pending: 0, granted: 1 }; // every other status is final
  const rank = (/** @type {string} */ status) => (Object.hasOwn(RANK, status) ? RANK[status] : 2);

  /**
   * The tokens of a call (fillTokens) with every folded string shown folded, and a button that
   * shows it whole: the whole value is one click away, its escapes and findings the same.
   * @param {HTMLElement} el
   * @param {readonly Token[]} tokens
   */
  function fillCall(el, tokens) {
    fillTokens(el, tokens);
    foldIn(el, tokens);
  }

  /**
   * Folds what fillTokens put in `el` for `tokens`: long strings, and long objects and arrays
   * (whose own long strings are folded inside them too).
   * @param {HTMLElement} el
   * @param {readonly Token[]} tokens
   */
  function foldIn(el, tokens) {
    const values = tokens.filter((x) => x.k !== 'punct'); // each one span, in order
    [...el.children].forEach((span, n) => {
      const t = values[n];
      if (t?.tokens) foldIn(/** @type {HTMLElement} */ (span), t.tokens);
      if (!t?.fold) return;
      const whole = /** @type {HTMLElement} */ (span);
      const folded = document.createElement('span');
      folded.className = whole.className + ' folded';
      fillParts(folded, t.fold.parts);
      const more = document.createElement('button');
      more.type = 'button';
      more.className = 'show-all';
      more.textContent = 'show all (' + t.fold.size + ')';
      more.addEventListener('click', () => {
        folded.replaceWith(whole);
        more.remove();
      });
      whole.replaceWith(folded, ' ', more);
    });
  }

  /**
   * The lead's fields: label, then the value (an amount grouped with its currency, else the value
   * as the call shows it, folded when long).
   * @param {HTMLElement} dl
   * @param {ReturnType<typeof cardView>['lead']} fields
   */
  function fillLead(dl, fields) {
    dl.textContent = '';
    dl.hidden = fields.length === 0;
    for (const field of fields) {
      const dt = document.createElement('dt');
      dt.textContent = field.label;
      const dd = document.createElement('dd');
      if (field.money !== null) {
        dd.className = 'money';
        dd.textContent = field.money;
      } else {
        const code = document.createElement('code');
        fillCall(code, /** @type {Token[]} */ (field.tokens));
        dd.append(code);
      }
      dl.append(dt, dd);
    }
  }

  /**
   * A card (and its row in the compact queue) for an approval, not yet on the page.
   * @param {{ json: Summary, tree: JsonNode }} whole
   * @returns {Card}
   */
  function buildCard(whole) {
    const view = cardView(whole.tree);
    // page.html's card template: one element, holding every data-f name asked for below.
    const node = /** @type {HTMLElement} */ (
      /** @type {Element} */ (template.content.firstElementChild).cloneNode(true)
    );
    const f = (/** @type {string} */ name) => /** @type {Field} */ (node.querySelector('[data-f="' + name + '"]'));
    const id = whole.json.id;
    const row = document.createElement('li');
    /** @type {Card} */
    const c = {
      id,
      el: node,
      view,
      summary: whole.json,
      busy: false,
      stale: false,
      row,
      outcome: '',
      checkedAt: 0,
      f,
      schema: /** @type {{ args_schema?: unknown }} */ (whole.json).args_schema,
      edit: { args: null, changes: [] },
    };
    const headingId = 'card-' + id;
    f('heading').id = headingId;
    f('heading').tabIndex = -1; // focused when the queue opens this card
    node.setAttribute('aria-labelledby', headingId);
    node.dataset.id = id;
    f('tool').textContent = view.tool;
    f('toolname').textContent = view.tool;
    fillCall(f('args'), view.args);
    if (view.context) {
      fillCall(f('context'), view.context);
      f('context-part').hidden = false;
    }
    // A tool's result held for review: the call already ran; the grant hands its output on.
    if (view.result) {
      f('call-title').textContent = 'The call that ran, and its output a grant hands on, once';
      fillTokens(f('output'), view.result);
      f('output-part').hidden = false;
      f('why-title').textContent = 'Why the policies hold this output';
    }
    // What leads: the presented fields and the amounts, who asked, why, and the grants so far.
    fillLead(f('lead-fields'), view.lead);
    fillParts(f('lead-who'), view.who);
    fillParts(f('lead-team'), view.team.length > 0 ? [{ text: ', team ' }, ...view.team] : []);
    f('lead-why').textContent = view.requirements.map((r) => partsText(r.reason)).join(' · ');
    if (view.grants.length > 0) {
      f('lead-grants').hidden = false;
      f('lead-grants').textContent =
        'Granted ' + view.quorum.text + ' so far, by ' + view.grants.map((g) => partsText(g)).join('; ') + '.';
    }
    // Amended by an operator: the call shown is the amended one; what changed, and the agent's call after it.
    if (view.amendment !== null) {
      const a = view.amendment;
      f('amended-part').hidden = false;
      f('amended-by').textContent =
        'Amended by ' +
        partsText(a.by) +
        ' at ' +
        absoluteTime(a.at) +
        ': a grant lets this edited call run instead of the one the agent sent. What changed:';
      fillDiff(f('amended-diff'), argsDiff(a.askedTree, a.tree));
      fillCall(f('asked-args'), a.asked);
      f('asked-part').hidden = false;
    }
    f('to-call').setAttribute('aria-label', 'The full call of approval ' + id + ', exactly as it runs');
    f('to-call').addEventListener('click', () => {
      f('call').scrollIntoView({ block: 'start' });
      f('call').focus({ preventScroll: true });
    });
    if (view.unshown.length > 0) {
      f('unshown').hidden = false;
      f('unshown').textContent =
        'No requirement picks these arguments for review, but the grant covers them too: ' +
        view.unshown.join(', ') +
        '.';
    }
    // A runtime's own approval (a call a crash interrupted) asks its question instead of the policies' reasons.
    if (view.question !== null) {
      f('why-title').textContent = 'What the runtime asks';
      f('question').textContent = view.question;
      f('question').hidden = false;
      f('requirements').hidden = true;
      f('lead-why').textContent = view.question;
    }
    for (const r of view.requirements) {
      const li = document.createElement('li');
      const reason = document.createElement('span');
      reason.className = 'reason';
      fillParts(reason, r.reason);
      const source = document.createElement('span');
      source.className = 'source';
      source.textContent = ' (' + r.source + ')';
      li.append(reason, source);
      f('requirements').append(li);
    }
    fillParts(f('requester'), view.requester);
    fillParts(f('run'), view.run);
    f('created').textContent = absoluteTime(view.createdAt);
    f('id').textContent = id;
    f('policies').textContent = view.policies;
    if (view.findings.length > 0) {
      f('flags').hidden = false;
      f('warn').hidden = false;
      f('warn').textContent =
        view.findings.length + (view.findings.length === 1 ? ' character to check' : ' characters to check');
      for (const finding of view.findings) {
        const li = document.createElement('li');
        li.textContent = finding.where + ': ' + finding.text;
        f('findings').append(li);
      }
    }
    // Labels and names that say which approval each control decides.
    const who = partsText(view.requester);
    for (const [name, label] of [
      ['note', 'note-label'],
      ['message', 'message-label'],
    ]) {
      f(name).id = name + '-' + id;
      f(label).htmlFor = name + '-' + id;
    }
    f('grant').setAttribute(
      'aria-label',
      'Grant approval ' + id + ' (' + view.tool + ', asked by ' + who + '): opens a confirmation',
    );
    f('deny').setAttribute(
      'aria-label',
      'Deny approval ' + id + ' (' + view.tool + ', asked by ' + who + '): opens a confirmation',
    );
    f('grant').addEventListener('click', () => openConfirm(c, 'grant'));
    f('deny').addEventListener('click', () => openConfirm(c, 'deny'));
    // Edit and grant: for a call (a result held for review has no arguments to change).
    // Neither a result's review nor a runtime's crash approval can be amended (the server refuses both).
    f('edit').hidden = view.result !== null || view.question !== null;
    f('edit').setAttribute('aria-label', 'Edit the arguments of approval ' + id + ' (' + view.tool + '), then grant');
    f('edit-args').id = 'edit-' + id;
    f('edit-label').htmlFor = 'edit-' + id;
    f('edit-label').textContent = 'Arguments of ' + view.tool + ' (JSON)';
    f('edit').addEventListener('click', () => openEditor(c));
    f('edit-args').addEventListener('input', () => checkEdit(c));
    f('edit-discard').addEventListener('click', () => {
      f('editor').hidden = true;
      f('edit-args').value = '';
      f('edit').focus();
    });
    f('edit-grant').addEventListener('click', () => openConfirm(c, 'amend'));
    buildRow(c);
    return c;
  }

  /**
   * Puts a new card on the page: at the end of the cards, and in the queue where the sort places it.
   * @param {{ json: Summary, tree: JsonNode }} whole
   */
  function addCard(whole) {
    const c = buildCard(whole);
    cards.set(c.id, c);
    c.el.hidden = view === 'queue' && opened !== c;
    list.append(c.el);
    placeRow(c);
    renderState(c);
    tickCard(c, serverNow());
    return c;
  }

  /**
   * Draws a card again in place, as the approval now stands (it changed since it was drawn): what
   * the operator typed is kept, and the card says why it changed under them.
   * @param {Card} old
   * @param {{ json: Summary, tree: JsonNode }} whole
   * @param {string} [outcome] what the card says (else: that it changed under the operator)
   */
  function redraw(old, whole, outcome) {
    const c = buildCard(whole);
    c.f('note').value = old.f('note').value;
    c.f('message').value = old.f('message').value;
    c.f('edit-args').value = old.f('edit-args').value;
    c.f('editor').hidden = old.f('editor').hidden;
    if (!c.f('editor').hidden) checkEdit(c); // what it changes, against the call as it now stands
    c.outcome =
      outcome || 'This approval changed since it was shown (its call or its grants): read it again before deciding.';
    c.el.hidden = old.el.hidden;
    old.el.replaceWith(c.el);
    old.row.replaceWith(c.row);
    cards.set(c.id, c);
    if (opened === old) opened = c;
    if (confirming === old) {
      confirming = c;
      renderConfirmState();
    }
    renderState(c);
    tickCard(c, serverNow());
  }

  /**
   * A newer state of the approval (from the stream, an answer, a read): never back to an older one.
   * @param {Card} c
   * @param {Summary} s
   */
  function setState(c, s) {
    if (rank(s.status) < rank(c.summary.status)) return;
    c.summary = { ...c.summary, ...s };
    renderState(c);
    if (confirming === c) renderConfirmState();
  }

  /** @type {Record<string, string>} */
  const STATUS_LABELS = {
    pending: 'Pending',
    granted: 'Granted',
    denied: 'Denied',
    expired: 'Expired',
    consumed: 'Granted and used',
    cancelled: 'Withdrawn',
  };

  /** @param {Card} c */
  function renderState(c) {
    const s = c.summary;
    const f = c.f;
    c.el.dataset.status = s.status;
    f('status').textContent = STATUS_LABELS[s.status] || s.status;
    f('status').className = 'badge ' + s.status;
    const open = s.status === 'pending' && !c.busy && !c.stale;
    f('grant').disabled = !open;
    f('deny').disabled = !open;
    f('edit').disabled = !open;
    f('edit-grant').disabled = !open || c.edit.args === null || c.edit.changes.length === 0;
    f('edit-args').disabled = !open;
    if (s.status !== 'pending') f('editor').hidden = true;
    f('note').disabled = !open;
    f('message').disabled = !open;
    c.el.setAttribute('aria-busy', c.busy || c.stale ? 'true' : 'false');
    if (c.busy) f('result').textContent = c.outcome;
    else if (c.stale) f('result').textContent = 'It changed: reading it again…';
    else f('result').textContent = [c.outcome, stateText(s)].filter((t) => t !== '').join(' ');
    f('result').className = 'result ' + (s.status === 'pending' ? '' : 'done');
    // The history shows the decision's fields; a card of the queue keeps its layout instead.
    if (!oldestFirst() && s.decided_by !== null) {
      f('decision').hidden = false;
      f('decide').hidden = true;
      fillParts(f('decided_by'), inspect(s.decided_by, false).parts);
      f('decided_at').textContent = absoluteTime(s.decided_at);
      fillParts(f('decision_note'), inspect(s.decision_note || '(none)', false).parts);
      fillParts(f('decision_message'), inspect(s.decision_message || '(none)', false).parts);
    }
    f('expires_at').textContent = absoluteTime(s.expires_at);
    renderRow(c);
  }

  /** @param {Summary} s */
  function stateText(s) {
    const by = s.decided_by === null ? '' : s.decided_by === me?.sub ? 'you' : plainOf(s.decided_by);
    // A past instant: a clock a second off must not make it read "in a few seconds".
    // Called for the instants the status has (a decision's, the expiry).
    const at = (/** @type {string | null | undefined} */ iso) =>
      absoluteTime(iso) + ' (' + relativeTime(Math.min(0, Date.parse(/** @type {string} */ (iso)) - serverNow())) + ')';
    switch (s.status) {
      case 'pending':
        return '';
      case 'granted':
        return 'Granted by ' + by + ' at ' + at(s.decided_at) + '; the agent may run it once.';
      case 'denied':
        return 'Denied by ' + by + ' at ' + at(s.decided_at) + '.';
      case 'consumed':
        return (
          'Granted by ' + by + ' at ' + at(s.decided_at) + '; the agent ran it at ' + absoluteTime(s.consumed_at) + '.'
        );
      case 'expired':
        return (
          (s.decided_by ? 'Granted by ' + by + ', but not used in time: ' : 'Nobody decided in time: ') +
          'it expired at ' +
          at(s.expires_at) +
          '.'
        );
      case 'cancelled':
        return 'Withdrawn by the requester: there is nothing to decide.';
      default:
        return s.status;
    }
  }

  /**
   * Sends a decision, confirmed in the dialog, for the card as it was shown: the approval is read
   * again first, and one that changed meanwhile (decided, or its call or grants) is drawn again
   * instead of decided.
   * @param {Card} c
   * @param {'grant' | 'deny' | 'amend'} action
   * @param {string} message the message for the model (a denial's)
   * @param {JsonNode | null} [amended] an amend's arguments, as confirmed
   */
  async function decide(c, action, message, amended) {
    if (c.busy || c.stale || c.summary.status !== 'pending') return;
    if (action === 'amend' && !amended) return;
    const note = c.f('note').value.trim();
    const body =
      action === 'deny' ? { ...(note ? { note } : {}), ...(message ? { message } : {}) } : note ? { note } : {};
    // An amend's arguments go as written (parseExact kept each number's text): JSON.stringify would round them.
    const text = amended
      ? '{' + (note ? '"note":' + JSON.stringify(note) + ',' : '') + '"args":' + nodeText(amended) + '}'
      : undefined;
    const verb = action === 'deny' ? 'denied' : 'granted';
    c.busy = true;
    c.outcome = action === 'grant' ? 'Granting…' : action === 'amend' ? 'Granting the edited call…' : 'Denying…';
    renderState(c);
    const [now] = await readWhole([c.id]);
    if (cards.get(c.id) !== c) return;
    if (now !== null && cardView(now.tree).fingerprint !== c.view.fingerprint) {
      c.busy = false;
      redraw(c, now);
      return;
    }
    if (now !== null && now.json.status !== 'pending') {
      c.busy = false;
      c.outcome = 'Not ' + verb + ': it was no longer pending.';
      setState(c, now.json);
      return;
    }
    let r;
    try {
      const route = action === 'deny' ? 'deny' : 'grant';
      r = await api('POST', '/approvals/' + encodeURIComponent(c.id) + '/' + route, body, text);
    } catch {
      r = null;
    }
    c.busy = false;
    if (r?.ok && (action === 'amend' || r.json?.status === 'pending')) {
      // The approval now binds the edited call, or holds a grant short of its quorum: the card is
      // drawn again as it stands (with the serving hints), saying what the grant did.
      const [w] = await readWhole([c.id]);
      const now = cards.get(c.id); // the stream may have drawn it again meanwhile
      if (now === undefined) return;
      const whole = w || { json: r.json, tree: parseExact(r.text) };
      const still = whole.json.status === 'pending';
      const counted = still
        ? ' Your grant counts: ' + cardView(whole.tree).quorum.text + '; it waits for more grants.'
        : '';
      redraw(now, whole, ((action === 'amend' ? 'You granted the edited call.' : '') + counted).trim());
      scheduleCount();
      return;
    }
    if (r?.ok) {
      c.outcome = '';
      setState(c, r.json);
    } else if (r?.status === 422 && r.json?.code === 'amendment_refused') {
      c.outcome = 'Not granted: Gatehouse refused the edited call: ' + refusalText(r) + '. Nothing changed.';
    } else if (r?.status === 403 && r.json?.code === 'not_eligible') {
      c.outcome = 'Not ' + verb + ': ' + notEligibleText(r) + '.';
    } else if (r?.status === 409 && r.json?.approval) {
      c.outcome = 'Not ' + verb + ': it was no longer pending.';
      setState(c, r.json.approval);
    } else if (r !== null && r.status === 401) {
      c.outcome = 'Not ' + verb + ': the token has expired. Sign in again.';
    } else if (r !== null && r.status === 403) {
      c.outcome = 'Not ' + verb + ': ' + problemText(r) + '.';
    } else {
      c.outcome =
        'Not ' + verb + ': ' + (r ? problemText(r) : 'Gatehouse cannot be reached') + '. Nothing changed; try again.';
    }
    renderState(c);
    scheduleCount();
  }

  /** Why an answer's requirements are not the caller's, in words (403 not_eligible's `why`). */
  /** @type {Record<string, string>} */
  const NOT_ELIGIBLE_WHY = {
    role: 'it asks for a role you do not have',
    team: 'it asks for someone of another team',
    user: 'it names the people who may answer, and you are not one of them',
    separation: 'it asks for someone outside the requester’s team',
  };

  /**
   * 403 not_eligible: which open requirement (its rule) and why, as a sentence; the approval stays pending.
   * @param {Answer} r
   */
  function notEligibleText(r) {
    const list = Array.isArray(r.json?.requirements) ? r.json.requirements : [];
    if (list.length === 0) return problemText(r);
    const each = list.map(
      (/** @type {{ rule: string, policy: string, why: string[] }} */ q) =>
        'rule ' +
        plainOf(q.rule) +
        ' of policy ' +
        plainOf(q.policy) +
        ' (' +
        (Array.isArray(q.why) ? q.why.map((w) => NOT_ELIGIBLE_WHY[w] || plainOf(w)).join('; ') : '') +
        ')',
    );
    return (
      'you may not answer this approval: ' + each.join(', and ') + '. It stays pending: ask someone the policy names'
    );
  }

  /**
   * 422 amendment_refused: the decision of the edited call, its reason first.
   * @param {Answer} r
   */
  function refusalText(r) {
    const d = r.json?.decision;
    const said = d && (d.reason || d.message);
    const how = d && typeof d.decision === 'string' ? d.decision + ', ' : '';
    return said
      ? how + plainOf(String(said)) + (d.rule ? ' (rule ' + plainOf(String(d.rule)) + ')' : '')
      : problemText(r);
  }

  // ---- Edit and grant: the arguments edited, checked, and what changed ------------------------------------

  /** @param {Card} c */
  function openEditor(c) {
    if (c.busy || c.stale || c.summary.status !== 'pending') return;
    const f = c.f;
    f('editor').hidden = false;
    if (f('edit-args').value === '') f('edit-args').value = prettyJson(c.view.argsTree);
    checkEdit(c);
    f('edit-args').focus();
  }

  /**
   * Reads the editor: problems (not JSON, a key twice, what the schema refuses), the keywords not
   * checked here, and what changed against the call as shown; the grant waits until it is sendable.
   * @param {Card} c
   */
  function checkEdit(c) {
    const f = c.f;
    const read = readEdited(f('edit-args').value);
    /** @type {EditProblem[]} */
    let problems = read.problems;
    /** @type {string[]} */
    let unchecked = [];
    if (read.args !== null && c.schema !== undefined) {
      const checked = checkArgs(read.args, c.schema);
      problems = checked.problems;
      unchecked = checked.unchecked;
    }
    const changes = read.args === null ? [] : argsDiff(c.view.argsTree, read.args);
    c.edit = { args: problems.length === 0 ? read.args : null, changes };
    const list = f('edit-problems');
    list.textContent = '';
    for (const p of problems) {
      const li = document.createElement('li');
      li.textContent = p.where + ': ' + p.text;
      list.append(li);
    }
    f('edit-unchecked').hidden = unchecked.length === 0 && c.schema !== undefined;
    f('edit-unchecked').textContent =
      c.schema === undefined
        ? 'The tool has no schema in the catalogue: the policies’ decision, when you grant, is the only check.'
        : 'Not checked here: ' + unchecked.join(', ') + '. Gatehouse checks them when you grant.';
    fillDiff(f('edit-diff'), changes);
    f('edit-state').textContent =
      problems.length > 0
        ? 'Not sendable: ' + problems.length + (problems.length === 1 ? ' problem' : ' problems') + ' below.'
        : changes.length === 0
          ? 'No change yet: Grant… grants the call as it is.'
          : (c.schema === undefined ? 'Read as JSON' : 'Matches the tool’s schema') +
            '; ' +
            changes.length +
            (changes.length === 1 ? ' change:' : ' changes:');
    f('edit-state').className = 'edit-state' + (problems.length > 0 ? ' bad' : '');
    renderState(c);
  }

  /**
   * The changes of an edit, one line each: where, the old value → the new (escapes shown, long values cut).
   * @param {HTMLElement} ul
   * @param {readonly EditChange[]} changes
   */
  function fillDiff(ul, changes) {
    ul.textContent = '';
    /** @type {(node: JsonNode | undefined, side: string) => HTMLElement} */
    const value = (node, side) => {
      const el = document.createElement(node === undefined ? 'span' : 'code');
      el.className = side;
      if (node === undefined) el.textContent = '(absent)';
      else {
        const chars = Array.from(nodeText(node));
        const cut = chars.length > 200 ? chars.slice(0, 200).join('') + '…' : chars.join('');
        fillParts(el, inspect(cut, false).parts);
      }
      return el;
    };
    for (const change of changes) {
      const li = document.createElement('li');
      const where = document.createElement('span');
      where.className = 'where';
      where.textContent = change.where + ': ';
      li.append(where, value(change.before, 'old'), ' → ', value(change.after, 'new'));
      ul.append(li);
    }
  }

  // ---- the confirmation of a grant or a denial ---------------------------------------------------------

  /**
   * @param {Card} c
   * @param {'grant' | 'deny' | 'amend'} action
   */
  function openConfirm(c, action) {
    if (c.busy || c.stale || c.summary.status !== 'pending' || dialog.open) return;
    const amended = action === 'amend' ? c.edit.args : null;
    if (action === 'amend' && (amended === null || c.edit.changes.length === 0)) return;
    confirming = c;
    confirmAction = action;
    confirmPrint = c.view.fingerprint;
    confirmArgs = amended;
    const grant = action !== 'deny';
    $('confirm-title').textContent =
      action === 'amend' ? 'Grant the edited call, once?' : grant ? 'Grant this call, once?' : 'Deny this call?';
    $('confirm-intro').textContent =
      action === 'amend'
        ? 'Gatehouse decides this edited call again, for the same requester; if the policies allow it, your grant lets it run once instead of the call the agent sent:'
        : grant
          ? 'A grant lets exactly this call run, one time:'
          : 'A denial refuses exactly this call; the agent is told it was denied:';
    $('confirm-tool').textContent = c.view.tool;
    $('confirm-who').textContent = partsText(c.view.requester);
    /** @type {Finding[]} */
    const findings = [];
    if (amended !== null) {
      // The edited call, its strings inspected like the agent's: what changed first, then all of it.
      $('confirm-lead').hidden = true;
      fillDiff($('confirm-diff'), c.edit.changes);
      $('confirm-diff').hidden = false;
      fillCall($('confirm-args'), jsonTokens(amended, ['args'], findings, 0));
    } else {
      fillLead($('confirm-lead'), c.view.lead);
      $('confirm-diff').hidden = true;
      $('confirm-diff').textContent = '';
      fillCall($('confirm-args'), c.view.args);
      findings.push(...c.view.findings);
    }
    const flagged = $('confirm-flags');
    flagged.hidden = findings.length === 0;
    flagged.textContent =
      findings.length === 0
        ? ''
        : amended !== null
          ? 'The edited call holds characters to check, shown as \\u escapes above: ' +
            findings.map((x) => x.where + ': ' + x.text).join('; ')
          : 'Check the ' + findings.length + ' flagged characters on the card: they are shown as \\u escapes above.';
    const note = c.f('note').value.trim();
    // Under a quorum an amendment starts the count again: the earlier grants were for another call.
    const restart =
      amended !== null && c.view.quorum.need > c.view.requirements.length
        ? ' Under a quorum an amendment starts the count again: grants given so far were for the call as it was, and yours counts as the first.'
        : '';
    $('confirm-note').textContent = (note ? 'Your note for the record: ' + note : 'No note for the record.') + restart;
    $('confirm-message-part').hidden = grant;
    $('confirm-message').value = grant ? '' : c.f('message').value;
    $('confirm-grant').hidden = !grant;
    $('confirm-grant').textContent = action === 'amend' ? 'Grant the edited call once' : 'Grant once';
    $('confirm-deny').hidden = grant;
    $('confirm-grant').setAttribute('aria-label', 'Grant approval ' + c.id + ' (' + c.view.tool + ') once');
    $('confirm-deny').setAttribute('aria-label', 'Deny approval ' + c.id + ' (' + c.view.tool + ')');
    renderConfirmState();
    dialog.showModal();
    $('confirm-cancel').focus();
  }

  function renderConfirmState() {
    const c = confirming;
    const changed = c !== null && c.view.fingerprint !== confirmPrint;
    const open = c !== null && c.summary.status === 'pending' && !c.busy && !c.stale && !changed;
    $('confirm-grant').disabled = !open;
    $('confirm-deny').disabled = !open;
    $('confirm-state').textContent =
      c === null || open
        ? ''
        : changed
          ? 'This approval changed since this confirmation opened: close it and read the card again.'
          : c.stale
            ? 'This approval changed: reading it again…'
            : 'This approval is no longer pending: ' + stateText(c.summary);
  }

  // The second click of a double click that opened the confirmation may land on it: it acts on nothing.
  $('confirm-cancel').addEventListener('click', (event) => {
    if (event.detail <= 1) dialog.close();
  });
  for (const button of /** @type {const} */ (['grant', 'deny'])) {
    $('confirm-' + button).addEventListener('click', (event) => {
      // The second click of a double click (detail 2) is never a confirmation.
      if (event.detail > 1 || confirming === null) return;
      const action = confirmAction;
      if ((button === 'deny') !== (action === 'deny')) return;
      const c = confirming;
      if (c.view.fingerprint !== confirmPrint) return;
      const message = $('confirm-message').value.trim();
      if (action === 'deny') c.f('message').value = $('confirm-message').value;
      $('confirm-' + button).disabled = true;
      const amended = confirmArgs;
      dialog.close();
      decide(c, action, message, amended);
    });
  }
  dialog.addEventListener('close', () => {
    const c = confirming;
    confirming = null;
    confirmArgs = null;
    if (c && cards.get(c.id) === c) c.f(confirmAction === 'amend' ? 'edit-grant' : confirmAction).focus();
  });

  // ---- the compact queue: one row per approval ---------------------------------------------------------

  /**
   * A row: the tool, the lead field, the quorum's progress on the first line; who asked, the age,
   * the expiry and the rule on the second. A row opens its card; it decides nothing.
   * @param {Card} c
   */
  function buildRow(c) {
    const v = c.view;
    c.row.className = 'row';
    c.row.dataset.id = c.id;
    const open = document.createElement('button');
    open.type = 'button';
    open.className = 'row-open';
    const line1 = document.createElement('span');
    line1.className = 'row-line';
    const tool = document.createElement('span');
    tool.className = 'row-tool';
    tool.textContent = v.tool;
    const lead = document.createElement('span');
    lead.className = 'row-lead';
    lead.textContent = v.leadText;
    const quorum = document.createElement('span');
    quorum.className = 'row-quorum';
    const status = document.createElement('span');
    status.className = 'row-status';
    line1.append(tool, ' ', lead, ' ', quorum, ' ', status);
    const line2 = document.createElement('span');
    line2.className = 'row-line row-meta';
    const who = document.createElement('span');
    who.className = 'row-who';
    fillParts(who, v.who);
    const times = document.createElement('span');
    times.className = 'row-times';
    const rule = document.createElement('span');
    rule.className = 'row-rule';
    rule.textContent = c.summary.rule || '';
    line2.append(who, ' · ', times, ' · ', rule);
    open.append(line1, line2);
    open.setAttribute(
      'aria-label',
      'Open approval ' +
        c.id +
        ': ' +
        v.tool +
        (v.leadText ? ', ' + v.leadText : '') +
        ', asked by ' +
        partsText(v.who),
    );
    open.addEventListener('click', () => openCard(c));
    c.row.append(open);
  }

  /** @param {Card} c */
  function renderRow(c) {
    const s = c.summary;
    c.row.dataset.status = s.status;
    const q = /** @type {HTMLElement} */ (c.row.querySelector('.row-quorum'));
    // A quorum's progress, from the approval's requirements (one grant decides when they do not say).
    q.textContent =
      s.status === 'pending'
        ? 'granted ' +
          c.view.quorum.text +
          (c.view.grantedBy.length > 0 ? ' (' + c.view.grantedBy.join(', ') + ')' : '')
        : '';
    const st = /** @type {HTMLElement} */ (c.row.querySelector('.row-status'));
    st.textContent = s.status === 'pending' ? '' : STATUS_LABELS[s.status] || s.status;
  }

  /** Ids are UUIDv7s: within one millisecond, the later filed has the greater id (as the server orders them). */
  const byId = (/** @type {Card} */ a, /** @type {Card} */ b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
  /** @type {Record<string, (a: Card, b: Card) => number>} */
  const SORTS = {
    oldest: (a, b) => Date.parse(a.view.createdAt) - Date.parse(b.view.createdAt) || byId(a, b),
    newest: (a, b) => Date.parse(b.view.createdAt) - Date.parse(a.view.createdAt) || byId(b, a),
    expiry: (a, b) => Date.parse(a.summary.expires_at) - Date.parse(b.summary.expires_at),
    tool: (a, b) => a.view.tool.localeCompare(b.view.tool),
    requester: (a, b) => partsText(a.view.who).localeCompare(partsText(b.view.who)),
    rule: (a, b) => (a.summary.rule || '').localeCompare(b.summary.rule || ''),
  };
  /** The sort chosen, ties broken oldest first: one order for one set of approvals. */
  const compareRows = (/** @type {Card} */ a, /** @type {Card} */ b) =>
    (SORTS[$('f-sort').value] || SORTS.oldest)(a, b) || SORTS.oldest(a, b);

  /**
   * Puts a card's row where the sort places it, moving no other row (a focused row keeps its focus).
   * @param {Card} c
   */
  function placeRow(c) {
    for (const el of queue.children) {
      const other = cards.get(/** @type {string} */ (/** @type {HTMLElement} */ (el).dataset.id));
      if (other && other !== c && compareRows(c, other) < 0) {
        queue.insertBefore(c.row, el);
        return;
      }
    }
    queue.append(c.row);
  }

  function sortRows() {
    const focused = document.activeElement;
    for (const c of [...cards.values()].sort(compareRows)) queue.append(c.row);
    if (focused instanceof HTMLElement) focused.focus();
  }

  /** @param {'cards' | 'queue'} to */
  function setView(to) {
    view = to;
    localStorage.setItem(VIEW_KEY, to);
    $('f-view').value = to;
    $('sort-part').hidden = to !== 'queue';
    opened = null;
    showView();
  }

  // What is shown: every card, or the rows, or the one card a row opened.
  function showView() {
    const rows = view === 'queue' && opened === null;
    queue.hidden = !rows;
    $('queue-help').hidden = !rows;
    $('back-part').hidden = view !== 'queue' || opened === null;
    for (const c of cards.values()) c.el.hidden = view === 'queue' && opened !== c;
  }

  /** @param {Card} c */
  function openCard(c) {
    opened = c;
    showView();
    c.f('heading').focus();
  }

  $('back').addEventListener('click', () => {
    const c = opened;
    opened = null;
    showView();
    if (c) /** @type {HTMLElement} */ (c.row.querySelector('button')).focus();
  });
  $('f-view').addEventListener('change', () => {
    const before = view;
    const next = $('f-view').value === 'queue' ? 'queue' : 'cards';
    setView(next);
    // A page of rows is longer than a page of cards: the list is read again at its size.
    if (before !== next && applied !== null) load();
  });
  $('f-sort').addEventListener('change', sortRows);

  // Arrow keys, j and k move between rows; Home and End to the first and the last. Enter and Space
  // are the row button's own: they open the card. Nothing here decides.
  queue.addEventListener('keydown', (event) => {
    const rows = [...queue.querySelectorAll('button.row-open')];
    const at = rows.indexOf(/** @type {Element} */ (document.activeElement));
    if (at === -1 || event.ctrlKey || event.metaKey || event.altKey) return;
    const to = {
      ArrowDown: at + 1,
      j: at + 1,
      ArrowUp: at - 1,
      k: at - 1,
      Home: 0,
      End: rows.length - 1,
    }[event.key];
    if (to === undefined) return;
    event.preventDefault();
    const next = /** @type {HTMLElement | undefined} */ (rows[Math.max(0, Math.min(rows.length - 1, to))]);
    next?.focus();
  });

  // ---- the clock: relative times, and expiry seen as it happens ----------------------------------------

  /**
   * @param {Card} c
   * @param {number} now
   */
  function tickCard(c, now) {
    const s = c.summary;
    const f = c.f;
    const asked =
      'asked ' + relativeTime(Math.min(0, Date.parse(c.view.createdAt) - now)) + ' by ' + partsText(c.view.requester);
    if (f('asked').textContent !== asked) f('asked').textContent = asked;
    const left = Date.parse(s.expires_at) - now;
    const live = s.status === 'pending' || s.status === 'granted';
    const expires = !live
      ? STATUS_LABELS[s.status] || s.status
      : left > 0
        ? 'expires ' + relativeTime(left)
        : 'expiring now';
    if (f('expires').textContent !== expires) f('expires').textContent = expires;
    const age = relativeTime(Math.min(0, Date.parse(c.view.createdAt) - now));
    const rowTimes = age + ' · ' + expires;
    const times = /** @type {HTMLElement} */ (c.row.querySelector('.row-times'));
    if (times.textContent !== rowTimes) times.textContent = rowTimes;
    // Past its expiry by the server's clock: read it (the database's clock decides), every 2 s.
    if (live && left <= 0 && !c.busy && Date.now() - c.checkedAt > 2000) {
      c.checkedAt = Date.now();
      const gen = generation;
      readWhole([c.id]).then(([w]) => {
        if (gen === generation && w !== null) setState(c, w.json);
      });
    }
  }
  setInterval(() => {
    const now = serverNow();
    for (const c of cards.values()) tickCard(c, now);
  }, 1000);

  gatehouseSession.ready.then((session) => {
    if (session || token) start();
  });
})();
