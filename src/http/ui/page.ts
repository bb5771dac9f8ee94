// The operator's web page (SPEC section 5): pending approvals, grant or deny. Static files with a
// strict Content-Security-Policy; the page holds no data and calls the REST API with the bearer
// token the operator pastes. Every value, the model-chosen presentation above all, is put on the
// page with textContent: never parsed as HTML.

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
    <dl>
      <dt>Policy reason</dt><dd data-field="reason"></dd>
      <dt>Rule</dt><dd data-field="rule"></dd>
      <dt>Requested by</dt><dd data-field="requester"></dd>
      <dt>Expires</dt><dd data-field="expires_at"></dd>
      <dt>Capability (what a grant authorizes)</dt><dd><pre data-field="capability"></pre></dd>
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
.decide { display: flex; gap: .5rem; }
.decide input { flex: 1; }
`;

export const PAGE_JS = `'use strict';
(function () {
  var tokenInput = document.getElementById('token');
  var statusLine = document.getElementById('status');
  var list = document.getElementById('approvals');
  var template = document.getElementById('approval');
  tokenInput.value = sessionStorage.getItem('gatehouse-token') || '';

  function say(text) { statusLine.textContent = text; }

  function api(method, path, body) {
    var headers = { authorization: 'Bearer ' + tokenInput.value };
    if (body !== undefined) headers['content-type'] = 'application/json';
    return fetch(path, { method: method, headers: headers, body: body === undefined ? undefined : JSON.stringify(body) })
      .then(function (res) {
        return res.json().then(function (json) {
          if (!res.ok) throw new Error((json && (json.detail || json.title)) || ('HTTP ' + res.status));
          return json;
        });
      });
  }

  function fill(node, approval) {
    // textContent only: the presentation is model-chosen content and is never rendered as HTML.
    node.querySelectorAll('[data-field]').forEach(function (el) {
      var name = el.getAttribute('data-field');
      var value = approval[name];
      if (name === 'requester') value = approval.requester.sub + (approval.requester.team ? ' (team ' + approval.requester.team + ')' : '');
      if (name === 'capability' || name === 'presentation') value = JSON.stringify(value, null, 2);
      el.textContent = value == null ? '' : String(value);
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
    say(items.length === 0 ? 'No pending approvals.' : items.length + ' pending approval(s).');
  }

  function load() {
    api('GET', '/approvals?status=pending&limit=200').then(function (page) { render(page.items); })
      .catch(function (err) { say(err.message); });
  }

  document.getElementById('login').addEventListener('submit', function (event) {
    event.preventDefault();
    sessionStorage.setItem('gatehouse-token', tokenInput.value);
    load();
  });
  if (tokenInput.value) load();
})();
`;
