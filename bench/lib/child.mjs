// Child-side plumbing shared by every contender: its config (BENCH_CHILD, JSON), IPC with the
// runner, and the Sink that counts, dedups and times what the handler sees.
import { performance } from 'node:perf_hooks';
import { nowUs } from './payload.mjs';

export const cfg = JSON.parse(process.env.BENCH_CHILD ?? '{}');
// cfg: { mode: 'drain'|'memory'|'latency'|'idle', url, stream, group, queue, n, capacity,
//        warmupSeq, memEvery, variant, concurrency, handler: 'noop'|'sleep1' }

const waiters = new Map();
const inbox = [];
process.on('message', (msg) => {
  const w = waiters.get(msg.type);
  if (w) {
    waiters.delete(msg.type);
    w(msg);
  } else inbox.push(msg);
});
// the runner going away ends the child
process.on('disconnect', () => process.exit(3));

export function send(msg) {
  return new Promise((resolve) => process.send(msg, () => resolve()));
}

export function next(type) {
  const i = inbox.findIndex((m) => m.type === type);
  if (i >= 0) return Promise.resolve(inbox.splice(i, 1)[0]);
  return new Promise((resolve) => waiters.set(type, resolve));
}

export async function done(result) {
  const cpu = process.cpuUsage();
  await send({ type: 'result', ...result, procCpuSeconds: (cpu.user + cpu.system) / 1e6 });
  process.exit(0);
}

export async function fail(err) {
  await send({ type: 'result', fatal: String(err?.stack ?? err) });
  process.exit(1);
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** The "user handler" of every contender: O(1) per entry, no allocation in drain mode. */
export class Sink {
  constructor({ mode, n, capacity, warmupSeq = 0, memEvery = 0 }) {
    this.mode = mode;
    this.handled = 0;
    this.duplicates = 0;
    this.target = mode === 'latency' || mode === 'idle' ? Infinity : n;
    this.seen = new Uint8Array(mode === 'latency' ? capacity : mode === 'idle' ? 0 : n);
    this.lat = mode === 'latency' ? new Float64Array(capacity) : null;
    this.latCount = 0;
    this.warmupSeq = warmupSeq;
    this.memEvery = memEvery;
    this.mem = [];
    this.t0 = 0;
    this.t1 = 0;
    this.cpu0 = null;
    this.cpu1 = null;
    this.finished = new Promise((resolve) => (this.resolve = resolve));
  }

  onPayload(p) {
    const h = ++this.handled;
    if (h === 1) {
      this.t0 = performance.now();
      this.cpu0 = process.cpuUsage();
    }
    const seq = p.seq;
    if (seq < this.seen.length) {
      if (this.seen[seq] === 1) this.duplicates++;
      else this.seen[seq] = 1;
    }
    if (this.lat !== null && seq >= this.warmupSeq && this.latCount < this.lat.length) {
      this.lat[this.latCount++] = nowUs() - p.t;
    }
    if (this.memEvery > 0 && h % this.memEvery === 0) {
      const m = process.memoryUsage();
      this.mem.push({ handled: h, rss: m.rss, heapUsed: m.heapUsed, external: m.external });
    }
    if (h === this.target) this.finish();
  }

  /** Latency runs: the runner says how many were published. */
  expect(n) {
    this.target = n;
    if (this.handled >= n) this.finish();
  }

  finish() {
    if (this.t1 !== 0) return;
    this.t1 = performance.now();
    this.cpu1 = process.cpuUsage(this.cpu0 ?? undefined);
    this.resolve();
  }

  result() {
    const seconds = (this.t1 - this.t0) / 1000;
    const out = {
      handled: this.handled,
      duplicates: this.duplicates,
      seconds,
      cpuSeconds: this.cpu1 ? (this.cpu1.user + this.cpu1.system) / 1e6 : null,
      mem: this.mem,
    };
    if (this.lat) {
      const sorted = this.lat.subarray(0, this.latCount).sort();
      out.latencyUs = sorted.length ? summarize(sorted) : null;
    }
    return out;
  }
}

function summarize(sorted) {
  const at = (p) =>
    sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
  let sum = 0;
  for (const x of sorted) sum += x;
  return {
    count: sorted.length,
    mean: sum / sorted.length,
    p50: at(50),
    p90: at(90),
    p99: at(99),
    p999: at(99.9),
    max: sorted[sorted.length - 1],
  };
}

/** A 1 ms async handler body (the `concurrency: 16` workload). */
export const sleep1 = () => new Promise((r) => setTimeout(r, 1));
