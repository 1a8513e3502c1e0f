// The practical limit: a minimal hand-written ioredis consumer loop.
// XREADGROUP COUNT 100 BLOCK 5000, JSON.parse of the `data` field, one XACK per batch (awaited).
// cfg.concurrency > 1 with cfg.handler 'sleep1' is the same loop with N handlers at once.
// cfg.ioredis: the ioredis package directory to load (an A/B of ioredis releases; default: the
// project's); cfg.protocol: 2 or 3 (RESP version; default: the client's own).
import { createRequire } from 'node:module';
import { cfg, done, fail, next, send, Sink, sleep, sleep1 } from '../lib/child.mjs';

const require = createRequire(import.meta.url);
const ioredisDir = cfg.ioredis ?? 'ioredis';
const { Redis } = require(ioredisDir);

const COUNT = 100;
const BLOCK_MS = 5000;

async function main() {
  const redis = new Redis(cfg.url, {
    enableAutoPipelining: false,
    ...(cfg.protocol ? { protocol: cfg.protocol } : {}),
  });
  const sink = new Sink(cfg);
  const { stream, group } = cfg;
  const consumer = 'bench-raw';
  let errors = 0;
  try {
    await redis.xgroup('CREATE', stream, group, '0', 'MKSTREAM');
  } catch (err) {
    if (!String(err.message).startsWith('BUSYGROUP')) throw err;
  }
  const sleepy = cfg.handler === 'sleep1';
  const concurrency = cfg.concurrency ?? 1;
  let stopping = false;
  let parked = false;

  const loop = (async () => {
    while (!stopping && sink.handled < sink.target) {
      let reply;
      try {
        parked = true;
        reply = await redis.xreadgroup(
          'GROUP',
          group,
          consumer,
          'COUNT',
          COUNT,
          'BLOCK',
          BLOCK_MS,
          'STREAMS',
          stream,
          '>',
        );
      } catch {
        parked = false;
        if (stopping) break;
        errors++;
        await sleep(100);
        continue;
      }
      parked = false;
      if (!reply) continue;
      const entries = reply[0][1];
      const ids = [];
      const handleOne = async (entry) => {
        const fields = entry[1];
        let data;
        for (let i = 0; i + 1 < fields.length; i += 2)
          if (fields[i] === 'data') data = fields[i + 1];
        try {
          const payload = JSON.parse(data);
          if (sleepy) await sleep1();
          sink.onPayload(payload);
          ids.push(entry[0]);
        } catch {
          errors++;
        }
      };
      if (concurrency === 1 && !sleepy) {
        for (let i = 0; i < entries.length; i++) {
          const entry = entries[i];
          const fields = entry[1];
          let data;
          for (let j = 0; j + 1 < fields.length; j += 2)
            if (fields[j] === 'data') data = fields[j + 1];
          try {
            sink.onPayload(JSON.parse(data));
            ids.push(entry[0]);
          } catch {
            errors++;
          }
        }
      } else {
        let k = 0;
        const worker = async () => {
          while (k < entries.length) await handleOne(entries[k++]);
        };
        await Promise.all(Array.from({ length: Math.min(concurrency, entries.length) }, worker));
      }
      if (ids.length > 0) {
        try {
          await redis.xack(stream, group, ...ids);
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
    redis.disconnect();
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
  redis.disconnect();
  await loop.catch(() => undefined);
  return done({ ...sink.result(), errors, client: clientVersion() });
}

/** The ioredis this child loaded (its package.json next to the resolved entry). */
function clientVersion() {
  return `ioredis ${require(`${ioredisDir}/package.json`).version}`;
}

main().catch(fail);
