// Where a CLI command writes: the process streams in `gatehouse`, buffers in tests.
export interface Io {
  out(text: string): void;
  err(text: string): void;
}

export const processIo: Io = {
  out: (text) => process.stdout.write(text),
  err: (text) => process.stderr.write(text),
};

/** Exit codes shared by the commands (Cerbos-style: 2 = the input files are bad). */
export const EXIT = { ok: 0, failed: 1, invalid: 2 } as const;
