// A reader of server-sent events (GET /approvals/stream) for tests: the events as they arrive, and
// a wait for the first one that matches, bounded by a timeout (a bound on a hang, not a measurement).
export interface SseEvent {
  event: string;
  data: string;
}

export interface SseStream {
  readonly status: number;
  readonly headers: Headers;
  /** Every event received so far, in order. */
  readonly events: SseEvent[];
  /** The first event (received or to come) for which `match` holds; rejects after timeoutMs. */
  next(match: (e: SseEvent) => boolean, timeoutMs?: number): Promise<SseEvent>;
  /** Resolves when the server ends the stream. */
  readonly ended: Promise<void>;
  close(): void;
}

export async function openStream(url: string, token: string): Promise<SseStream> {
  const abort = new AbortController();
  const res = await fetch(url, { headers: { authorization: `Bearer ${token}` }, signal: abort.signal });
  const events: SseEvent[] = [];
  const waiters = new Set<() => void>();
  let buffer = '';
  let finished = false;
  const decoder = new TextDecoder();
  const ended = (async () => {
    if (res.body === null) return;
    const reader = res.body.getReader();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return;
        buffer += decoder.decode(value, { stream: true });
        for (let end = buffer.indexOf('\n\n'); end !== -1; end = buffer.indexOf('\n\n')) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          let event = 'message';
          const data: string[] = [];
          for (const line of block.split('\n')) {
            if (line.startsWith('event: ')) event = line.slice(7);
            else if (line.startsWith('data: ')) data.push(line.slice(6));
          }
          if (data.length > 0) events.push({ event, data: data.join('\n') });
        }
        for (const w of [...waiters]) w();
      }
    } catch {
      // aborted by close()
    } finally {
      finished = true;
      for (const w of [...waiters]) w();
    }
  })();
  return {
    status: res.status,
    headers: res.headers,
    events,
    ended,
    next(match, timeoutMs = 10_000) {
      return new Promise((resolve, reject) => {
        const check = (): void => {
          const found = events.find(match);
          if (found !== undefined) {
            done();
            resolve(found);
          } else if (finished) {
            done();
            reject(new Error(`the stream ended without the event; got ${JSON.stringify(events)}`));
          }
        };
        const timer = setTimeout(() => {
          done();
          reject(new Error(`no such event within ${timeoutMs} ms; got ${JSON.stringify(events)}`));
        }, timeoutMs);
        const done = (): void => {
          clearTimeout(timer);
          waiters.delete(check);
        };
        waiters.add(check);
        check();
      });
    },
    close: () => abort.abort(),
  };
}
