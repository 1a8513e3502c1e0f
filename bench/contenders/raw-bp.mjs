// The best-practice hand-written ioredis loop: the raw loop's read and handler work (XREADGROUP
// COUNT 100 BLOCK 5000, JSON.parse of the `data` field, the same Sink), but the XACK of batch N
// is not awaited before the read of batch N+1: both go out together, one round trip for the two
// (the XACK first, so the server has acked the batch before the read parks). The ack's reply is
// awaited before the next ack and at the end, so an ack error is counted and nothing is cut.
// cfg.ioredis: the ioredis package directory to load (default: the project's).
import { createRequire } from 'node:module';
import { cfg, done, fail, next, send, Sink, sleep } from '../lib/child.mjs';

const require = createRequire(import.meta.url);
const ioredisDir = cfg.ioredis ?? 'ioredis';
const { Redis } = require(ioredisDir);

const COUNT = 100;
const BLOCK_MS = 5000;

async function main() {
  const redis = new Redis(cfg.url, { enableAutoPipelining: false });
  const sink = new Sink(cfg);
  const { stream, group } = cfg;
  const consumer = 'bench-raw-bp';
  let errors = 0;
  try {
    await redis.xgroup('CREATE', stream, group, '0', 'MKSTREAM');
  } catch (err) {
    if (!String(err.message).startsWith('BUSYGROUP')) throw err;
  }
  let stopping = false;
  let parked = false;
  /** The XACK in flight (sent with the read after it), or null. */
  let acking = null;
  const countError = () => {
    errors++;
  };

  const loop = (async () => {
    while (!stopping && sink.handled < sink.target) {
      let reply;
      try {
        parked = true;
        // sent right after the XACK of the previous batch, without waiting for its reply
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
      // the previous XACK's reply came before this read's (one connection, in order)
      if (acking) await acking;
      acking = ids.length > 0 ? redis.xack(stream, group, ...ids).catch(countError) : null;
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
  // the last batch's XACK went out with the next read: wait for that read to be sent (parked) and
  // for the XACK's reply, then cut the parked read
  for (;;) {
    if (parked) break;
    const settled = await Promise.race([loop.then(() => true), sleep(1).then(() => false)]);
    if (settled) break;
  }
  if (acking) await acking;
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
