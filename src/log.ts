// The process logger, which carries the decision log (one line per decision, docs/spec.md section 5).
//
// Written synchronously: a line is on its file descriptor before the decision's answer is sent, so
// the audit trail survives a crash, and a slow reader slows the service down instead of filling its
// memory. pino's default stdout destination is asynchronous with an unbounded buffer: under
// sustained load the event loop rarely ran the write callbacks, and ~70 MB of unwritten lines piled
// up in 30 s, all of it lost had the process died.
//
// Best effort when the descriptor cannot take a line (like OPA's decision logs): a non-blocking
// pipe or socket whose reader stopped reading answers EAGAIN, and pino's own synchronous
// destination would then sleep and retry, holding the event loop. Here the line waits instead, in
// order, and is retried every RETRY_MS; while anything waits, new lines queue behind it; past
// MAX_PENDING_BYTES, lines are dropped and counted (`dropped`, the metric
// gatehouse_log_lines_dropped_total). A closed reader (EPIPE) or any other write error drops the
// line, counted too. /decide keeps answering either way. (A descriptor in blocking mode, such as a
// file or most pipes a container runtime hands over, never answers EAGAIN: there a reader that stops
// reading blocks the write, as before.)
//
// LOG_FORMAT=pretty renders each line with pino-pretty's formatter before it reaches the sink: the
// same synchronous, bounded path and the same fields, only readable by a person at a terminal.
import { writeSync } from 'node:fs';
import pino, { type DestinationStream, type Logger } from 'pino';
import { prettyFactory } from 'pino-pretty';
import type { LogFormat } from './config.js';

const MAX_PENDING_BYTES = 4 * 1024 * 1024;
const RETRY_MS = 10;
/** How long flush() waits for a descriptor that keeps answering EAGAIN before dropping what waits. */
const FLUSH_WAIT_MS = 2_000;

export class LogSink {
  private readonly pending: Buffer[] = [];
  private pendingBytes = 0;
  private retry: NodeJS.Timeout | null = null;
  private droppedLines = 0;

  constructor(
    private readonly fd: number,
    private readonly maxPendingBytes = MAX_PENDING_BYTES,
  ) {}

  /** Lines dropped so far: the descriptor failed, or too much was already waiting. */
  get dropped(): number {
    return this.droppedLines;
  }

  /** pino's stream interface: one call per line. */
  write(line: string): boolean {
    if (this.pendingBytes > 0) {
      this.enqueue(Buffer.from(line, 'utf8'));
      return true;
    }
    let written: number;
    try {
      written = writeSync(this.fd, line, null, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EAGAIN') this.enqueue(Buffer.from(line, 'utf8'));
      else this.droppedLines++;
      return true;
    }
    // A short write (a pipe with a little room left): the rest of the line waits.
    if (written < Buffer.byteLength(line, 'utf8')) this.enqueue(Buffer.from(line, 'utf8').subarray(written));
    return true;
  }

  /** Writes what waits before returning, giving a stuck reader FLUSH_WAIT_MS (pino's logger.flush()). */
  flush(callback?: (err?: Error) => void): void {
    const deadline = Date.now() + FLUSH_WAIT_MS;
    while (!this.writePending() && Date.now() < deadline) sleep(RETRY_MS);
    if (this.pendingBytes > 0) this.dropPending();
    callback?.();
  }

  private enqueue(bytes: Buffer): void {
    if (this.pendingBytes + bytes.length > this.maxPendingBytes) {
      this.droppedLines++;
      return;
    }
    this.pending.push(bytes);
    this.pendingBytes += bytes.length;
    if (this.retry === null) this.retryLater();
  }

  private retryLater(): void {
    this.retry = setTimeout(this.onRetry, RETRY_MS);
    this.retry.unref(); // a stuck reader must not keep the process alive; exit flushes
  }

  private readonly onRetry = (): void => {
    this.retry = null;
    if (!this.writePending()) this.retryLater();
  };

  /** Writes waiting bytes in order; false while the descriptor still answers EAGAIN. */
  private writePending(): boolean {
    while (this.pending.length > 0) {
      const head = this.pending[0]!; // length > 0
      let written: number;
      try {
        written = writeSync(this.fd, head);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'EAGAIN') return false;
        this.dropPending(); // EPIPE, EBADF…: nothing that waits can be written any more
        return true;
      }
      this.pendingBytes -= written;
      if (written < head.length) this.pending[0] = head.subarray(written);
      else this.pending.shift();
    }
    return true;
  }

  private dropPending(): void {
    // Lines are counted, not bytes: a waiting buffer holds one line, or the tail of one.
    this.droppedLines += this.pending.length;
    this.pending.length = 0;
    this.pendingBytes = 0;
  }
}

const sleeper = new Int32Array(new SharedArrayBuffer(4));
function sleep(ms: number): void {
  Atomics.wait(sleeper, 0, 0, ms);
}

export interface LogOutput {
  /** JSON lines (the default), or pino-pretty's one readable line per entry. */
  readonly format?: LogFormat;
  /** Pretty only: ANSI colours (src/service.ts: when stdout is a terminal and NO_COLOR is not set). */
  readonly colorize?: boolean;
}

/** The process logger on `sink` (or on a new sink for that file descriptor). */
export function createLogger(level: string, sink: LogSink | number = 1, output: LogOutput = {}): Logger {
  const target = typeof sink === 'number' ? new LogSink(sink) : sink;
  return pino(
    { level, base: { service: 'gatehouse' } },
    output.format === 'pretty' ? prettyStream(target, output.colorize ?? false) : target,
  );
}

/**
 * pino's JSON line, formatted by pino-pretty in the same call and written to the sink: nothing is
 * buffered on the way (pino-pretty's own stream would add a transform stream and its destination).
 */
function prettyStream(
  sink: LogSink,
  colorize: boolean,
): DestinationStream & { flush(callback?: (err?: Error) => void): void } {
  const format = prettyFactory({ colorize, singleLine: true, translateTime: 'SYS:HH:MM:ss.l' });
  return {
    write: (line: string) => sink.write(format(line)),
    flush: (callback?: (err?: Error) => void) => sink.flush(callback),
  };
}
