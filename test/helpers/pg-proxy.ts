// A TCP proxy in front of a real PostgreSQL that injects the faults a commit must survive, at the
// first COMMIT a client sends once armed:
// - 'cut-after-commit': the COMMIT reaches the server, every answer before COMMIT's own reaches the
//   client, then the connection closes (the server commits; the client never hears so);
// - 'hold-commit': this connection's COMMIT is held (not sent) while every other connection works;
// - 'dark-after-commit' / 'dark-before-commit': the whole link goes dark (bytes held both ways,
//   nothing closed, new connections too), with the COMMIT already at the server, or held.
// `light()` ends the dark and sends what was held. It reads the protocol only far enough to find a
// COMMIT (the simple query `commit`, or an Execute of a statement whose Parse said `commit`) and its
// CommandComplete: https://www.postgresql.org/docs/current/protocol-message-formats.html
import { createServer, connect, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

export type CommitFault = 'cut-after-commit' | 'hold-commit' | 'dark-after-commit' | 'dark-before-commit';

export interface PgProxy {
  /** A connection URL like the target's, through the proxy. */
  url: string;
  /** The fault for the next COMMIT any connection sends. */
  arm(fault: CommitFault): void;
  /** Resolves when the armed fault has struck. */
  struck(): Promise<void>;
  /** Ends the dark (and releases a held COMMIT): held bytes flow again in both directions. */
  light(): void;
  close(): Promise<void>;
}

interface Pair {
  client: Socket;
  server: Socket;
  /** This connection's bytes are held: both ways in the dark, only towards the server from a held COMMIT. */
  held: boolean;
  heldToClient: boolean;
  toServer: Buffer[];
  toClient: Buffer[];
}

const SSL_REQUEST = 80877103;
const GSSENC_REQUEST = 80877104;

/** Splits a byte stream into protocol messages; `untyped` counts leading messages without a type byte. */
function framer(untypedFirst: boolean) {
  let buffer: Buffer = Buffer.alloc(0);
  let startup = untypedFirst;
  return (chunk: Buffer, each: (type: string, body: Buffer, raw: Buffer) => void): void => {
    buffer = buffer.length === 0 ? chunk : Buffer.concat([buffer, chunk]);
    let at = 0;
    for (;;) {
      if (startup) {
        if (buffer.length - at < 8) break;
        const length = buffer.readInt32BE(at);
        if (buffer.length - at < length) break;
        const code = buffer.readInt32BE(at + 4);
        each('', buffer.subarray(at + 4, at + length), buffer.subarray(at, at + length));
        at += length;
        if (code !== SSL_REQUEST && code !== GSSENC_REQUEST) startup = false;
        continue;
      }
      if (buffer.length - at < 5) break;
      const length = buffer.readInt32BE(at + 1);
      if (buffer.length - at < 1 + length) break;
      each(
        String.fromCharCode(buffer[at]!),
        buffer.subarray(at + 5, at + 1 + length),
        buffer.subarray(at, at + 1 + length),
      );
      at += 1 + length;
    }
    buffer = buffer.subarray(at);
  };
}

export async function startPgProxy(targetUrl: string): Promise<PgProxy> {
  const target = new URL(targetUrl);
  const pairs = new Set<Pair>();
  let armed: CommitFault | null = null;
  let dark = false;
  let onStruck: () => void = () => {};
  let struck = Promise.resolve();

  const listener: Server = createServer((client) => {
    const server = connect({ host: target.hostname, port: Number(target.port) });
    const pair: Pair = { client, server, held: dark, heldToClient: dark, toServer: [], toClient: [] };
    pairs.add(pair);
    const statements = new Map<string, string>(); // prepared statement name → text
    const portals = new Map<string, string>(); // portal name → statement text
    let cutAtCommitReply = false;
    const fromClient = framer(true);
    const fromServer = framer(false);

    const send = (to: 'server' | 'client', raw: Buffer): void => {
      if (to === 'server') {
        if (pair.held) pair.toServer.push(raw);
        else server.write(raw);
      } else if (pair.heldToClient) pair.toClient.push(raw);
      else client.write(raw);
    };
    const end = (): void => {
      pairs.delete(pair);
      client.destroy();
      server.destroy();
    };
    server.on('error', end);
    client.on('error', end);
    server.on('close', () => {
      if (!pair.heldToClient) end();
    });
    client.on('close', end);

    server.on('data', (chunk: Buffer) => {
      fromServer(chunk, (type, body, raw) => {
        if (cutAtCommitReply && type === 'C' && body.toString('utf8', 0, 6) === 'COMMIT') {
          cutAtCommitReply = false;
          client.destroy();
          server.end();
          pairs.delete(pair);
          return;
        }
        if (!client.destroyed) send('client', raw);
      });
    });
    client.on('data', (chunk: Buffer) => {
      // A COMMIT is held whole, from the first message of its query (its Parse or Bind): a link drops
      // packets, not the middle of one write.
      const messages: { raw: Buffer; commit: boolean; queryStart: boolean }[] = [];
      let queryStart = true;
      fromClient(chunk, (type, body, raw) => {
        if (type === '' && (body.readInt32BE(0) === SSL_REQUEST || body.readInt32BE(0) === GSSENC_REQUEST)) {
          client.write('N'); // refused: tests connect in the clear
          return;
        }
        // Every message is read (the statements a later COMMIT names are prepared before it is armed).
        messages.push({ raw, commit: isCommit(type, body, statements, portals), queryStart });
        queryStart = type === 'S' || type === 'Q' || type === '';
      });
      const at = armed === null ? -1 : messages.findIndex((m) => m.commit);
      if (at < 0) {
        for (const m of messages) send('server', m.raw);
        return;
      }
      const fault = armed!;
      armed = null;
      let start = at;
      while (start > 0 && !messages[start]!.queryStart) start--;
      messages.forEach((m, i) => {
        if (i === start) {
          if (fault === 'cut-after-commit') cutAtCommitReply = true;
          if (fault === 'hold-commit' || fault === 'dark-before-commit') pair.held = true;
          if (fault === 'dark-before-commit') goDark();
        }
        send('server', m.raw);
      });
      if (fault === 'dark-after-commit') goDark();
      onStruck();
    });
  });
  const goDark = (): void => {
    dark = true;
    for (const pair of pairs) pair.held = pair.heldToClient = true;
  };
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
  const url = new URL(targetUrl);
  url.hostname = '127.0.0.1';
  url.port = String((listener.address() as AddressInfo).port);

  return {
    url: url.toString(),
    arm(fault) {
      armed = fault;
      struck = new Promise<void>((resolve) => (onStruck = resolve));
    },
    struck: () => struck,
    light() {
      dark = false;
      for (const pair of pairs) {
        if (!pair.held && !pair.heldToClient) continue;
        pair.held = pair.heldToClient = false;
        for (const raw of pair.toServer.splice(0)) if (!pair.server.destroyed) pair.server.write(raw);
        for (const raw of pair.toClient.splice(0)) if (!pair.client.destroyed) pair.client.write(raw);
        if (pair.server.destroyed) pair.client.destroy();
      }
    },
    async close() {
      for (const pair of pairs) {
        pair.client.destroy();
        pair.server.destroy();
      }
      pairs.clear();
      await new Promise<void>((resolve) => listener.close(() => resolve()));
    },
  };
}

const cstrings = (body: Buffer, count: number): string[] => {
  const out: string[] = [];
  let at = 0;
  for (let i = 0; i < count; i++) {
    const end = body.indexOf(0, at);
    if (end < 0) break;
    out.push(body.toString('utf8', at, end));
    at = end + 1;
  }
  return out;
};

const COMMIT = /^\s*commit\s*;?\s*$/i;

function isCommit(type: string, body: Buffer, statements: Map<string, string>, portals: Map<string, string>): boolean {
  switch (type) {
    case 'Q':
      return COMMIT.test(cstrings(body, 1)[0] ?? '');
    case 'P': {
      const [name = '', text = ''] = cstrings(body, 2);
      statements.set(name, text);
      return false;
    }
    case 'B': {
      const [portal = '', statement = ''] = cstrings(body, 2);
      portals.set(portal, statements.get(statement) ?? '');
      return false;
    }
    case 'E':
      return COMMIT.test(portals.get(cstrings(body, 1)[0] ?? '') ?? '');
    default:
      return false;
  }
}
