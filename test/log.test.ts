// The decision log is written synchronously (src/log.ts): every line is on its file when the logging
// call returns, and nothing waits in a buffer for the event loop.
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, test } from 'vitest';
import { createLogger } from '../src/log.js';

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
    const lines = readFileSync(path, 'utf8').trimEnd().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
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
    expect(readFileSync(path, 'utf8').trimEnd().split('\n').map((l) => (JSON.parse(l) as { msg: string }).msg)).toEqual(['this']);
  } finally {
    closeSync(fd);
  }
});
