// The decision log is written synchronously (src/log.ts): every line is on its file when the logging
// call returns, and nothing waits in a buffer for the event loop. A descriptor that cannot take a
// line (EAGAIN, a reader gone) never blocks the process: lines wait in order, bounded, or are dropped
// and counted.
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, test } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.js';
import { createLogger, LogSink } from '../src/log.js';
import { createMetrics } from '../src/engine/metrics.js';
import type { LivePolicies } from '../src/policy/live.js';

const dir = mkdtempSync(join(tmpdir(), 'gatehouse-log-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test('each line is written before the call returns, in order, as one JSON object per line', () => {
  const path = join(dir, 'decisions.log');
  const fd = openSync(path, 'w');
  try {
    const logger = createLogger('info', fd);
    for (let i = 0; i < 10_000; i++) {
      logger.info({ decision_id: String(i), decision: 'allow' }, 'decision');
      // No await, no flush: a synchronous read sees the line at once.
      if (i % 2_500 === 0) expect(readFileSync(path, 'utf8').trimEnd().split('\n')).toHaveLength(i + 1);
    }
    const lines = readFileSync(path, 'utf8')
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines).toHaveLength(10_000);
    expect(lines.map((l) => l['decision_id'])).toEqual(Array.from({ length: 10_000 }, (_, i) => String(i)));
    expect(lines[0]).toMatchObject({ level: 30, service: 'gatehouse', decision: 'allow', msg: 'decision' });
  } finally {
    closeSync(fd);
  }
});

test('below the configured level nothing is written', () => {
  const path = join(dir, 'quiet.log');
  const fd = openSync(path, 'w');
  try {
    const logger = createLogger('warn', fd);
    logger.info('not this');
    logger.warn('this');
    expect(
      readFileSync(path, 'utf8')
        .trimEnd()
        .split('\n')
        .map((l) => (JSON.parse(l) as { msg: string }).msg),
    ).toEqual(['this']);
  } finally {
    closeSync(fd);
  }
});

/** A connected pair of local stream sockets: the writer's descriptor (non-blocking, as libuv opens
 * sockets) and the reader's socket, paused so that nothing is read until the test says so. */
async function socketPair(name: string): Promise<{ fd: number; reader: Socket; server: Server; writer: Socket }> {
  const path = join(dir, name);
  let accepted!: (s: Socket) => void;
  const readerReady = new Promise<Socket>((resolve) => (accepted = resolve));
  const server = createServer((s) => {
    s.pause();
    accepted(s);
  });
  await new Promise<void>((resolve) => server.listen(path, resolve));
  const writer = connect(path);
  await new Promise<void>((resolve) => writer.once('connect', () => resolve()));
  const reader = await readerReady;
  // The descriptor under the writer's libuv handle; only the sink writes to it.
  const fd = (writer as unknown as { _handle: { fd: number } })._handle.fd;
  return { fd, reader, server, writer };
}

