import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { avatarSvg } from '../../src/http/routes/voice-assets.js';

const API = '/audio/api/v1/api-keys';
let app: TestApp;

beforeAll(async () => {
  app = await startTestApp({}, { workers: false });
});
afterAll(async () => app?.close());

describe('podcast voice resources', () => {
  it('lists spec records for every podcast language with a real avatar and sample clip', async () => {
    const { key } = await app.newKey();
    const data = (await app.get(`${API}/podcast/voices?page_size=500`, key)).json.data;
    const langs = new Set(data.records.map((v: any) => v.language));
    for (const l of ['zh', 'zh_yue', 'en', 'ar', 'ru', 'es', 'fr', 'pt', 'de', 'ja', 'ko']) expect(langs).toContain(l);
    const v = data.records.find((r: any) => r.language === 'de');
    expect(Object.keys(v).sort()).toEqual(
      ['age', 'age_text', 'audio', 'display_name', 'emotion', 'gender', 'gender_text', 'id', 'image', 'language', 'name', 'tags', 'voice_id'].sort(),
    );
    expect(['Male', 'Female']).toContain(v.gender_text);
    // display_name is a host name of the voice's language, distinct within a language; the voice description is a tag.
    expect(v.display_name).not.toMatch(/German|Male|Female/);
    expect(v.tags.some((t: string) => /German/.test(t))).toBe(true);
    for (const l of langs) {
      const names = data.records.filter((r: any) => r.language === l).map((r: any) => r.display_name);
      expect(new Set(names).size, String(l)).toBe(names.length);
    }
    const svg = await fetch(v.image);
    expect(svg.headers.get('content-type')).toMatch(/image\/svg\+xml/);
    expect(await svg.text()).toMatch(/^<svg/);
    // Initials are of the words that start with a letter: "English (US) Male 1" is "EM", not "E(".
    expect(avatarSvg({ ...v, name: 'x', display_name: 'English (US) Male 1' })).toContain('>EM</text>');
    const clip = await fetch(v.audio);
    expect(clip.status).toBe(200);
    expect(clip.headers.get('content-type')).toBe('audio/mpeg');
    const bytes = Buffer.from(await clip.arrayBuffer());
    expect(bytes.length).toBeGreaterThan(5000);
    // The second request is served from the blob store, byte for byte the same.
    expect(Buffer.from(await (await fetch(v.audio)).arrayBuffer())).toEqual(bytes);
    expect((await fetch(`${app.baseUrl}/assets/voices/999999.mp3`)).status).toBe(404);
  }, 60_000);

  it('refuses filters no voice can match on both lists, naming the field, instead of an empty page', async () => {
    const { key } = await app.newKey();
    for (const list of ['tts/voices', 'podcast/voices']) {
      const lang = await app.get(`${API}/${list}?language=english`, key);
      expect(lang.json.code, list).toBe(100002);
      expect(lang.json.message).toMatch(/^Invalid parameters: language: .*"all"\|"zh"\|"en"/);
      const gender = await app.get(`${API}/${list}?gender=0`, key);
      expect(gender.json).toMatchObject({ code: 100002, message: 'Invalid parameters: gender: 1 (male) or 2 (female)' });
      // The values the lists do hold still filter as before; a page past the end keeps the real total.
      const de = (await app.get(`${API}/${list}?language=de&gender=2`, key)).json.data;
      expect(de.total).toBeGreaterThan(0);
      expect(de.records.every((v: any) => v.language === 'de' && v.gender === 2)).toBe(true);
      expect((await app.get(`${API}/${list}?language=all&page=99`, key)).json.data).toMatchObject({ records: [], page: 99 });
    }
  });
});
