import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeAudio, probeMedia, resolveMediaTools } from '../../src/media/ffmpeg.js';
import { measureLoudness } from '../../src/media/loudnorm.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { concat, filler, silence, speechLike, syllable } from '../helpers/speech-synth.js';

const run = promisify(execFile);
const API = '/audio/api/v1/api-keys';
const tools = resolveMediaTools({ preferSystem: true });
let app: TestApp;
let key: string;
let noisyUrl: string;
let noisyPath: string;

async function upload(path: string): Promise<string> {
  const form = new FormData();
  form.append('file', new Blob([new Uint8Array(await readFile(path))]), path.split('/').pop()!);
  return ((await (await fetch(`${app.baseUrl}${API}/files/upload`, { method: 'POST', headers: { 'api-key': key }, body: form })).json()) as any).data.url;
}

async function enhance(enhance_type: Record<string, boolean>, inputurl = noisyUrl, k = key) {
  const created = await app.post(`${API}/enhance/task/create`, { inputurl, enhance_type }, k);
  expect(created.json.code, JSON.stringify(created.json)).toBe(100000);
  expect(created.json.data.model).toBe(2);
  return app.waitTask(`${API}/enhance/task/get`, 'job_id', created.json.data.job_id, k, 240_000);
}

/** An MP3 whose LAME/Xing tag claims `claimSeconds` (its frame count patched), whatever it holds. */
async function lyingMp3(name: string, holdSeconds: number, claimSeconds: number, rate = 44100): Promise<string> {
  const path = join(app.dataDir, name);
  await run(tools.ffmpeg, ['-hide_banner', '-loglevel', 'error', '-y', '-f', 'lavfi', '-i', `sine=frequency=220:sample_rate=${rate}:duration=${holdSeconds}`, '-ac', '1', '-b:a', '32k', path]);
  const bytes = await readFile(path);
  const head = bytes.subarray(0, 4096).toString('latin1');
  const at = Math.max(head.indexOf('Info'), head.indexOf('Xing'));
  expect(at).toBeGreaterThan(0);
  expect(bytes.readUInt32BE(at + 4) & 1).toBe(1); // the frame-count field is present
  bytes.writeUInt32BE(Math.round((claimSeconds * rate) / 1152), at + 8);
  await writeFile(path, bytes);
  expect(Math.abs((await probeMedia(path, { ffprobe: tools.ffprobe })).durationSeconds - claimSeconds)).toBeLessThan(1);
  return path;
}

async function download(url: string, name: string): Promise<string> {
  const path = join(app.dataDir, name);
  await writeFile(path, Buffer.from(await (await fetch(url)).arrayBuffer()));
  return path;
}

beforeAll(async () => {
  app = await startTestApp({ WORKER_THREADS: '2', ENHANCE_MAX_SECONDS: '60' });
  ({ key } = await app.newKey({ credits: 1000 }));
  // Real speech from our own TTS, then a quiet noisy recording with a long pause in the middle.
  const voice = (await app.get(`${API}/tts/voices?language=en`, key)).json.data.records[0];
  const say = async (text: string) => {
    const c = await app.post(`${API}/tts/task/create`, { voice_id: voice.id, emotion: 0, speed: 1, language: 'en', text, format: 'wav' }, key);
    const d = await app.waitTask(`${API}/tts/task/get`, 'global_id', c.json.data.job_id, key);
    return download(d.data.output, `${c.json.data.job_id}.wav`);
  };
  const a = await say('The meeting starts at nine. Please bring the quarterly report.');
  const b = await say('After the break we will discuss the budget for next year.');
  noisyPath = join(app.dataDir, 'noisy.wav');
  await run(tools.ffmpeg, [
    '-hide_banner', '-loglevel', 'error', '-y', '-i', a, '-i', b,
    '-f', 'lavfi', '-i', 'anoisesrc=color=pink:sample_rate=22050:amplitude=0.02:duration=30',
    '-filter_complex', '[0]aresample=22050,apad=pad_len=88200[a];[a][1]concat=n=2:v=0:a=1,volume=0.2[s];[s][2]amix=inputs=2:duration=first',
    '-ar', '22050', '-c:a', 'pcm_s16le', noisyPath,
  ]);
  noisyUrl = await upload(noisyPath);
}, 120_000);
afterAll(async () => app?.close());