test('a reader that stops reading never blocks: lines wait in order, the excess is dropped and counted, the rest arrives', async () => {
  const { fd, reader, server, writer } = await socketPair('stuck.sock');
  try {
    const sink = new LogSink(fd, 64 * 1024);
    const logger = createLogger('info', sink);
    const total = 20_000; // ~2.5 MB of lines: far more than the socket buffer and the 64 KiB bound
    const note = 'x'.repeat(60);
    for (let i = 0; i < total; i++) logger.info({ i, note }, 'decision');
    expect(sink.dropped).toBeGreaterThan(0);
    expect(sink.dropped).toBeLessThan(total);

    let received = '';
    reader.setEncoding('utf8');
    reader.on('data', (chunk: string) => (received += chunk));
    reader.resume();
    const want = total - sink.dropped;
    for (let waited = 0; received.split('\n').length - 1 < want; waited += 10) {
      if (waited > 10_000) throw new Error(`only ${received.split('\n').length - 1} of ${want} lines arrived`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const lines = received
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as { i: number });
    expect(lines).toHaveLength(want);
    // In order, whole lines only: what was dropped is whole lines, never a piece of one.
    for (let k = 1; k < lines.length; k++) expect(lines[k]!.i).toBeGreaterThan(lines[k - 1]!.i);
    expect(lines[0]!.i).toBe(0);
  } finally {
    writer.destroy();
    reader.destroy();
    server.close();
  }
});

test('a reader that went away (EPIPE): every line is dropped and counted, nothing throws', async () => {
  const { fd, reader, server, writer } = await socketPair('gone.sock');
  try {
    const ended = new Promise((resolve) => writer.once('end', resolve));
    writer.resume();
    reader.destroy();
    await ended; // the reader's side is closed: from now on a write fails with EPIPE
    const sink = new LogSink(fd);
    const logger = createLogger('info', sink);
    for (let i = 0; i < 100; i++) logger.info({ i }, 'decision');
    expect(sink.dropped).toBe(100);
  } finally {
    writer.destroy();
    server.close();
  }
});

test('dropped lines are the metric gatehouse_log_lines_dropped_total', async () => {
  let dropped = 0;
  const policies = { current: () => ({ files: [] }), loadedAt: () => new Date() } as unknown as LivePolicies;
  const metrics = createMetrics(policies, { defaultMetrics: false, logLinesDropped: () => dropped });
  expect(await metrics.registry.metrics()).toMatch(/^gatehouse_log_lines_dropped_total 0$/m);
  dropped = 7;
  expect(await metrics.registry.metrics()).toMatch(/^gatehouse_log_lines_dropped_total 7$/m);
  dropped = 9;
  expect(await metrics.registry.metrics()).toMatch(/^gatehouse_log_lines_dropped_total 9$/m);
});

test('LOG_FORMAT=pretty: one readable line per entry, written before the call returns, with every field; no colour unless asked', () => {
  const path = join(dir, 'pretty.log');
  const fd = openSync(path, 'w');
  try {
    const logger = createLogger('info', fd, { format: 'pretty' });
    logger.info(
      { decision_id: 'd-1', decision: 'deny', tool: 'refund', rule: 'payments#default', user: 'agent-7' },
      'decision',
    );
    // No flush: the line is on the file at once, as in JSON.
    const [line, ...rest] = readFileSync(path, 'utf8').split('\n');
    expect(rest).toEqual(['']);
    expect(() => JSON.parse(line!)).toThrow();
    expect(line).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: decision \{/);
    const fields = JSON.parse(line!.slice(line!.indexOf('{'))) as Record<string, unknown>;
    expect(fields).toEqual({
      service: 'gatehouse',
      decision_id: 'd-1',
      decision: 'deny',
      tool: 'refund',
      rule: 'payments#default',
      user: 'agent-7',
    });
    expect(line).not.toMatch(/\x1b\[/);
    logger.warn('a warning');
    logger.debug('below the level');
    expect(readFileSync(path, 'utf8').trimEnd().split('\n').at(-1)).toMatch(/\] WARN: a warning/);
    expect(readFileSync(path, 'utf8')).not.toContain('below the level');
  } finally {
    closeSync(fd);
  }
  const coloured = join(dir, 'coloured.log');
  const cfd = openSync(coloured, 'w');
  try {
    createLogger('info', cfd, { format: 'pretty', colorize: true }).info('hello');
    expect(readFileSync(coloured, 'utf8')).toMatch(/\x1b\[32mINFO\x1b\[39m/);
  } finally {
    closeSync(cfd);
  }
});

test('LOG_FORMAT=json is the JSON of the default', () => {
  const path = join(dir, 'json.log');
  const fd = openSync(path, 'w');
  try {
    createLogger('info', fd, { format: 'json' }).info({ decision: 'allow' }, 'decision');
    expect(JSON.parse(readFileSync(path, 'utf8'))).toMatchObject({
      level: 30,
      service: 'gatehouse',
      decision: 'allow',
      msg: 'decision',
    });
  } finally {
    closeSync(fd);
  }
});

test('pretty lines go through the same bounded sink: a stuck reader never blocks, the excess is dropped and counted', async () => {
  const { fd, reader, server, writer } = await socketPair('pretty-stuck.sock');
  try {
    const sink = new LogSink(fd, 64 * 1024);
    const logger = createLogger('info', sink, { format: 'pretty' });
    for (let i = 0; i < 20_000; i++) logger.info({ i, note: 'x'.repeat(60) }, 'decision');
    expect(sink.dropped).toBeGreaterThan(0);
    expect(sink.dropped).toBeLessThan(20_000);
  } finally {
    writer.destroy();
    reader.destroy();
    server.close();
  }
});

test('LOG_FORMAT is read by loadConfig: pretty, json, or unset (null: the service picks by the terminal); anything else is a problem', () => {
  expect(loadConfig({}).logFormat).toBeNull();
  expect(loadConfig({ LOG_FORMAT: 'pretty' }).logFormat).toBe('pretty');
  expect(loadConfig({ LOG_FORMAT: 'json' }).logFormat).toBe('json');
  for (const v of ['PRETTY', 'text', 'yaml', ' json']) {
    expect(() => loadConfig({ LOG_FORMAT: v }), v).toThrow(ConfigError);
    expect(() => loadConfig({ LOG_FORMAT: v })).toThrow(/LOG_FORMAT must be one of pretty, json/);
  }
});
