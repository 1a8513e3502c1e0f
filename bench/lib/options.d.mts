/** Types of bench/lib/options.mjs (the knobs of `npm run bench`). */
export interface BenchOptions {
  env: NodeJS.ProcessEnv;
  quick: boolean;
  full: boolean;
  headline: boolean;
  n: number;
  slowN: number;
  rounds: number;
  latencyWarmup: number;
  latencySeconds: number;
  rates: number[];
  idleSeconds: number;
  memN: number;
  workloads: string[];
  only: string[] | null;
  lib: string;
  libVariants: { tag: string; path: string }[];
  rawVariants: { tag: string; path: string }[];
  cpuProfiled(contender: { name: string; script: string }): boolean;
  profiles: string;
  results: string;
  out: string;
  priority: number | null;
  nodeArgs: string[];
}
export declare const BENCH_DIR: string;
export declare const ROOT: string;
export declare function readOptions(env?: NodeJS.ProcessEnv): BenchOptions;
export declare function prioritize(pid: number | undefined, priority: number | null): void;
