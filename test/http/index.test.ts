// GET /: instead of a JSON 404, a small fixed document pointing at the operator page, the OpenAPI
// document, health, readiness, metrics and the docs. Unauthenticated, the same for every caller,
// with the headers every response carries; each link it gives answers.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { assertResponseMatchesOpenApi } from '../helpers/openapi.js';
import { agentToken, bearer, createTestApp, type TestApp } from '../helpers/app.js';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => {
  await t?.close();
});

it('answers 200 JSON naming /ui, /openapi.yaml, /healthz, /readyz, /metrics and the docs, without a token', async () => {
  const res = await t.app.inject({ method: 'GET', url: '/' });
  expect(res.statusCode).toBe(200);
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  expect(res.headers['cache-control']).toBe('no-store');
  expect(res.headers['x-content-type-options']).toBe('nosniff');
  const body = res.json() as { service: string; links: Record<string, string>; docs: string };
  expect(body.service).toBe('gatehouse');
  expect(body.links).toEqual({
    ui: '/ui',
    openapi: '/openapi.yaml',
    health: '/healthz',
    ready: '/readyz',
    metrics: '/metrics',
  });
  expect(body.docs).toMatch(/README\.md.*docs\/.*Gatehouse repository/);
  assertResponseMatchesOpenApi('GET', '/', res);
  // Each link is a route of this service, open like GET / itself.
  for (const path of Object.values(body.links)) {
    const linked = await t.app.inject({ method: 'GET', url: path });
    expect([200, 503], path).toContain(linked.statusCode); // /readyz: no database in this app
  }
});

it('is the same with a token, with a browser Accept header and for HEAD; other paths are still 404', async () => {
  const plain = (await t.app.inject({ method: 'GET', url: '/' })).body;
  expect((await t.app.inject({ method: 'GET', url: '/', headers: bearer(agentToken()) })).body).toBe(plain);
  const browser = await t.app.inject({
    method: 'GET',
    url: '/',
    headers: { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' },
  });
  expect(browser.statusCode).toBe(200);
  expect(browser.body).toBe(plain);
  const head = await t.app.inject({ method: 'HEAD', url: '/' });
  expect(head.statusCode).toBe(200);
  expect(head.body).toBe('');
  const missing = await t.app.inject({ method: 'GET', url: '/nope' });
  expect(missing.statusCode).toBe(404);
  expect(missing.headers['content-type']).toMatch(/^application\/problem\+json/);
});
