// The workloads of `npm run bench` in the order a run measures them (BENCH_WORKLOADS picks among
// them by name; its own order does not matter). Each is `{ name, run(ctx, report) }`: it measures
// with ctx ({ redis, options, contenders }) and writes its runs and summary into the report.
import { drainWorkload } from './drain.mjs';
import { idleWorkload } from './idle.mjs';
import { latencyWorkload } from './latency.mjs';
import { memoryWorkload } from './memory.mjs';
import { retriesWorkload } from './retries.mjs';
import {
  effectivelyOnceWorkload,
  manyHandlersWorkload,
  microservicesWorkload,
  partitionsWorkload,
  serverFeaturesWorkload,
} from './standalone.mjs';

export const WORKLOADS = [
  drainWorkload,
  retriesWorkload,
  latencyWorkload,
  idleWorkload,
  memoryWorkload,
  manyHandlersWorkload,
  effectivelyOnceWorkload,
  partitionsWorkload,
  serverFeaturesWorkload,
  microservicesWorkload,
];
