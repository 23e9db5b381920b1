import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { audioDuration, HAS_CHROMIUM, launch, openConsole, pageErrors, screenshot, unnamedControls } from './browser.js';
import { makeAudio } from './media.js';

let app: TestApp;
let browser: Browser;

describe.skipIf(!HAS_CHROMIUM)('console: enhancement page in a real browser', () => {
  beforeAll(async () => {
    app = await startTestApp({ WORKER_THREADS: '2' });
    browser = await launch();
  });
  afterAll(async () => {
    await browser?.close();
    await app?.close();
  });

  it('enhances an uploaded recording and shows before/after players with the stages and reasons', async () => {
    const { key } = await app.newKey({ credits: 50 });
    // 3 s: a quiet tone under white noise.
    const noisy = await makeAudio(app.dataDir, 'noisy.wav', 'aevalsrc=0.2*sin(2*PI*220*t)+0.1*(random(0)-0.5):s=16000:d=3', ['-c:a', 'pcm_s16le']);
    const page = await openConsole(browser, app.baseUrl, key, 'enhance');
    // Every flag has a label and a one-line explanation it is described by.
    const denoise = page.getByRole('checkbox', { name: 'Remove noise' });
    expect(await denoise.getAttribute('aria-describedby')).toBe('enh-remove_noise-hint');
    expect(await page.locator('#enh-remove_noise-hint').textContent()).toMatch(/hiss/);
    expect(await page.locator('.flags input[type=checkbox]').count()).toBe(14);

    await page.getByRole('checkbox', { name: 'Smart enhancement' }).uncheck();
    await denoise.check();
    await page.getByRole('checkbox', { name: 'Auto normalization' }).check();
    await page.getByLabel('Audio file (drop it here or choose one)').setInputFiles(noisy);
    await page.getByRole('button', { name: 'Enhance' }).click();
    expect(await audioDuration(page, 'After', 180_000)).toBeCloseTo(3, 0);
    expect(await audioDuration(page, 'Before')).toBeCloseTo(3, 0);
    const stages = await page.getByRole('list', { name: 'Stages' }).getByRole('listitem').allTextContents();
    expect(stages).toEqual([expect.stringMatching(/^denoise: remove_noise/), expect.stringMatching(/^normalize: normalize/)]);

    // A/B: the switch pauses one version and plays the other from the same point.
    const playing = (name: string) => page.locator(`audio[aria-label="${name}"]`).evaluate((a: HTMLAudioElement) => !a.paused || a.ended);
    await page.getByRole('button', { name: 'Switch between before and after' }).click();
    await expect.poll(() => playing('Before')).toBe(true);
    await expect.poll(() => page.getByText('Listening to: before').count()).toBe(1);
    await page.getByRole('button', { name: 'Switch between before and after' }).click();
    await expect.poll(() => playing('After')).toBe(true);
    expect(await page.locator('audio[aria-label="Before"]').evaluate((a: HTMLAudioElement) => a.paused)).toBe(true);
    await expect.poll(() => page.getByText('Listening to: after').count()).toBe(1);
    await expect.poll(() => page.locator('sd-player .wave div').count()).toBeGreaterThan(1);
    expect(await page.getByRole('link', { name: 'Download the enhanced audio' }).getAttribute('href')).toMatch(/\/files\//);
    expect(await page.locator('sd-enhance').textContent()).not.toMatch(/null|undefined/);
    await screenshot(page, 'enhance');
    expect(await unnamedControls(page)).toEqual([]);
    expect(pageErrors(page)).toEqual([]);
  }, 240_000);
});
