/** Types of bench/report/markdown.mjs (the report of `npm run bench` as markdown). */
/** The report object of bench/results/<BENCH_OUT>.json. */
export type BenchReport = Record<string, unknown>;
export declare function markdown(report: BenchReport): string;
