#!/usr/bin/env node
/**
 * Screenshot of the sample's orders page in headless Chromium (Debian's `chromium`), for the README:
 *
 *   PORT=3999 DEMO_SECONDS=90 npm run demo &   # give it ~20 s for retries and dead letters
 *   node scripts/sample-screenshot.mjs http://127.0.0.1:3999/ docs/sample-page.png  # watches 30 s
 */
import { chromium } from 'playwright-core';

const [url = 'http://127.0.0.1:3000/', out = 'docs/sample-page.png'] = process.argv.slice(2);
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM_BIN || '/usr/bin/chromium',
  args: [
    '--headless',
    '--no-sandbox',
    '--disable-gpu',
    '--disable-quic',
    '--no-first-run',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
  ],
});
try {
  const page = await browser.newPage({ viewport: { width: 1400, height: 760 } });
  await page.goto(url);
  await page.waitForSelector('#status.live', { timeout: 10_000 });
  await page.waitForTimeout(Number(process.env.SCREENSHOT_WAIT_MS ?? 30_000)); // dead letters come in
  await page.screenshot({ path: out, fullPage: true });
  console.log(`saved ${out}`);
} finally {
  await browser.close();
}
