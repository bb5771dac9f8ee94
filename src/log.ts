// The process logger, which carries the decision log (one line per decision, SPEC section 5).
//
// Written synchronously: a line is on its file descriptor before the decision's answer is sent, so
// the audit trail survives a crash, and a slow reader slows the service down instead of filling its
// memory. pino's default stdout destination is asynchronous with an unbounded buffer: under
// sustained load the event loop rarely ran the write callbacks, and ~70 MB of unwritten lines piled
// up in 30 s (the "peak RSS" of issue 5), all of it lost had the process died.
import pino, { type Logger } from 'pino';

export function createLogger(level: string, fd = 1): Logger {
  return pino({ level, base: { service: 'gatehouse' } }, pino.destination({ dest: fd, sync: true }));
}
