import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { HAS_CHROMIUM, launch, pageErrors, screenshot, unnamedControls } from './browser.js';

const TOKEN = 'admin-token-for-the-console-test';
const API = '/audio/api/v1/api-keys';
let app: TestApp;
let browser: Browser;

describe.skipIf(!HAS_CHROMIUM)('console: admin page in a real browser', () => {
  beforeAll(async () => {
    app = await startTestApp({ ADMIN_TOKEN: TOKEN });
    browser = await launch();
  });
  afterAll(async () => {
    await browser?.close();
    await app?.close();
  });

  it('refuses a wrong token through the API and next to the token field', async () => {
    const res = await fetch(`${app.baseUrl}/admin/api/accounts`, { headers: { 'x-admin-token': 'wrong-token-of-some-length' } });
    expect(await res.json()).toEqual({ code: 100401, data: {}, message: 'Invalid admin token' });
    expect((await (await fetch(`${app.baseUrl}/admin/api/accounts`)).json()).code).toBe(100401);
    const page = await browser.newPage();
    await page.goto(`${app.baseUrl}/#/admin`);
    await page.getByLabel('Admin token').fill('wrong-token-of-some-length');
    await page.getByRole('button', { name: 'Open admin' }).click();
    await expect.poll(() => page.locator('[data-error-for="admin-token"]').textContent()).toContain('This admin token was not accepted');
    await page.close();
  });

  it('lists accounts, keys and usage; adds credits; creates and disables keys', async () => {
    const { key, accountId } = await app.newKey({ credits: 20 });
    const voice = (await app.get(`${API}/tts/voices?language=en`, key)).json.data.records[0];
    const created = await app.post(`${API}/tts/task/create`, { voice_id: voice.id, emotion: 0, speed: 1, language: 'en', text: 'Usage for the admin page.' }, key);
    expect((await app.waitTask(`${API}/tts/task/get`, 'global_id', created.json.data.job_id, key)).data.status).toBe('success');

    const page = await browser.newPage({ viewport: { width: 1300, height: 900 } });
    await page.goto(`${app.baseUrl}/`);
    await expect.poll(() => page.getByRole('link', { name: 'Admin' }).isVisible()).toBe(true);
    await page.getByRole('link', { name: 'Admin' }).click();
    await page.getByLabel('Admin token').fill(TOKEN);
    await page.getByRole('button', { name: 'Open admin' }).click();
    const row = page.locator(`tr[data-account="${accountId}"]`);
    await expect.poll(() => row.locator('td').nth(1).textContent()).toBe('19');
    expect(await row.getByRole('list', { name: `Keys of ${accountId}` }).textContent()).toContain('1 tasks, 1 succeeded, 0 failed, 1 credits used');

    await page.getByLabel(`Credits to add to ${accountId}`).fill('5');
    await page.getByRole('button', { name: `Add credits to ${accountId}` }).click();
    await expect.poll(() => row.locator('td').nth(1).textContent()).toBe('24');
    expect((await app.get(`${API}/account/balance`, key)).json.data.balance).toBe(24);

    await row.getByRole('button', { name: /^Disable key / }).click();
    await expect.poll(() => row.getByRole('button', { name: /^Enable key / }).count()).toBe(1);
    expect((await app.post(`${API}/tts/task/create`, { voice_id: voice.id, emotion: 0, speed: 1, language: 'en', text: 'x' }, key)).json.code).toBe(101006);

    await page.getByLabel('Credits for the new key').fill('7');
    await page.getByRole('button', { name: 'Create key' }).click();
    await expect.poll(() => page.getByText(/New key \(shown only now\): sk_/).count()).toBe(1);
    const issued = /sk_\S+/.exec((await page.getByText(/New key \(shown only now\)/).textContent())!)![0];
    expect((await app.get(`${API}/account/balance`, issued)).json.data.balance).toBe(7);
    await screenshot(page, 'admin');
    expect(await unnamedControls(page)).toEqual([]);
    expect(pageErrors(page)).toEqual([]);
  }, 120_000);
});
