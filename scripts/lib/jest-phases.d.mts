/** Types of scripts/lib/jest-phases.mjs (the suite's jest runs, one per project). */
export interface Phase {
  /** The jest project (`displayName` in jest.config.cjs) the run selects. */
  project: string;
  /** How jest runs it (`--maxWorkers=2`, `--runInBand`). */
  args: readonly string[];
}
/** What test/support/summary-reporter.cjs writes for a run. */
export interface PhaseSummary {
  passed: number;
  failed: number;
  skipped: number;
  files: number;
  failedFiles: number;
  durations: Array<{ file: string; ms: number }>;
}
export interface PhaseResult {
  project: string;
  code: number;
  signal: NodeJS.Signals | null;
  seconds: number;
  summary: PhaseSummary | null;
  /** Why a run jest passed counts as failed (it ran no test file). */
  problem?: string;
}
export declare const PHASES: readonly Phase[];
export declare function runPhase(
  phase: Phase,
  jestArgs?: string[],
  env?: NodeJS.ProcessEnv,
): Promise<PhaseResult>;
export declare function runPhases(options?: {
  jestArgs?: string[];
  env?: NodeJS.ProcessEnv;
  filtered?: boolean;
}): Promise<PhaseResult[]>;
export declare function totalsLine(results: PhaseResult[]): string;
export declare function phaseLines(results: PhaseResult[], slowest?: number): string[];
