import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveMediaTools } from '../../src/media/ffmpeg.js';
import { startTestApp, type TestApp } from '../helpers/app.js';

const run = promisify(execFile);
const API = '/audio/api/v1/api-keys';
const SENTENCES: Record<string, string> = {
  en: 'The rainbow is a division of white light into many beautiful colors.',
  zh: '彩虹是太阳光照射到空气中的水滴时形成的光谱。',
  zh_yue: '今日天氣好好，我哋去公園行下啦。',
  ar: 'قوس قزح ظاهرة طبيعية فيزيائية ناتجة عن انكسار وتحلل ضوء الشمس.',
  ru: 'Радуга это атмосферное оптическое явление, наблюдаемое при освещении капель воды.',
  es: 'Un arcoíris es un fenómeno óptico y meteorológico que consiste en la aparición de colores.',
  fr: 'Un arc-en-ciel est un photométéore, un phénomène optique se produisant dans le ciel.',
  pt: 'Um arco-íris é um fenômeno óptico e meteorológico que separa a luz do sol em seu espectro.',
  de: 'Der Regenbogen ist ein atmosphärisch-optisches Phänomen, das als kreisbogenförmiges farbiges Lichtband wahrgenommen wird.',
  ko: '무지개는 공기 중의 물방울에 햇빛이 굴절되어 나타나는 현상입니다.',
  ja: '日本語の文章を読み上げます。今日は良い天気です。',
};

let app: TestApp;
let key: string;
let accountId: string;
let voices: any[];
const tools = resolveMediaTools({ preferSystem: true });

async function probeDuration(url: string, dir: string, name: string): Promise<{ seconds: number; contentType: string | null; meanDb: number }> {
  const res = await fetch(url);
  expect(res.status).toBe(200);
  const file = join(dir, name);
  await writeFile(file, Buffer.from(await res.arrayBuffer()));
  const { stdout } = await run(tools.ffprobe, ['-v', 'error', '-show_entries', 'format=duration', '-of', 'csv=p=0', file]);
  const { stderr } = await run(tools.ffmpeg, ['-hide_banner', '-nostdin', '-i', file, '-af', 'volumedetect', '-f', 'null', '-']);
  const meanDb = Number(/mean_volume: (-?[\d.]+) dB/.exec(stderr)?.[1] ?? '-200');
  return { seconds: Number(stdout.trim()), contentType: res.headers.get('content-type'), meanDb };
}

async function createAndWait(body: Record<string, unknown>, k = key) {
  const created = await app.post(`${API}/tts/task/create`, body, k);
  expect(created.json.code, JSON.stringify(created.json)).toBe(100000);
  return app.waitTask(`${API}/tts/task/get`, 'global_id', created.json.data.job_id, k, 90_000);
}

beforeAll(async () => {
  app = await startTestApp({ WORKER_THREADS: '2' });
  ({ key, accountId } = await app.newKey({ credits: 10_000 }));
  voices = (await app.get(`${API}/tts/voices?page_size=500`, key)).json.data.records;
});
afterAll(async () => app?.close());

