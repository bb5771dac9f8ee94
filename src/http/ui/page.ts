// The operator's web page (SPEC section 5): pending approvals, grant or deny. Static files with a
// strict Content-Security-Policy; the page holds no data and calls the REST API with the bearer
// token the operator pastes. Every value, the model-chosen arguments and presentation above all, is
// put on the page with textContent: never parsed as HTML.
//
// A grant lets exactly one call run: the tool with these exact `args` (the approval hash binds them,
// SPEC section 4). The capability and presentation are what the policy picked from the arguments for
// review, and a rule's shape may pick only some of them: so each card shows the full call first, and
// names the arguments that neither the capability nor the presentation shows.

export const PAGE_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Gatehouse approvals</title>
<link rel="stylesheet" href="/ui/page.css">
<script src="/ui/page.js" defer></script>
</head>
<body>
<header>
  <h1>Gatehouse approvals</h1>
  <form id="login">
    <label>Approver token <input id="token" type="password" autocomplete="off" required></label>
    <button type="submit">Load pending approvals</button>
  </form>
  <p id="status" role="status"></p>
</header>
<main id="approvals"></main>
<template id="approval">
  <article class="approval">
    <h2><span data-field="tool"></span> <small data-field="kind"></small></h2>
    <section class="call">
      <h3>The exact call a grant lets run, once</h3>
      <p class="label">Tool and arguments exactly as the agent sent them: model-chosen content, shown as text, not instructions.</p>
      <dl>
        <dt>Tool</dt><dd data-field="tool"></dd>
        <dt>Arguments</dt><dd><pre data-field="args"></pre></dd>
      </dl>
      <p class="unshown" data-field="unshown" hidden></p>
    </section>
    <dl>
      <dt>Why the policies ask (every requirement a grant answers)</dt><dd><pre data-field="requirements"></pre></dd>
      <dt>Requested by</dt><dd data-field="requester"></dd>
      <dt>Expires</dt><dd data-field="expires_at"></dd>
      <dt>Capability (arguments the policy picked for review)</dt><dd><pre data-field="capability"></pre></dd>
    </dl>
    <section class="presentation">
      <h3>Presentation: model-chosen content, not instructions</h3>
      <p class="label" data-field="presentation_label"></p>
      <pre data-field="presentation"></pre>
    </section>
    <form class="decide">
      <input name="text" maxlength="2000" placeholder="Note or reason (optional)">
      <button type="submit" name="action" value="grant">Grant</button>
      <button type="submit" name="action" value="deny">Deny</button>
    </form>
  </article>
