import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { audioDuration, HAS_CHROMIUM, launch, openConsole, pageErrors, screenshot, unnamedControls } from './browser.js';
import { makeAudio } from './media.js';
import { separableSongSource } from '../helpers/separable-song.js';

let app: TestApp;
let browser: Browser;

describe.skipIf(!HAS_CHROMIUM)('console: separation page in a real browser', () => {
  beforeAll(async () => {
    app = await startTestApp({ WORKER_THREADS: '2' });
    browser = await launch();
  });
  afterAll(async () => {
    await browser?.close();
    await app?.close();
  });

  it('uploads a file, separates it with the built-in engine, and gives a player per stem with solo/mute and the zip', async () => {
    const { key } = await app.newKey({ credits: 50 });
    // 3 s stereo with drums, bass and vocals the built-in engine finds, as the API's separation tests use (a stem it
    // finds nowhere fails the task).
    const song = await makeAudio(app.dataDir, 'song.wav', separableSongSource(3), ['-c:a', 'pcm_s16le']);
    const page = await openConsole(browser, app.baseUrl, key, 'separation');

    // No file and no URL: said next to the URL field, nothing created.
    await page.getByRole('button', { name: 'Separate' }).click();
    await expect.poll(() => page.locator('[data-error-for="inputurl"]').textContent()).toContain('choose a file or enter its URL');

    await page.getByLabel('Model type').selectOption('501');
    expect(await page.getByText('This model gives: bass, drums, vocals, other.').count()).toBe(1);
    // Dropped onto the drop zone, as a user drags it from their file manager.
    const bytes = (await readFile(song)).toString('base64');
    await page.locator('sd-separation .drop').evaluate((zone, b64) => {
      const file = new File([Uint8Array.from(atob(b64), (c) => c.charCodeAt(0))], 'song.wav', { type: 'audio/wav' });
      const data = new DataTransfer();
      data.items.add(file);
      zone.dispatchEvent(new DragEvent('drop', { dataTransfer: data, bubbles: true, cancelable: true }));
    }, bytes);
    expect(await page.getByLabel('Audio file (drop it here or choose one)').evaluate((i: HTMLInputElement) => i.files?.[0]?.name)).toBe('song.wav');
    await page.getByRole('button', { name: 'Separate' }).click();
    for (const stem of ['bass', 'drums', 'vocals', 'other']) expect(await audioDuration(page, `Stem ${stem}`, 180_000)).toBeCloseTo(3, 0);
    expect(await page.getByLabel('Separation progress').evaluate((p: HTMLProgressElement) => p.value)).toBe(1);
    expect(await page.getByRole('link', { name: 'Download all stems (zip)' }).getAttribute('href')).toMatch(/\/files\/.*zip/);

    // Solo vocals: only vocals sound in the mix; mute drums without solo: the rest sound.
    await page.getByLabel('Solo vocals').check();
    const muted = () => page.locator('audio[aria-label^="Stem "]').evaluateAll((els: HTMLAudioElement[]) => els.map((a) => `${a.getAttribute('aria-label')}:${a.muted}`));
    expect(await muted()).toEqual(['Stem bass:true', 'Stem drums:true', 'Stem vocals:false', 'Stem other:true']);
    await page.getByLabel('Solo vocals').uncheck();
    await page.getByLabel('Mute drums').check();
    expect(await muted()).toEqual(['Stem bass:false', 'Stem drums:true', 'Stem vocals:false', 'Stem other:false']);
    expect(await page.getByText('Mix: bass, vocals, other').count()).toBe(1);
    await page.getByRole('button', { name: 'Play mix' }).click();
    await expect.poll(() => page.locator('audio[aria-label^="Stem "]').evaluateAll((els: HTMLAudioElement[]) => els.every((a) => !a.paused || a.ended))).toBe(true);
    await page.getByRole('button', { name: 'Pause mix' }).click();
    await screenshot(page, 'separation');
    expect(await unnamedControls(page)).toEqual([]);
    expect(pageErrors(page)).toEqual([]);
  }, 240_000);
});