describe('text to speech end to end through the API', () => {
  it.each(Object.keys(SENTENCES))('speaks %s: an MP3 of plausible duration that is not silent', async (language) => {
    const voice = voices.find((v) => v.language === language);
    expect(voice, `a voice for ${language}`).toBeTruthy();
    const done = await createAndWait({ voice_id: voice.id, emotion: 0, speed: 1, language, text: SENTENCES[language] });
    expect(done.data.status, JSON.stringify(done)).toBe('success');
    expect(done.data.engine).toEqual(expect.any(String));
    const probe = await probeDuration(done.data.output, app.dataDir, `${language}.mp3`);
    expect(probe.contentType).toBe('audio/mpeg');
    expect(probe.seconds).toBeGreaterThan(1);
    expect(probe.seconds).toBeLessThan(20);
    expect(Math.abs(probe.seconds - done.data.duration)).toBeLessThan(0.15);
    expect(probe.meanDb).toBeGreaterThan(-40);
  });

  it('speed 2 is shorter and speed 0.5 longer than speed 1', async () => {
    const voice = voices.find((v) => v.language === 'en');
    const text = 'Speed changes how long this sentence takes, but not the pitch of the voice.';
    const durations: Record<number, number> = {};
    for (const speed of [0.5, 1, 2]) {
      const done = await createAndWait({ voice_id: voice.id, emotion: 0, speed, language: 'en', text });
      durations[speed] = done.data.duration;
    }
    expect(durations[2]! / durations[1]!).toBeLessThan(0.7);
    expect(durations[0.5]! / durations[1]!).toBeGreaterThan(1.4);
  });

  it('WAV on request', async () => {
    const voice = voices.find((v) => v.language === 'en');
    const done = await createAndWait({ voice_id: voice.id, emotion: 8, speed: 1, language: 'en', text: 'A calm wave file.', format: 'wav' });
    const res = await fetch(done.data.output);
    expect(res.headers.get('content-type')).toBe('audio/wav');
    expect(Buffer.from(await res.arrayBuffer()).subarray(0, 4).toString()).toBe('RIFF');
  });

  it("bills the spec's examples once, on success: 60 characters 1 credit, 215 characters 3", async () => {
    const fresh = await app.newKey({ credits: 100 });
    const voice = voices.find((v) => v.language === 'en');
    const sixty = 'Sixty characters of text, exactly sixty, are billed as one.'.padEnd(60, '.');
    const twoFifteen = ('Two hundred and fifteen characters cost three credits. ').repeat(4).padEnd(215, '.').slice(0, 215);
    for (const [text, credits] of [[sixty, 1], [twoFifteen, 3]] as const) {
      expect([...text].length).toBe(text === sixty ? 60 : 215);
      const done = await createAndWait({ voice_id: voice.id, emotion: 0, speed: 1, language: 'en', text }, fresh.key);
      expect(done.data.credits).toBe(credits);
    }
    const account = await app.container.accounts.getAccount(fresh.accountId);
    expect(account!.balance).toBe(96);
    const ledger = await app.container.accounts.ledger(fresh.accountId, 10);
    expect(ledger.filter((l) => l.reason === 'task_charge').map((l) => l.amount).sort()).toEqual([-1, -3]);
  });

  it('a task holds its price while it runs, and a low balance ends at zero, never below', async () => {
    const poor = await app.newKey({ credits: 3 });
    const voice = voices.find((v) => v.language === 'en');
    const body = (text: string) => ({ voice_id: voice.id, emotion: 0, speed: 1, language: 'en', text });
    const text = 'x'.repeat(150) + ' two credits each.';
    const first = await app.post(`${API}/tts/task/create`, body(text), poor.key);
    expect(first.json.code).toBe(100000);
    // 1 credit is left beside the first task's 2 (held while it runs, charged when it is done): not enough.
    expect((await app.post(`${API}/tts/task/create`, body(text), poor.key)).json.code).toBe(100100);
    const done = await app.waitTask(`${API}/tts/task/get`, 'global_id', first.json.data.job_id, poor.key, 60_000);
    expect(done.data.status).toBe('success');
    expect((await app.container.accounts.getAccount(poor.accountId))!).toMatchObject({ balance: 1, held: 0 });
    // An operator takes more than is left while a task runs: the balance stops at zero, and so does the charge.
    const last = await app.post(`${API}/tts/task/create`, body('hi'), poor.key);
    expect(last.json.code).toBe(100000);
    await app.container.accounts.adjustCredits(poor.accountId, -5, 'correction');
    await app.waitTask(`${API}/tts/task/get`, 'global_id', last.json.data.job_id, poor.key, 60_000);
    expect((await app.container.accounts.getAccount(poor.accountId))!.balance).toBe(0);
    expect((await app.post(`${API}/tts/task/create`, body('hi'), poor.key)).json.code).toBe(100100);
  });

  it('result URLs are signed: a tampered or expired link is refused', async () => {
    const voice = voices.find((v) => v.language === 'en');
    const done = await createAndWait({ voice_id: voice.id, emotion: 0, speed: 1, language: 'en', text: 'Signed links only.' });
    const url = new URL(done.data.output);
    const tampered = new URL(url);
    tampered.searchParams.set('sig', `${url.searchParams.get('sig')!.slice(0, -2)}AA`);
    expect((await fetch(tampered)).status).toBe(403);
    const expired = new URL(url);
    expired.searchParams.set('exp', String(Math.floor(Date.now() / 1000) - 10));
    expect((await fetch(expired)).status).toBe(403);
    const traversal = await fetch(`${app.baseUrl}/files/..%2F..%2Fsoundry.db?exp=9999999999&sig=x`);
    expect([403, 404]).toContain(traversal.status);
    const range = await fetch(url, { headers: { range: 'bytes=0-99' } });
    expect(range.status).toBe(206);
    expect((await range.arrayBuffer()).byteLength).toBe(100);
  });

  it('healthz and metrics report the workers and the engines', async () => {
    expect((await fetch(`${app.baseUrl}/healthz`)).status).toBe(200);
    const metrics = await (await fetch(`${app.baseUrl}/metrics`)).text();
    expect(metrics).toMatch(/soundry_queue_depth\{kind="tts"\} \d+/);
    expect(metrics).toMatch(/soundry_engine_real_time_factor_count\{engine="[^"]+"\} [1-9]/);
    expect(metrics).toMatch(/soundry_http_request_duration_seconds_bucket/);
    void accountId;
  });
});