describe('enhancement through the API', () => {
  it('normalize: output in the input family, at -16 LUFS within 0.5 LU, billed per minute', async () => {
    const done = await enhance({ normalize: true });
    expect(done.data.status, JSON.stringify(done)).toBe('success');
    expect(done.data.output).toBe(done.data.result);
    expect(done.data.file_size).toBeGreaterThan(1000);
    expect(done.data.stages).toEqual(['normalize']);
    expect(done.data.credits).toBe(1);
    const out = await download(done.data.output, 'norm.wav');
    const info = await probeMedia(out, { ffprobe: tools.ffprobe });
    expect(info.codec).toMatch(/pcm/);
    expect(info.sampleRate).toBe(22050);
    const loud = await measureLoudness(out, { ffmpeg: tools.ffmpeg });
    expect(Math.abs(loud.integrated + 16)).toBeLessThan(0.5);
  }, 240_000);

  it('long_silences shortens the 4 s pause; remove_noise lowers the noise in it by over 10 dB', async () => {
    const inputSeconds = (await probeMedia(noisyPath, { ffprobe: tools.ffprobe })).durationSeconds;
    const cut = await enhance({ long_silences: true });
    expect(cut.data.status, JSON.stringify(cut)).toBe('success');
    expect(cut.data.duration).toBeLessThan(inputSeconds - 2);
    expect(cut.data.duration).toBeGreaterThan(inputSeconds - 4.5);
    const clean = await enhance({ remove_noise: true });
    expect(clean.data.engine).toMatch(/rnnoise|gtcrn/);
    // The 4 s pause holds only noise: its level must drop clearly after denoising.
    const pauseLevel = async (path: string) => {
      const { stderr } = await run(tools.ffmpeg, ['-hide_banner', '-nostdin', '-ss', '4.5', '-t', '2', '-i', path, '-af', 'volumedetect', '-f', 'null', '-']);
      return Number(/mean_volume: (-?[\d.]+) dB/.exec(stderr)?.[1]);
    };
    const before = await pauseLevel(noisyPath);
    const after = await pauseLevel(await download(clean.data.output, 'clean.wav'));
    expect(after).toBeLessThan(before - 10);
  }, 240_000);

  it('an empty enhance_type means autoid, which says what it chose and why', async () => {
    const done = await enhance({});
    expect(done.data.status, JSON.stringify(done)).toBe('success');
    expect(done.data.stages).toContain('normalize');
    for (const s of done.data.stages) expect(done.data.reasons[s]).toMatch(/autoid/);
    const studio = await enhance({ studio_sound: true, mouth_sounds: true, remove_reverb: true });
    expect(studio.data.status, JSON.stringify(studio)).toBe('success');
    expect(studio.data.stages).toEqual(expect.arrayContaining(['declick', 'denoise', 'dereverb', 'normalize']));
  }, 400_000);

  it('fillers, hesitations, stutters: accepted, output decodes, shorter when there is something to cut, equal otherwise', async () => {
    // Speech-like material with a filled pause, a held vowel inside a word and a repeated syllable.
    const R = 16000;
    const x = concat([
      speechLike(8, R, 1), silence(0.3, R), filler(0.5, R), silence(0.3, R), speechLike(6, R, 2), silence(0.2, R),
      syllable(R, 0).subarray(0, 800), filler(0.8, R, 140), speechLike(4, R, 8), silence(0.2, R),
      syllable(R, 0), silence(0.08, R), syllable(R, 1), silence(0.2, R), speechLike(6, R, 5),
    ]);
    const disfluent = join(app.dataDir, 'disfluent.wav');
    await encodeAudio({ sampleRate: R, channels: [x] }, disfluent, { ffmpeg: tools.ffmpeg, format: 'wav' });
    const url = await upload(disfluent);
    const inSeconds = x.length / R;
    for (const [flag, minCut] of [['fillers', 0.4], ['hesitations', 0.4], ['stutters', 0.2]] as const) {
      const done = await enhance({ [flag]: true }, url);
      expect(done.data.status, JSON.stringify(done)).toBe('success');
      expect(done.data.stages).toEqual(['disfluency']);
      expect(done.data.engine).toContain('disfluency-dsp');
      const out = await download(done.data.output, `${flag}.wav`);
      const info = await probeMedia(out, { ffprobe: tools.ffprobe });
      expect(info.sampleRate).toBe(R);
      expect(done.data.duration).toBeLessThan(inSeconds - minCut);
      expect(info.durationSeconds).toBeLessThan(inSeconds - minCut);
    }
    // Varying speech-like content without disfluencies: nothing is cut.
    const plain = join(app.dataDir, 'plain.wav');
    const y = speechLike(30, R, 3);
    await encodeAudio({ sampleRate: R, channels: [y] }, plain, { ffmpeg: tools.ffmpeg, format: 'wav' });
    const same = await enhance({ fillers: true, hesitations: true }, await upload(plain));
    expect(same.data.status, JSON.stringify(same)).toBe('success');
    const info = await probeMedia(await download(same.data.output, 'plain-out.wav'), { ffprobe: tools.ffprobe });
    expect(Math.abs(info.durationSeconds - y.length / R)).toBeLessThan(0.01);
  }, 400_000);

  it('remove_background_audio takes the music bed out; keep_music keeps it; both keep the duration', async () => {
    // The noisy speech centred in stereo over a repeating, wide two-chord pattern (a synthetic music bed).
    const mixPath = join(app.dataDir, 'speech-music.wav');
    await run(tools.ffmpeg, [
      '-hide_banner', '-loglevel', 'error', '-y', '-i', noisyPath,
      '-f', 'lavfi', '-i', "aevalsrc=exprs='0.05*sin(2*PI*220*t)*gt(mod(t\\,0.5)\\,0.25)+0.04*sin(2*PI*330*t)|0.05*sin(2*PI*277*t)*lt(mod(t\\,0.5)\\,0.25)+0.04*sin(2*PI*415*t)':s=22050:d=30",
      '-filter_complex', '[0]pan=stereo|c0=c0|c1=c0[v];[v][1]amerge=inputs=2,pan=stereo|c0=c0+c2|c1=c1+c3',
      '-ar', '22050', '-c:a', 'pcm_s16le', mixPath,
    ]);
    const inputSeconds = (await probeMedia(mixPath, { ffprobe: tools.ffprobe })).durationSeconds;
    const url = await upload(mixPath);
    // In the 4 s pause only the music (and a little noise) sounds: its level tells what became of the music.
    const pauseLevel = async (path: string) => {
      const { stderr } = await run(tools.ffmpeg, ['-hide_banner', '-nostdin', '-ss', '4.5', '-t', '2', '-i', path, '-af', 'volumedetect', '-f', 'null', '-']);
      return Number(/mean_volume: (-?[\d.]+) dB/.exec(stderr)?.[1]);
    };
    const before = await pauseLevel(mixPath);
    const voice = await enhance({ remove_background_audio: true }, url);
    expect(voice.data.status, JSON.stringify(voice)).toBe('success');
    expect(voice.data.stages).toEqual(['separate', 'denoise']);
    expect(voice.data.engine).toMatch(/builtin-speech/);
    expect(Math.abs(voice.data.duration - inputSeconds)).toBeLessThan(0.05);
    const voicePath = await download(voice.data.output, 'voice.wav');
    const info = await probeMedia(voicePath, { ffprobe: tools.ffprobe });
    expect(info.channels).toBe(2);
    expect(Math.abs(info.durationSeconds - inputSeconds)).toBeLessThan(0.05);
    expect(await pauseLevel(voicePath)).toBeLessThan(before - 10);

    const kept = await enhance({ keep_music: true, remove_noise: true, remove_background_audio: true }, url);
    expect(kept.data.status, JSON.stringify(kept)).toBe('success');
    expect(kept.data.reasons.separate).toMatch(/keep_music/);
    expect(Math.abs(kept.data.duration - inputSeconds)).toBeLessThan(0.05);
    const keptLevel = await pauseLevel(await download(kept.data.output, 'kept.wav'));
    // The music bed stays (the denoiser only saw the voice): within 3 dB of the input.
    expect(Math.abs(keptLevel - before)).toBeLessThan(3);
  }, 400_000);

  it('refuses over-limit inputs without charging', async () => {
    const poor = await app.newKey({ credits: 5 });
    const long = join(app.dataDir, 'long.mp3');
    await run(tools.ffmpeg, ['-hide_banner', '-loglevel', 'error', '-y', '-f', 'lavfi', '-i', 'sine=frequency=200:duration=90', '-b:a', '32k', long]);
    const done = await enhance({ normalize: true }, await upload(long), poor.key);
    expect(done.data.status).toBe('failed');
    expect(done.data.error).toMatch(/limit is 60 s/);
    expect((await app.container.accounts.getAccount(poor.accountId))!.balance).toBe(5);
  }, 120_000);

  it('bills what a file holds, not what its header claims: 7,000 s and 10 h claims on ~1 s of audio cost 1 credit', async () => {
    for (const [name, claim] of [['claims-7000s.mp3', 7000], ['claims-10h.mp3', 36000]] as const) {
      const liar = await lyingMp3(name, 1, claim);
      expect((await readFile(liar)).length).toBeLessThan(8000);
      const who = await app.newKey({ credits: 200 });
      const done = await enhance({ normalize: true }, await upload(liar), who.key);
      expect(done.data.status, JSON.stringify(done)).toBe('success');
      expect(done.data.credits).toBe(1);
      expect(done.data.duration).toBeGreaterThan(0.9);
      expect(done.data.duration).toBeLessThan(1.5);
      expect((await app.container.accounts.getAccount(who.accountId))!.balance).toBe(199);
    }
  }, 240_000);

  it('stops at ENHANCE_MAX_SECONDS of decoded audio when the header claims less than the file holds, without charging', async () => {
    // 90 s of audio (limit 60) whose header says 5 s.
    const liar = await lyingMp3('claims-5s.mp3', 90, 5);
    const poor = await app.newKey({ credits: 5 });
    const done = await enhance({ normalize: true }, await upload(liar), poor.key);
    expect(done.data.status).toBe('failed');
    expect(done.data.error).toBe('The input holds more than 60 s of audio; the limit is 60 s');
    expect((await app.container.accounts.getAccount(poor.accountId))!.balance).toBe(5);
  }, 120_000);
});
