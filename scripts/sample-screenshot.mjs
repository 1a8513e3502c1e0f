#!/usr/bin/env node
/**
 * Screenshots of the sample's page and of its dashboard in headless Chromium (Debian's
 * `chromium`), for the README:
 *
 *   PORT=3999 DEMO_SECONDS=150 npm run demo &   # give it ~20 s for retries and dead letters
 *   node scripts/sample-screenshot.mjs http://127.0.0.1:3999/ docs/sample-page.png  # watches 30 s
 *   SCREENSHOT_CLICK='tr[data-group="orders/billing"]' \
 *     node scripts/sample-screenshot.mjs http://127.0.0.1:3999/echo-stream docs/dashboard.png
 *
 * SCREENSHOT_CLICK: a CSS selector clicked once the page is live (on the dashboard, the group
 * whose pending entries, dead letters and tail it shows); SCREENSHOT_WAIT_MS: how long to watch
 * before the shot (30,000).
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
  if (process.env.SCREENSHOT_CLICK) await page.click(process.env.SCREENSHOT_CLICK);
  await page.waitForTimeout(Number(process.env.SCREENSHOT_WAIT_MS ?? 30_000)); // dead letters come in
  await page.screenshot({ path: out, fullPage: true });
  console.log(`saved ${out}`);
} finally {
  await browser.close();
}
