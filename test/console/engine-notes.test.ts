import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { audioDuration, HAS_CHROMIUM, launch, openConsole, pageErrors, unnamedControls } from './browser.js';
import { makeAudio } from './media.js';
// Vocals the built-in engine finds: a stem it finds nowhere would fail the task instead of showing its notes.
import { separableSongSource } from '../helpers/separable-song.js';

/**
 * The console says when a built-in engine stood in for a neural one, and why: a server with MODELS_AUTO_PULL whose
 * mirror has no models (every download answers 404) lists the catalog's neural voices as downloaded on first use, and
 * a task for one (or a neural separation) runs on the built-in engine with `engine_note`, shown beside the result.
 */
let app: TestApp;
let browser: Browser;
let mirror: Server;

/** The last successful task query the page made, as the API answered it. */
function lastAnswer(page: Page, kind: string): () => any {
  let data: any = null;
  page.on('response', async (res) => {
    if (!res.url().endsWith(`/${kind}/task/get`)) return;
    const json = await res.json().catch(() => null);
    if (json?.data?.status === 'success') data = json.data;
  });
  return () => data;
}

describe.skipIf(!HAS_CHROMIUM)('console: engine notes in a real browser', () => {
  beforeAll(async () => {
    mirror = createServer((_req, res) => res.writeHead(404).end());
    await new Promise<void>((r) => mirror.listen(0, '127.0.0.1', r));
    const base = `http://127.0.0.1:${(mirror.address() as AddressInfo).port}`;
    app = await startTestApp({ WORKER_THREADS: '2', MODELS_AUTO_PULL: 'true', MODELS_BASE_URL: base });
    browser = await launch();
  });
  afterAll(async () => {
    await browser?.close();
    await app?.close();
    await new Promise<void>((r) => mirror?.close(() => r()));
  });

  it('TTS: a neural voice is marked as downloaded on first use; when the download fails the result says who spoke and why', async () => {
    const { key } = await app.newKey({ credits: 50 });
    const page = await openConsole(browser, app.baseUrl, key, 'tts');
    await page.getByLabel('Language').selectOption('en');
    await page.getByLabel('Gender').selectOption('2');
    const lessac = page.getByLabel('Lessac (US English) (en, female, neural, downloaded on first use)');
    await lessac.waitFor();
    // Preselected: a built-in voice, never a neural one that a task would first have to download.
    const preselected = page.getByRole('radiogroup', { name: 'Voices' }).locator('input:checked');
    expect(Number(await preselected.getAttribute('value'))).toBeLessThan(5000);
    await lessac.check();
    await page.getByLabel('Text', { exact: true }).fill('Hello from a neural voice.');
    await page.getByRole('button', { name: 'Create speech' }).click();
    expect(await audioDuration(page, 'Speech')).toBeGreaterThan(0.5);
    const note = page.getByRole('note');
    await expect.poll(() => note.textContent()).toMatch(/^Built-in voice used: voice 5001 \(Lessac \(US English\)\) was not used: piper-en_US-lessac-medium could not be installed: .*HTTP 404.*; spoken by the built-in voice \d+/);
    expect(await page.getByText(/engine espeak/).count()).toBe(1);
    expect(await unnamedControls(page)).toEqual([]);
    expect(pageErrors(page)).toEqual([]);
  }, 180_000);

  it('separation: the engine note and every stem note the API gave are shown with the stems', async () => {
    const { key } = await app.newKey({ credits: 50 });
    const song = await makeAudio(app.dataDir, 'song.wav', separableSongSource(3), ['-c:a', 'pcm_s16le']);
    const page = await openConsole(browser, app.baseUrl, key, 'separation');
    const answer = lastAnswer(page, 'separation');
    await page.getByLabel('Model type').selectOption('350');
    await page.getByLabel('Audio file (drop it here or choose one)').setInputFiles(song);
    await page.getByRole('button', { name: 'Separate' }).click();
    expect(await audioDuration(page, 'Stem vocals', 180_000)).toBeCloseTo(3, 0);
    await expect.poll(() => answer()).not.toBeNull();
    const data = answer();
    expect(data.engine).toBe('builtin-dsp');
    expect(data.engine_note).toMatch(/could not be installed/);
    expect(await page.getByRole('note').textContent()).toBe(`Built-in engine: ${data.engine_note}`);
    const shown = await page.locator('sd-separation .stem-note').allTextContents();
    const notes = Object.entries((data.stem_notes ?? {}) as Record<string, string>).map(([stem, text]) => `Note on ${stem.replace('_', ' ')}: ${text}`);
    expect(shown).toEqual(notes);
    expect(await unnamedControls(page)).toEqual([]);
    expect(pageErrors(page)).toEqual([]);
  }, 240_000);
});
