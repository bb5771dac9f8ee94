// The operator's web page: pending approvals, grant or deny, through the REST API with the bearer
// token the operator pastes. Every value, the model-chosen arguments and presentation above all, is
// put on the page with textContent: never parsed as HTML. card.js (loaded first) says what a card shows.
'use strict';
(function () {
  var tokenInput = document.getElementById('token');
  var statusLine = document.getElementById('status');
  var list = document.getElementById('approvals');
  var template = document.getElementById('approval');
  tokenInput.value = sessionStorage.getItem('gatehouse-token') || '';

  function say(text) {
    statusLine.textContent = text;
  }

  // Does this browser give JSON.parse's reviver a number's source text (see parseExact)? If not,
  // the page says that numbers beyond a double's precision show rounded.
  var EXACT_NUMBERS = (function () {
    var seen = false;
    JSON.parse('1', function (_key, value, context) {
      seen = !!context && typeof context.source === 'string';
      return value;
    });
    return seen;
  })();
  var ROUNDED_NOTE = ' This browser shows numbers of more than 15 significant digits rounded: check them through the API.';

  function api(method, path, body) {
    // Signed in with the identity provider (session.js): the CSRF token, and the session cookie that
    // fetch sends to this origin by itself (credentials 'same-origin', its default); else the pasted token.
    var session = gatehouseSession.current();
    var headers = session ? gatehouseSession.headers() : { authorization: 'Bearer ' + tokenInput.value };
    if (body !== undefined) headers['content-type'] = 'application/json';
    return fetch(path, { method: method, headers: headers, body: body === undefined ? undefined : JSON.stringify(body) }).then(function (res) {
      if (res.status === 401 && session) gatehouseSession.lost();
      return res
        .text()
        .then(parseExact)
        .then(function (json) {
          if (!res.ok) throw new Error((json && (json.detail || json.title)) || 'HTTP ' + res.status);
          return json;
        });
    });
  }

  function fill(node, approval) {
    // textContent only: the arguments and the presentation are model-chosen content and are never
    // rendered as HTML. A field with nothing to say (no unshown arguments) is hidden.
    var texts = cardText(approval);
    node.querySelectorAll('[data-field]').forEach(function (el) {
      var name = el.getAttribute('data-field');
      el.textContent = Object.hasOwn(texts, name) ? texts[name] : '';
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
          .then(function () {
            say(action === 'grant' ? 'Granted.' : 'Denied.');
            load();
          })
          .catch(function (err) {
            say(err.message);
          });
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
      return api('GET', '/approvals/' + encodeURIComponent(items[n].id)).then(function (approval) {
        out[n] = approval;
        return reader();
      });
    }
    var readers = [];
    for (var k = 0; k < READERS; k++) readers.push(reader());
    return Promise.all(readers).then(function () {
      return out.filter(function (approval) {
        return approval && approval.status === 'pending';
      });
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
    next(null, 0).catch(function (err) {
      say(err.message);
    });
  }

  document.getElementById('login').addEventListener('submit', function (event) {
    event.preventDefault();
    sessionStorage.setItem('gatehouse-token', tokenInput.value);
    load();
  });
  gatehouseSession.ready.then(function (session) {
    if (session || tokenInput.value) load();
  });
})();
