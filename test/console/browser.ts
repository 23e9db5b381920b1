import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { expect } from 'vitest';

/** Debian's chromium, driven by playwright-core; no test tool downloads a browser of its own. */
export const CHROMIUM = '/usr/bin/chromium';
export const HAS_CHROMIUM = existsSync(CHROMIUM);
if (!HAS_CHROMIUM) console.warn(`console browser tests skipped: ${CHROMIUM} is absent (apt-get install chromium)`);

const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'];
/** Screenshots are kept as test artifacts (gitignored). */
export const ARTIFACTS = resolve(import.meta.dirname, '../../test-artifacts/console');

export async function launch(): Promise<Browser> {
  await mkdir(ARTIFACTS, { recursive: true });
  return chromium.launch({ executablePath: CHROMIUM, args: ARGS });
}

/** A page on the console with the key saved, as a user would: type it once, press Save key. */
export async function openConsole(browser: Browser, baseUrl: string, key: string, hash: string): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1100, height: 900 } });
  const problems: string[] = [];
  page.on('pageerror', (err) => problems.push(err.message));
  (page as Page & { problems?: string[] }).problems = problems;
  await page.goto(`${baseUrl}/#/${hash}`);
  await page.getByLabel('API key').fill(key);
  await page.getByRole('button', { name: 'Save key' }).click();
  await expect.poll(() => page.locator('#balance').textContent()).toMatch(/Balance: \d+ credits/);
  return page;
}

export function pageErrors(page: Page): string[] {
  return (page as Page & { problems?: string[] }).problems ?? [];
}

export async function screenshot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
}

/** Waits until an <audio> found by its accessible name has loaded a playable result, and answers its duration. */
export async function audioDuration(page: Page, name: string, timeout = 120_000): Promise<number> {
  const audio = page.getByRole('application', { name }).or(page.locator(`audio[aria-label="${name}"]`)).first();
  await audio.waitFor({ state: 'attached', timeout });
  await expect.poll(() => audio.evaluate((a: HTMLAudioElement) => a.readyState), { timeout: 30_000 }).toBeGreaterThanOrEqual(1);
  return audio.evaluate((a: HTMLAudioElement) => a.duration);
}

/**
 * Form controls and buttons without an accessible name (outside checks drive the console by names): every
 * input, select and textarea needs a <label> or aria-label, every button a text or aria-label, every <audio> a name.
 */
export async function unnamedControls(page: Page): Promise<string[]> {
  return page.evaluate(() =>
    [...document.querySelectorAll('input, select, textarea, button, audio')].flatMap((el) => {
      const labelled = ('labels' in el && (el as HTMLInputElement).labels?.length) || el.getAttribute('aria-label') || el.getAttribute('aria-labelledby');
      const text = el.localName === 'button' && el.textContent?.trim();
      return labelled || text ? [] : [el.outerHTML.slice(0, 120)];
    }),
  );
}
