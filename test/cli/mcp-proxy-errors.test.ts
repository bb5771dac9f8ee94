// The proxy's guard on an upstream's JSON-RPC error answer (an SDK McpServer turns a tool's errors into
// isError results, so the spawned-CLI tests in mcp-proxy.test.ts never see one): createProxyServer
// wired with in-memory transports to a low-level upstream Server whose tools/call answers an error
// carrying the call's argument, and a real Gatehouse (real PostgreSQL) serving the proxy's fixture policy.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createProxyServer } from '../../src/cli/mcp/proxy.js';
import { createClient } from '../../src/client/index.js';
import { agentToken, createTestApp, type TestApp } from '../helpers/app.js';
import { listenLoopback } from '../helpers/http.js';

let t: TestApp;
let client: Client;
const GITHUB_TOKEN = `ghp_${'a1B2c3D4e5'.repeat(4)}`;

beforeAll(async () => {
  t = await createTestApp({ policyDir: 'test/fixtures/policies/mcp-proxy', env: null, database: true });
  const url = `http://127.0.0.1:${await listenLoopback(t.app)}`;
  const upstreamServer = new Server({ name: 'failing-upstream', version: '1.0.0' }, { capabilities: { tools: {} } });
  upstreamServer.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: [] }));
  upstreamServer.setRequestHandler(CallToolRequestSchema, async (request) => {
    const order = String(request.params.arguments?.order);
    throw new McpError(ErrorCode.InternalError, `no order ${order}`, { order });
  });
  const [upClient, upServer] = InMemoryTransport.createLinkedPair();
  await upstreamServer.connect(upServer);
  const upstream = new Client({ name: 'proxy', version: '1.0.0' });
  await upstream.connect(upClient);
  const proxy = createProxyServer({
    upstream,
    gatehouse: createClient({ url, token: agentToken('mcp-errors-1', { team: 'support' }) }),
    prefix: 'demo.',
    runId: 'run-errors',
    maxWaitMs: 0,
    progressEveryMs: 1000,
  });
  const [proxyClient, proxyServer] = InMemoryTransport.createLinkedPair();
  await proxy.connect(proxyServer);
  client = new Client({ name: 'test', version: '1.0.0' });
  await client.connect(proxyClient);
}, 120_000);
afterAll(async () => {
  await client?.close();
  await t?.close();
});

const errorOf = async (order: string): Promise<McpError> => {
  try {
    await client.callTool({ name: 'lookup', arguments: { order } });
  } catch (err) {
    return err as McpError;
  }
  throw new Error('the call did not fail');
};

describe("mcp-proxy: the upstream's error answer through the result guards", () => {
  it('nothing found: relayed as it came (code, message, data)', async () => {
    const err = await errorOf('A1');
    expect(err).toMatchObject({ code: ErrorCode.InternalError, data: { order: 'A1' } });
    // (The upstream's SDK already writes its code into the message; each hop's client adds it again.)
    expect(err.message).toMatch(/^(MCP error -32603: )+no order A1$/);
  });

  it('redact: the message and data with the finding replaced', async () => {
    const err = await errorOf('ann@example.com');
    expect(err.message).toMatch(/^(MCP error -32603: )+no order \[REDACTED:email\]$/);
    expect(err.data).toEqual({ order: '[REDACTED:email]' });
  });

  it('deny: the same code, the message saying the output was withheld, never the value', async () => {
    const err = await errorOf(GITHUB_TOKEN);
    expect(err.code).toBe(ErrorCode.InternalError);
    expect(err.message).toMatch(/The output of the "demo\.lookup" action was withheld by policy/);
    expect(JSON.stringify({ message: err.message, data: err.data })).not.toContain(GITHUB_TOKEN);
    expect(err.data).toEqual({ 'gatehouse/withheld': true });
  });
});
