// Where a CLI command writes: the process streams in `gatehouse`, buffers in tests.
export interface Io {
  out(text: string): void;
  err(text: string): void;
}

/**
 * A reader that goes away (`gatehouse check | head -1`) is not an error: like the usual Unix
 * tools, the command stops being heard and ends with its own exit code, without a stack trace.
 * Node ignores SIGPIPE, so a closed pipe shows up as an EPIPE `error` event on the stream, which
 * would crash the process if nobody listened. The listener is added on the first write, so a
 * command that never writes (`serve`, whose log writes to descriptor 1 itself) never creates the
 * stream. Any other write error is reported once on stderr and makes the exit code 1.
 */
class ProcessStream {
  private watched = false;
  private gone = false;

  constructor(private readonly stream: () => NodeJS.WriteStream) {}

  /** Set when a write failed for another reason than the reader going away. */
  failure: Error | null = null;

  write(text: string): void {
    const stream = this.stream();
    if (!this.watched) {
      this.watched = true;
      stream.on('error', (err: NodeJS.ErrnoException) => {
        this.gone = true;
        if (err.code === 'EPIPE' || err.code === 'ERR_STREAM_DESTROYED' || this.failure !== null) return;
        this.failure = err;
        if (stream !== process.stderr) process.stderr.write(`gatehouse: cannot write the output: ${err.message}\n`);
      });
    }
    if (!this.gone) stream.write(text);
  }
}

const stdout = new ProcessStream(() => process.stdout);
const stderr = new ProcessStream(() => process.stderr);

export const processIo: Io = {
  out: (text) => stdout.write(text),
  err: (text) => stderr.write(text),
};

/** Whether writing to the process's stdout or stderr failed other than by its reader going away. */
export function processOutputFailed(): boolean {
  return stdout.failure !== null || stderr.failure !== null;
}

/** Exit codes shared by the commands (Cerbos-style: 2 = the input files are bad). */
export const EXIT = { ok: 0, failed: 1, invalid: 2 } as const;
