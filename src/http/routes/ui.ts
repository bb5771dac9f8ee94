// GET /ui: the operator's approval page, its script and its stylesheet. Public static files (they
// hold no data); the Content-Security-Policy allows only same-origin scripts, styles and requests.
import { readFileSync } from 'node:fs';
import type { FastifyInstance } from 'fastify';

// Static files beside this module's folder: src/http/ui/ (copied to dist/http/ui/ by the build).
const file = (name: string): string => readFileSync(new URL(`../ui/${name}`, import.meta.url), 'utf8');

const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

export function uiRoutes(app: FastifyInstance): void {
  const serve = (path: string, type: string, body: string): void => {
    app.get(path, async (_request, reply) =>
      reply
        .type(type)
        .header('content-security-policy', CSP)
        .header('x-content-type-options', 'nosniff')
        .header('referrer-policy', 'no-referrer')
        .header('cache-control', 'no-store')
        .send(body),
    );
  };
  serve('/ui', 'text/html; charset=utf-8', file('page.html'));
  serve('/ui/money.js', 'text/javascript; charset=utf-8', file('money.js'));
  serve('/ui/card.js', 'text/javascript; charset=utf-8', file('card.js'));
  serve('/ui/edit.js', 'text/javascript; charset=utf-8', file('edit.js'));
  serve('/ui/session.js', 'text/javascript; charset=utf-8', file('session.js'));
  serve('/ui/page.js', 'text/javascript; charset=utf-8', file('page.js'));
  serve('/ui/page.css', 'text/css; charset=utf-8', file('page.css'));
}
