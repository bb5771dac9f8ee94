// @ts-check
// Sign-in with the company's identity provider, when the service offers it (docs/approvals.md,
// "The operator page"). GET /auth/config says whether it does; then GET /auth/session answers 200
// when a person is signed in, 401 with the `login_url` when nobody is. Without it the page keeps
// to pasted tokens. Loaded before page.js, which asks window.gatehouseSession how to authenticate
// each request: with the session cookie (sent by the browser, HttpOnly: never readable here) and
// the session's CSRF token in X-CSRF-Token, instead of a bearer token. Every value is put on the
// page with textContent.
'use strict';
(() => {
  /** @type {Session | null} */
  let session = null; // GET /auth/session's answer while signed in
  /** @type {string | null} */
  let loginUrl = null; // where "Sign in" goes, when sign-in is on

  const box = document.createElement('p');
  box.id = 'session';
  box.className = 'session';
  const header = /** @type {HTMLElement} */ (document.querySelector('header')); // page.html has one
  header.insertBefore(box, header.querySelector('h1')?.nextSibling ?? null);
  const tokenInput = /** @type {HTMLInputElement | null} */ (document.getElementById('token'));
  const tokenForm = tokenInput ? tokenInput.form : null;

  function render() {
    box.textContent = '';
    if (session !== null) {
      const who = document.createElement('span');
      who.id = 'session-who';
      who.textContent =
        'Signed in as ' +
        (session.name
          ? session.name + ' (' + session.sub + (session.team ? ', team ' + session.team : '') + ')'
          : session.sub + (session.team ? ' (team ' + session.team + ')' : '')) +
        (session.can.decide ? '.' : ': this account does not have the approver role, so it cannot grant or deny.');
      const out = document.createElement('button');
      out.type = 'button';
      out.id = 'session-signout';
      out.textContent = 'Sign out';
      out.addEventListener('click', signOut);
      box.append(who, ' ', out);
      // One way in at a time: the session's. (A style, not `hidden`: the page's CSS lays the form out.)
      if (tokenForm) tokenForm.style.display = 'none';
    } else if (loginUrl !== null) {
      const signIn = document.createElement('button');
      signIn.type = 'button';
      signIn.id = 'session-signin';
      signIn.textContent = 'Sign in';
      // A navigation, not a form (the page's CSP allows no form submission): the provider's login page.
      signIn.addEventListener('click', () => location.assign(/** @type {string} */ (loginUrl)));
      const hint = document.createElement('span');
      hint.textContent = ' with the identity provider' + (tokenForm ? ', or paste a token below (development).' : '.');
      box.append(signIn, hint);
      if (tokenForm) tokenForm.style.display = '';
    }
    box.hidden = box.childNodes.length === 0;
  }

  async function read() {
    try {
      // Sign-in on or off: asked first, so that a page without it makes no failing request.
      const config = await fetch('/auth/config', { cache: 'no-store' }).then((r) => (r.ok ? r.json() : null));
      if (!config?.signin) {
        session = null;
        loginUrl = null;
        render();
        return null;
      }
      const res = await fetch(config.signin.session_url, { credentials: 'same-origin', cache: 'no-store' });
      const json = await res.json().catch(() => null);
      session = res.ok && json ? json : null;
      loginUrl = res.status === 401 && json && typeof json.login_url === 'string' ? json.login_url : null;
    } catch {
      session = null; // unreachable: the page says so when it loads anything
    }
    render();
    return session;
  }

  async function signOut() {
    let next = null;
    try {
      const res = await fetch('/auth/logout', {
        method: 'POST',
        credentials: 'same-origin',
        headers: { 'x-csrf-token': session ? session.csrf_token : '' },
      });
      const json = await res.json().catch(() => null);
      next = res.ok && json && typeof json.end_session_url === 'string' ? json.end_session_url : null;
    } catch {
      next = null;
    }
    // Signed out here; the provider's end-session page signs out there too, then comes back to /ui.
    location.assign(next ?? location.pathname);
  }

  window.gatehouseSession = {
    /** Resolves once known: the signed-in session, or null (not signed in, or sign-in is off). */
    ready: read(),
    /** The session while signed in, else null: page.js then sends the pasted bearer token. */
    current: () => session,
    /** The headers of a request made with the session (the browser adds the cookie). */
    headers: () => ({ 'x-csrf-token': session ? session.csrf_token : '' }),
    /** page.js got a 401 with the session: it has ended (expired, or signed out elsewhere). */
    lost: () => {
      session = null;
      read();
    },
  };
})();
