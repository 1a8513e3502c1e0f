/** Jest runs the suite in ESM mode: Nest 12 is ESM-only (NODE_OPTIONS=--experimental-vm-modules). */
module.exports = {
  testEnvironment: 'node',
  rootDir: '.',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.spec.ts'],
  extensionsToTreatAsEsm: ['.ts'],
  moduleFileExtensions: ['ts', 'js', 'mjs', 'cjs', 'json'],
  transform: {
    '^.+\\.ts$': ['ts-jest', { useESM: true, tsconfig: '<rootDir>/tsconfig.jest.json' }],
  },
  reporters: ['default', '<rootDir>/test/support/summary-reporter.cjs'],
  globalSetup: '<rootDir>/test/support/global-setup.cjs',
  testTimeout: 60000,
  detectOpenHandles: false,
};
