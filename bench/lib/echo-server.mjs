// @ts-check
// The baseline: a bare Fastify 5 that answers POST /decide with the body it was sent (Fastify's
// default JSON parser and serializer, no logger, no auth, no validation).
import Fastify from 'fastify';

const app = Fastify({ logger: false });
app.post('/decide', async (request) => request.body);
await app.listen({ port: Number(process.env.BENCH_PORT ?? 0), host: '127.0.0.1' });
const port = /** @type {import('node:net').AddressInfo} */ (app.server.address()).port;
if (process.send) process.send({ type: 'listening', port, pid: process.pid });
else process.stderr.write(`listening on ${port}\n`);
let closing = false;
const shutdown = async () => {
  if (closing) return;
  closing = true;
  await app.close();
  process.disconnect?.();
};
process.once('SIGTERM', () => void shutdown());
process.on('disconnect', () => void shutdown());
