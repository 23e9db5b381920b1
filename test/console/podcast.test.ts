import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { audioDuration, HAS_CHROMIUM, launch, openConsole, pageErrors, screenshot, unnamedControls } from './browser.js';

let app: TestApp;
let browser: Browser;

const ARTICLE = [
  'The James Webb Space Telescope is the largest optical telescope in space.',
  'Its high resolution and sensitivity allow it to view objects too old, distant, or faint for the Hubble Space Telescope.',
  'The telescope was launched in December 2021 and reached its orbit around the second Lagrange point in January 2022.',
  'Its primary mirror consists of eighteen hexagonal segments of gold-plated beryllium.',
  'Scientists use it to study the formation of the first galaxies and the atmospheres of exoplanets.',
].join(' ');

describe.skipIf(!HAS_CHROMIUM)('console: podcast page and history in a real browser', () => {
  beforeAll(async () => {
    app = await startTestApp({ WORKER_THREADS: '2' });
    browser = await launch();
  });
  afterAll(async () => {
    await browser?.close();
    await app?.close();
  });

  it('writes a script from pasted text, lets a line be edited and another removed, makes the episode with chapters, and lists both tasks in the history', async () => {
    const { key } = await app.newKey({ credits: 100 });
    const page = await openConsole(browser, app.baseUrl, key, 'podcast');
    await page.getByLabel('Source type').selectOption('4');
    await page.getByLabel('Source text').fill(ARTICLE);
    await page.getByLabel('Style').selectOption({ label: 'Interview' });
    await page.getByLabel('Duration').selectOption('1');
    await page.getByLabel('Podcast language').selectOption('en');
    await page.getByRole('button', { name: 'Write script' }).click();

    const editor = page.getByRole('region', { name: 'Script editor' });
    await editor.getByRole('button', { name: 'Make episode' }).waitFor({ timeout: 120_000 });
    const lines = editor.getByRole('textbox', { name: /^Line \d+, / });
    const count = await lines.count();
    expect(count).toBeGreaterThan(2);
    await lines.nth(1).fill('I changed this line in the console.');
    await editor.getByRole('button', { name: `Remove line ${count}` }).click();
    await editor.getByLabel('Title').fill('Webb, edited');
    await editor.getByRole('button', { name: 'Make episode' }).click();

    expect(await audioDuration(page, 'Episode', 180_000)).toBeGreaterThan(2);
    const episode = page.getByRole('region', { name: 'Episode' });
    expect(await episode.getByRole('heading', { name: 'Webb, edited' }).count()).toBe(1);
    const chapters = episode.getByRole('list', { name: 'Chapters' }).getByRole('button');
    expect(await chapters.count()).toBeGreaterThan(0);
    await chapters.first().click();
    await expect.poll(() => page.locator('audio[aria-label="Episode"]').evaluate((a: HTMLAudioElement) => !a.paused || a.ended)).toBe(true);
    await page.locator('audio[aria-label="Episode"]').evaluate((a: HTMLAudioElement) => a.pause());
    // The highlights are drawn on the waveform as regions.
    await expect.poll(() => page.locator('sd-player').evaluate((el) => el.querySelector('.wave div')?.shadowRoot?.querySelectorAll('[part~="marker"], [part~="region"]').length ?? 0)).toBeGreaterThan(0);
    await screenshot(page, 'podcast');

    // The stored script has the edit and not the removed line.
    const scriptId = await page.evaluate(() => JSON.parse(localStorage.getItem(Object.keys(localStorage).find((k) => k.startsWith('soundry.history.'))!)!)[0].id);
    const audio = await app.post('/audio/api/v1/api-keys/podcast/audio/get', { global_id: scriptId }, key);
    expect(audio.json.data.podcast_script).toHaveLength(count - 1);
    expect(audio.json.data.podcast_script[1].text).toBe('I changed this line in the console.');

    await page.getByRole('link', { name: 'History' }).click();
    const rows = page.getByRole('table', { name: 'Your tasks' }).locator('tbody tr');
    await expect.poll(() => rows.count()).toBe(2);
    await expect.poll(() => rows.locator('td:nth-child(4)').allTextContents()).toEqual(['success', 'success']);
    expect(await rows.first().locator('td:nth-child(2)').textContent()).toBe('Podcast episode');
    expect(await page.getByRole('application', { name: /Result of Podcast episode task/ }).or(page.locator('audio[aria-label^="Result of Podcast episode"]')).count()).toBe(1);
    await screenshot(page, 'history');
    expect(await unnamedControls(page)).toEqual([]);
    expect(pageErrors(page)).toEqual([]);
  }, 300_000);
});
