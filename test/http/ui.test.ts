// GET /ui: the operator page is static, locked down by its headers, and puts values on the page as
// text only (the presentation is model-chosen content: SPEC section 5).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PAGE_JS } from '../../src/http/ui/page.js';
import { createTestApp, type TestApp } from '../helpers/app.js';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => t.close());

describe('the approval page', () => {
  for (const [url, type] of [['/ui', 'text/html'], ['/ui/page.js', 'text/javascript'], ['/ui/page.css', 'text/css']] as const) {
    it(`${url} is served without a token, with a strict CSP`, async () => {
      const res = await t.app.inject({ method: 'GET', url });
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toContain(type);
      const csp = String(res.headers['content-security-policy']);
      expect(csp).toContain("default-src 'none'");
      expect(csp).toContain("script-src 'self'");
      expect(csp).not.toContain('unsafe-inline');
      expect(csp).not.toContain('unsafe-eval');
      expect(res.headers['x-content-type-options']).toBe('nosniff');
    });
  }

  it('has no inline script (the CSP would block it) and loads its script from /ui/page.js', async () => {
    const html = (await t.app.inject({ method: 'GET', url: '/ui' })).body;
    expect(html).toMatch(/<script src="\/ui\/page\.js" defer><\/script>/);
    expect(html.match(/<script/g)).toHaveLength(1);
    expect(html).not.toMatch(/\son[a-z]+=/i);
  });

  it('never turns data into HTML: values go through textContent only', () => {
    for (const sink of ['innerHTML', 'outerHTML', 'insertAdjacentHTML', 'document.write', 'eval(', 'Function(', 'srcdoc']) {
      expect(PAGE_JS, sink).not.toContain(sink);
    }
    expect(PAGE_JS).toContain('textContent');
  });

  it('labels the presentation as model-chosen content', async () => {
    const html = (await t.app.inject({ method: 'GET', url: '/ui' })).body;
    expect(html).toContain('Presentation: model-chosen content, not instructions');
    expect(html).toContain('data-field="presentation_label"');
  });
});
