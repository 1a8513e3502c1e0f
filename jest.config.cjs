/**
 * Jest runs the suite in ESM mode: Nest 12 is ESM-only (NODE_OPTIONS=--experimental-vm-modules).
 *
 * Two projects split the suite by how it may run (docs/testing.md):
 * - `parallel`: the unit specs, the e2e specs that only wait for events and the fault specs that
 *   check states, not times, run several files at a time (the count is in `PHASES`,
 *   scripts/lib/jest-phases.mjs); each file starts its own servers on free ports and uses its own
 *   stream names.
 * - `serial`: the other fault specs, the Cluster specs and the e2e specs that assert wall-clock
 *   bounds or counts per time window, run one file at a time (`--runInBand`) so no other spec
 *   competes with their timers.
 * `npm test` (scripts/test-suite.mjs) runs the first, then the second; `npx jest <path>` runs one
 * file of either as before.
 */

/** e2e specs that run alone: Cluster set-ups and wall-clock bounds or per-window counts. */
const SERIAL_E2E = [
  // Redis Cluster with a failover timed by cluster-node-timeout, or a wall-clock bound
  'cluster-redirections',
  'entry-commits-cluster',
  'cluster',
  // a deadline's upper bound, a retry's lateness, starts per rate window, commands per second
  'command-link',
  'many-handlers',
  'partitions-limits',
  'partitions-reads',
  'rate-limit',
  'retries',
].map((name) => `**/test/e2e/${name}.e2e.spec.ts`);

/** Fault specs whose checks are states, not times: they share the machine like the e2e specs. */
const PARALLEL_FAULTS = [
  'auth-acl-features', // the ACL LOG, the PEL and the skip counts of the option handlers
  'checkpoint-crash', // a checkpoint seen after a SIGKILL, its record gone after the ack
  'effectively-once-chaos', // copies of each entry and the effects' counts after the chaos
  'exactly-once-oracle', // copies of each entry and the counters' sums after the chaos
  'exactly-once-oracle-cluster', // the same on a Cluster, through the outboxes
  'oracle', // the fault oracle against hand-made histories
  'released-deliveries', // what a graceful stop charges, counted in the PEL
  'retention-oracle', // trimmed only once handled and archived, from the ledger
].map((name) => `**/test/faults/${name}.fault.spec.ts`);

/** What both projects share. */
const shared = {
  testEnvironment: 'node',
  rootDir: '.',
  roots: ['<rootDir>/test'],
  extensionsToTreatAsEsm: ['.ts'],
  moduleFileExtensions: ['ts', 'js', 'mjs', 'cjs', 'json'],
  transform: {
    '^.+\\.ts$': ['ts-jest', { useESM: true, tsconfig: '<rootDir>/tsconfig.jest.json' }],
  },
  globalSetup: '<rootDir>/test/support/global-setup.cjs',
};

module.exports = {
  // NOTE: jest reads testTimeout from the top level only; inside a project it is ignored (5 s)
  testTimeout: 60000,
  reporters: ['default', '<rootDir>/test/support/summary-reporter.cjs'],
  detectOpenHandles: false,
  projects: [
    {
      ...shared,
      displayName: 'parallel',
      testMatch: [
        '<rootDir>/test/unit/**/*.spec.ts',
        '<rootDir>/test/e2e/**/*.spec.ts',
        ...SERIAL_E2E.map((file) => `!${file}`),
        ...PARALLEL_FAULTS,
      ],
    },
    {
      ...shared,
      displayName: 'serial',
      testMatch: [
        '<rootDir>/test/faults/**/*.spec.ts',
        ...PARALLEL_FAULTS.map((file) => `!${file}`),
        ...SERIAL_E2E,
      ],
    },
  ],
};
