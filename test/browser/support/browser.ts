import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';

/** Debian's Chromium (`.ci/run` installs it); playwright-core downloads no browser. */
export const CHROMIUM = process.env.SLUICE_TEST_CHROMIUM ?? '/usr/bin/chromium';
export const SCREENSHOTS = join(__dirname, '..', 'screenshots');

/**
 * One headless Chromium for a whole test file. Playwright gives it a fresh temporary profile
 * (user data dir) and removes it on close; nothing reaches the network but the test's own servers.
 */
export function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

/** Longest wait of a page action (a click, a fill) before it fails. */
const ACTION_TIMEOUT_MS = 10_000;

/** A fresh tab (its own context: its own sessionStorage) the size of a laptop screen. */
export async function openTab(browser: Browser): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  context.setDefaultTimeout(ACTION_TIMEOUT_MS);
  return context.newPage();
}

/** Saves a screenshot of the whole page as test/browser/screenshots/<name>.png (ignored by git). */
export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true });
}
