/**
 * Headless Chromium for the page tests: Debian's `chromium` package, or `CHROMIUM_BIN`. Without it
 * the page tests are skipped with one line saying so (`reportSkippedWithoutChromium`).
 */
import * as fs from 'node:fs';

export const CHROMIUM = process.env.CHROMIUM_BIN || '/usr/bin/chromium';
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
export const hasChromium = fs.existsSync(CHROMIUM);

/** One clear line in the test output (not buried in a console.log stack frame). */
export function reportSkippedWithoutChromium(testName: string): void {
  if (hasChromium) return;
  process.stdout.write(
    `\n${testName}: SKIPPED the headless-Chromium page test: ${CHROMIUM} not found ` +
      `(install it with 'apt-get install -y chromium', or set CHROMIUM_BIN)\n`,
  );
}
