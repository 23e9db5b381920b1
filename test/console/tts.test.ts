import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { audioDuration, HAS_CHROMIUM, launch, openConsole, pageErrors, screenshot, unnamedControls } from './browser.js';

let app: TestApp;
let browser: Browser;

describe.skipIf(!HAS_CHROMIUM)('console: text to speech page in a real browser', () => {
  beforeAll(async () => {
    app = await startTestApp({ TTS_MAX_CHARS: '60' });
    browser = await launch();
  });
  afterAll(async () => {
    await browser?.close();
    await app?.close();
  });

  it('serves the console at / and keeps the API and /docs', async () => {
    const res = await fetch(`${app.baseUrl}/`);
    expect(res.headers.get('content-type')).toMatch(/text\/html/);
    expect(await res.text()).toContain('<title>Soundry console</title>');
    // Not to be framed by another site (found from outside: the console could be framed for clickjacking).
    expect(res.headers.get('content-security-policy')).toBe("frame-ancestors 'none'");
    expect(res.headers.get('x-frame-options')).toBe('DENY');
    expect(res.headers.get('referrer-policy')).toBe('same-origin');
    expect((await fetch(`${app.baseUrl}/console/wavesurfer.esm.js`)).status).toBe(200);
    expect((await fetch(`${app.baseUrl}/console/../package.json`)).status).toBe(404);
    expect((await fetch(`${app.baseUrl}/console/..%2fpackage.json`)).status).toBe(404);
    expect((await fetch(`${app.baseUrl}/console/..%2f..%2fsrc%2fmain.ts`)).status).toBe(404);
    expect((await fetch(`${app.baseUrl}/docs`)).status).toBe(200);
    expect((await app.get('/nope')).json.code).toBe(100404);
    // Without ADMIN_TOKEN there is no admin API (and the console hides the page).
    expect((await app.get('/admin/api/enabled')).json.data).toEqual({ enabled: false });
    expect((await app.get('/admin/api/accounts')).status).toBe(404);
  });

  it('shows an invalid key in plain words next to the key field', async () => {
    const page = await browser.newPage();
    await page.goto(`${app.baseUrl}/#/tts`);
    expect(await page.getByRole('link', { name: 'Admin' }).isHidden()).toBe(true);
    await page.getByLabel('API key').fill('sk_not_a_key');
    await page.getByRole('button', { name: 'Save key' }).click();
    await expect.poll(() => page.locator('#api-key-error').textContent()).toContain('This API key was not accepted');
    expect(await page.getByLabel('API key').getAttribute('aria-invalid')).toBe('true');
    // No ADMIN_TOKEN: #/admin shows the TTS page, never an admin form.
    const fresh = await browser.newPage();
    await fresh.goto(`${app.baseUrl}/#/admin`);
    await fresh.getByRole('heading', { name: 'Text to speech' }).waitFor();
    expect(await fresh.getByLabel('Admin token').count()).toBe(0);
    await fresh.close();
    await page.close();
  });

  it('browses voices, creates speech with the built-in engine and plays it in an <audio>', async () => {
    const { key } = await app.newKey({ credits: 50 });
    const page = await openConsole(browser, app.baseUrl, key, 'tts');
    await page.getByLabel('Language').selectOption('en');
    await page.getByLabel('Gender').selectOption('2');
    const firstVoice = page.getByRole('radiogroup', { name: 'Voices' }).getByRole('radio').first();
    await expect.poll(() => firstVoice.isChecked()).toBe(true);
    // A preview of the voice plays in its own <audio>.
    await page.locator('sd-tts .voice').first().getByRole('button', { name: /^Preview / }).click();
    expect(await audioDuration(page, 'Voice preview', 60_000)).toBeGreaterThan(0.5);
    // A text over TTS_MAX_CHARS is refused by the API; the console says so next to the text box.
    await page.getByLabel('Text', { exact: true }).fill('word '.repeat(20));
    await page.getByRole('button', { name: 'Create speech' }).click();
    const textError = page.locator('[data-error-for="text"]');
    await expect.poll(() => textError.textContent()).toBe('The text is too long. It has 100 characters, at most 60.');
    expect(await page.getByLabel('Text', { exact: true }).getAttribute('aria-invalid')).toBe('true');
    await page.getByLabel('Emotion').selectOption({ label: 'happy' });
    await page.getByLabel('Speed').selectOption('1');
    await page.getByLabel('Text', { exact: true }).fill('Hello from the Soundry console.');
    await page.getByRole('button', { name: 'Create speech' }).click();
    const duration = await audioDuration(page, 'Speech');
    expect(duration).toBeGreaterThan(0.5);
    expect(await textError.isHidden()).toBe(true);
    expect(await page.getByRole('link', { name: 'Download speech' }).getAttribute('href')).toMatch(/\/files\//);
    await expect.poll(() => page.locator('#balance').textContent()).toBe('Balance: 49 credits');
    // The waveform is drawn by wavesurfer.js from the same audio element.
    await expect.poll(() => page.locator('sd-player .wave div').count()).toBeGreaterThan(0);
    await screenshot(page, 'tts');
    expect(await unnamedControls(page)).toEqual([]);
    expect(pageErrors(page)).toEqual([]);
  }, 180_000);
});
