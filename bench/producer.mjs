// Open-loop producer for the latency runs: publishes at a fixed rate on a schedule (never waits
// for replies), the publish time (µs, CLOCK_MONOTONIC) in each payload. cfg.target: 'stream'
// (XADD in the library's wire format) or 'bullmq' (Queue.add, removeOnComplete).
import { Redis } from 'ioredis';
import { cfg, done, fail } from './lib/child.mjs';
import { makePayload, nowUs, streamFields } from './lib/payload.mjs';

async function main() {
  const { rate, seconds, target } = cfg;
  const total = Math.round(rate * seconds);
  let publish;
  let closer;
  let errors = 0;
  let acked = 0;
  const onOk = () => acked++;
  const onErr = () => errors++;
  if (target === 'bullmq') {
    const { Queue } = await import('bullmq');
    const url = new URL(cfg.url);
    const queue = new Queue(cfg.queue, {
      connection: { host: url.hostname, port: Number(url.port), maxRetriesPerRequest: null },
    });
    await queue.waitUntilReady();
    const opts = { removeOnComplete: true };
    publish = (seq) => queue.add('m', makePayload(seq, nowUs()), opts).then(onOk, onErr);
    closer = () => queue.close();
  } else {
    const redis = new Redis(cfg.url, { enableAutoPipelining: false });
    await redis.ping();
    const stream = cfg.stream;
    publish = (seq) => redis.xadd(stream, '*', ...streamFields(seq, nowUs())).then(onOk, onErr);
    closer = () => redis.quit();
  }

  const start = nowUs();
  let sent = 0;
  let maxBehindMs = 0;
  await new Promise((resolve) => {
    const tick = () => {
      const elapsed = nowUs() - start;
      const due = Math.min(total, Math.floor((elapsed / 1e6) * rate) + 1);
      if (due - sent > 1) maxBehindMs = Math.max(maxBehindMs, ((due - sent - 1) / rate) * 1000);
      while (sent < due) publish(sent++);
      if (sent >= total) resolve();
      else setTimeout(tick, Math.max(0, ((sent / rate) * 1e6 - (nowUs() - start)) / 1000));
    };
    tick();
  });
  const wall = (nowUs() - start) / 1e6;
  const until = Date.now() + 30_000;
  while (acked + errors < sent && Date.now() < until) await new Promise((r) => setTimeout(r, 5));
  await closer();
  return done({ sent, acked, errors, seconds: wall, achievedRate: sent / wall, maxBehindMs });
}

main().catch(fail);
