/** Types of bench/contenders/table.mjs (the contender table of `npm run bench`). */
import type { BenchOptions } from '../lib/options.mjs';

export interface Contender {
  name: string;
  label: string;
  kind: 'stream' | 'bullmq';
  /** The child script in bench/contenders/. */
  script: string;
  cfg: Record<string, unknown>;
  workloads: string[];
  baseline?: string;
  slow?: boolean;
  notQuick?: boolean;
  /** The ioredis version a `lib@<tag>` build loads. */
  ioredis?: string | null;
}
export declare function contenderScript(c: Contender): string;
export declare function contenderTable(options: BenchOptions): {
  all: Contender[];
  chosen: Contender[];
};