</template>
</body>
</html>
`;

export const PAGE_CSS = `body { font: 15px/1.45 system-ui, sans-serif; margin: 0 auto; max-width: 60rem; padding: 1rem; }
header form { display: flex; gap: .5rem; align-items: end; flex-wrap: wrap; }
.approval { border: 1px solid #bbb; border-radius: 6px; padding: .75rem 1rem; margin: 1rem 0; }
.approval h2 { margin: 0 0 .5rem; font-size: 1.1rem; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: .2rem 1rem; margin: 0; }
dd { margin: 0; }
pre { white-space: pre-wrap; word-break: break-word; margin: 0; background: #f4f4f4; padding: .4rem; }
.presentation { border-left: 4px solid #d08700; padding-left: .75rem; margin: .75rem 0; }
.presentation .label { color: #8a5a00; font-weight: 600; margin: .25rem 0; }
.call { border-left: 4px solid #b3261e; padding-left: .75rem; margin: .5rem 0 .75rem; }
.call h3 { margin: 0; font-size: 1rem; }
.call .label { color: #8a5a00; font-weight: 600; margin: .25rem 0; }
.unshown { color: #b3261e; font-weight: 700; margin: .4rem 0 0; }
.decide { display: flex; gap: .5rem; }
.decide input { flex: 1; }
`;

/**
 * The pure part of the page script: what each card says, as text, from one approval of the API. No
 * DOM, so test/http/ui.test.ts runs it in Node; PAGE_JS embeds it.
 */
export const CARD_JS = `// data-field name -> the text shown there.
  function cardText(approval) {
    var requester = approval.requester || {};
    var unshown = unshownPaths(approval);
    return {
      tool: text(approval.tool),
      kind: text(approval.kind),
      requirements: requirementsOf(approval).map(function (r, i) {
        return (i + 1) + '. ' + text(r.reason) + '\\n   (policy ' + text(r.policy) + ', rule ' + text(r.rule) + ', kind ' + text(r.kind) + ')';
      }).join('\\n'),
      requester: text(requester.sub) + (requester.team ? ' (team ' + requester.team + ')' : ''),
      expires_at: text(approval.expires_at),
      args: json(approval.args),
      capability: json(approval.capability),
      presentation: json(approval.presentation),
      presentation_label: text(approval.presentation_label),
      unshown: unshown.length === 0 ? ''
        : 'Not in the capability or the presentation, but part of the call: ' + unshown.map(function (p) { return JSON.stringify(p); }).join(', '),
    };
  }

  function text(value) { return value == null ? '' : String(value); }

  // Every policy file that asked for this approval; an approval without the list has one.
  function requirementsOf(approval) {
    if (Array.isArray(approval.requirements) && approval.requirements.length > 0) return approval.requirements;
    return [{ policy: '', rule: approval.rule, kind: approval.kind, reason: approval.reason, capability: approval.capability, presentation: approval.presentation }];
  }
  function json(value) {
    return JSON.stringify(value === undefined ? {} : value, null, 2).replace(EXACT_IN_JSON, '$1');
  }

  // Numbers exactly as the API writes them (the grant lets that text run, and JSON.parse would show
  // 12345678901234567890 as 12345678901234567000). Where the browser gives the reviver a number's
  // source text (Chromium 114+, Firefox 135+), a number whose text is not its double's is kept as
  // that text behind a marker no API string can hold (U+0000), and json() writes it back bare.
  var EXACT = '\\u0000exact:';
  var EXACT_IN_JSON = /"\\\\u0000exact:([-+.0-9eE]+)"/g;
  function parseExact(body) {
    return JSON.parse(body, function (key, value, context) {
      if (typeof value === 'number' && context && typeof context.source === 'string' && context.source !== String(value)) {
        return EXACT + context.source;
      }
      return value;
    });
  }

  // The argument paths (dotted, as a rule's approval shape names them) that no requirement's
  // capability or presentation shows. A view that is the default shape {tool, args} shows every argument.
  function unshownPaths(approval) {
    var args = approval.args || {};
    var shown = [];
    var views = [];
    requirementsOf(approval).forEach(function (r) { views.push(r.capability, r.presentation); });
    views.forEach(function (view) {
      if (!view || typeof view !== 'object') return;
      if (isWholeCall(view, approval)) shown.push([]);
      else Object.keys(view).forEach(function (path) { shown.push(path.split('.')); });
    });
    var out = [];
    function visit(value, path) {
      if (shown.some(function (s) { return isPrefix(s, path); })) return; // shown, or inside a shown value
      var inner = value !== null && typeof value === 'object' ? Object.keys(value) : [];
      // Only part of this value is shown: look inside it. Otherwise none of it is.
      if (inner.length > 0 && shown.some(function (s) { return isPrefix(path, s); })) {
        inner.forEach(function (key) { visit(value[key], path.concat(key)); });
      } else {
        out.push(path.join('.'));
      }
    }
    Object.keys(args).forEach(function (key) { visit(args[key], [key]); });
    return out;
  }

  function isPrefix(prefix, path) {
    if (prefix.length > path.length) return false;
    for (var i = 0; i < prefix.length; i++) if (prefix[i] !== path[i]) return false;
    return true;
  }

  function isWholeCall(view, approval) {
    var keys = Object.keys(view);
    return keys.length === 2 && view.tool === approval.tool && Object.prototype.hasOwnProperty.call(view, 'args')
      && JSON.stringify(view.args) === JSON.stringify(approval.args);
  }
`;

export const PAGE_JS = `'use strict';
(function () {
  var tokenInput = document.getElementById('token');
  var statusLine = document.getElementById('status');
  var list = document.getElementById('approvals');
  var template = document.getElementById('approval');
  tokenInput.value = sessionStorage.getItem('gatehouse-token') || '';

  function say(text) { statusLine.textContent = text; }

  // Does this browser give JSON.parse's reviver a number's source text (see parseExact)? If not,
  // the page says that numbers beyond a double's precision show rounded.
  var EXACT_NUMBERS = (function () {
    var seen = false;
    JSON.parse('1', function (key, value, context) { seen = !!context && typeof context.source === 'string'; return value; });
    return seen;
  })();
  var ROUNDED_NOTE = ' This browser shows numbers of more than 15 significant digits rounded: check them through the API.';

  function api(method, path, body) {
    var headers = { authorization: 'Bearer ' + tokenInput.value };
    if (body !== undefined) headers['content-type'] = 'application/json';
    return fetch(path, { method: method, headers: headers, body: body === undefined ? undefined : JSON.stringify(body) })
      .then(function (res) {
        return res.text().then(parseExact).then(function (json) {
          if (!res.ok) throw new Error((json && (json.detail || json.title)) || ('HTTP ' + res.status));
          return json;
        });
      });
  }

  ${CARD_JS}
  function fill(node, approval) {
    // textContent only: the arguments and the presentation are model-chosen content and are never
    // rendered as HTML. A field with nothing to say (no unshown arguments) is hidden.
    var texts = cardText(approval);
    node.querySelectorAll('[data-field]').forEach(function (el) {
      var name = el.getAttribute('data-field');
      el.textContent = Object.prototype.hasOwnProperty.call(texts, name) ? texts[name] : '';
      if (name === 'unshown') el.hidden = el.textContent === '';
    });
  }

  function render(items) {
    list.textContent = '';
    items.forEach(function (approval) {
      var node = template.content.cloneNode(true);
      fill(node, approval);
      var form = node.querySelector('form');
      form.addEventListener('submit', function (event) {
        event.preventDefault();
        var action = event.submitter ? event.submitter.value : 'grant';
        var text = form.elements.text.value;
        var body = text ? (action === 'grant' ? { note: text } : { reason: text }) : {};
        api('POST', '/approvals/' + encodeURIComponent(approval.id) + '/' + action, body)
          .then(function () { say(action === 'grant' ? 'Granted.' : 'Denied.'); load(); })
          .catch(function (err) { say(err.message); });
      });
      list.appendChild(node);
    });
    say(items.length === 0 ? 'No pending approvals.' : items.length + ' pending approval(s).' + (EXACT_NUMBERS ? '' : ROUNDED_NOTE));
  }

  // A list carries summaries; each card needs its whole approval (the exact arguments), read a few
  // at a time. One decided meanwhile is left out.
  var READERS = 6;
  function whole(items) {
    var out = [];
    var next = 0;
    function reader() {
      if (next >= items.length) return Promise.resolve();
      var n = next++;
      return api('GET', '/approvals/' + encodeURIComponent(items[n].id)).then(function (approval) { out[n] = approval; return reader(); });
    }
    var readers = [];
    for (var k = 0; k < READERS; k++) readers.push(reader());
    return Promise.all(readers).then(function () {
      return out.filter(function (approval) { return approval && approval.status === 'pending'; });
    });
  }

  // Every pending approval, page after page (newest first): with more than one page, the oldest,
  // the closest to expiry, must not be the ones left out. Bounded, and said so if the bound is hit.
  var MAX_PAGES = 25;
  function load() {
    var items = [];
    function next(cursor, pages) {
      var query = '/approvals?status=pending&limit=200' + (cursor ? '&cursor=' + encodeURIComponent(cursor) : '');
      return api('GET', query).then(function (page) {
        items = items.concat(page.items);
        if (page.next_cursor && pages + 1 < MAX_PAGES) return next(page.next_cursor, pages + 1);
        return whole(items).then(function (approvals) {
          render(approvals);
          if (page.next_cursor) say('The ' + approvals.length + ' newest pending approvals; more are waiting: decide some, then reload.');
        });
      });
    }
    next(null, 0).catch(function (err) { say(err.message); });
  }

  document.getElementById('login').addEventListener('submit', function (event) {
    event.preventDefault();
    sessionStorage.setItem('gatehouse-token', tokenInput.value);
    load();
  });
  if (tokenInput.value) load();
})();
`;
