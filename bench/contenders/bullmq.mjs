// A BullMQ Worker moving the same messages (jobs pre-added with addBulk, removeOnComplete: true).
// cfg.concurrency: the Worker's concurrency.
import { Worker } from 'bullmq';
import { cfg, done, fail, next, send, Sink, sleep } from '../lib/child.mjs';

async function main() {
  const url = new URL(cfg.url);
  const connection = { host: url.hostname, port: Number(url.port), maxRetriesPerRequest: null };
  const sink = new Sink(cfg);
  let errors = 0;
  const worker = new Worker(
    cfg.queue,
    async (job) => {
      sink.onPayload(job.data);
    },
    { connection, concurrency: cfg.concurrency ?? 1 },
  );
  worker.on('failed', () => errors++);
  worker.on('error', () => errors++);
  await worker.waitUntilReady();

  if (cfg.mode === 'latency' || cfg.mode === 'idle') {
    await sleep(300);
    await send({ type: 'ready' });
  }
  if (cfg.mode === 'latency') {
    const { n } = await next('expect');
    sink.expect(n);
  } else if (cfg.mode === 'idle') {
    await next('stop');
    await worker.close();
    return done({ handled: 0, duplicates: 0, errors });
  }
  await sink.finished;
  await worker.close();
  return done({ ...sink.result(), errors });
}

main().catch(fail);
