// What a user would write instead, on the other Node client: a minimal node-redis loop (the `redis`
// package, a dev dependency of the bench only), client defaults (`createClient({ url })`, RESP3 in
// node-redis 6). XREADGROUP COUNT 100 BLOCK 5000, JSON.parse of the `data` field, one awaited
// XACK per batch: the raw ioredis loop's method, the same Sink.
import { createRequire } from 'node:module';
import { cfg, done, fail, next, send, Sink, sleep } from '../lib/child.mjs';

const require = createRequire(import.meta.url);
const { createClient } = require('redis');

const COUNT = 100;
const BLOCK_MS = 5000;

async function main() {
  const client = createClient({ url: cfg.url });
  client.on('error', () => undefined); // a cut at the end; errors of commands reject them
  await client.connect();
  const sink = new Sink(cfg);
  const { stream, group } = cfg;
  const consumer = 'bench-node-redis';
  let errors = 0;
  try {
    await client.xGroupCreate(stream, group, '0', { MKSTREAM: true });
  } catch (err) {
    if (!String(err.message).startsWith('BUSYGROUP')) throw err;
  }
  let stopping = false;
  let parked = false;
  const streams = { key: stream, id: '>' };
  const options = { COUNT, BLOCK: BLOCK_MS };

  const loop = (async () => {
    while (!stopping && sink.handled < sink.target) {
      let reply;
      try {
        parked = true;
        reply = await client.xReadGroup(group, consumer, streams, options);
      } catch {
        parked = false;
        if (stopping) break;
        errors++;
        await sleep(100);
        continue;
      }
      parked = false;
      if (!reply) continue;
      const messages = reply[0].messages;
      const ids = [];
      for (let i = 0; i < messages.length; i++) {
        const m = messages[i];
        try {
          sink.onPayload(JSON.parse(m.message.data));
          ids.push(m.id);
        } catch {
          errors++;
        }
      }
      if (ids.length > 0) {
        try {
          await client.xAck(stream, group, ids);
        } catch {
          errors++;
        }
      }
    }
  })();

  if (cfg.mode === 'latency') {
    await send({ type: 'ready' });
    const { n } = await next('expect');
    sink.expect(n);
  } else if (cfg.mode === 'idle') {
    await sleep(300);
    await send({ type: 'ready' });
    await next('stop');
    stopping = true;
    client.destroy();
    await loop.catch(() => undefined);
    return done({ handled: 0, duplicates: 0, errors, client: clientVersion() });
  }
  await sink.finished;
  // the last batch's XACK is awaited by the loop; a loop already parked on the next read is cut
  while (!parked && sink.handled >= sink.target) {
    const settled = await Promise.race([loop.then(() => true), sleep(1).then(() => false)]);
    if (settled) break;
  }
  stopping = true;
  client.destroy();
  await loop.catch(() => undefined);
  return done({ ...sink.result(), errors, client: clientVersion() });
}

function clientVersion() {
  return `redis ${require('redis/package.json').version} (@redis/client ${require('@redis/client/package.json').version})`;
}

main().catch(fail);
