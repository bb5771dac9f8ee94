// GET /ui: the operator's approval page, its script and its stylesheet. Public static files (they
// hold no data); the Content-Security-Policy allows only same-origin scripts, styles and requests.
import type { FastifyInstance } from 'fastify';
import { PAGE_CSS, PAGE_HTML, PAGE_JS } from '../ui/page.js';

const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

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
  serve('/ui', 'text/html; charset=utf-8', PAGE_HTML);
  serve('/ui/page.js', 'text/javascript; charset=utf-8', PAGE_JS);
  serve('/ui/page.css', 'text/css; charset=utf-8', PAGE_CSS);
}
