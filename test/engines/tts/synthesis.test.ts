import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TaskFailure } from '../../../src/domain/errors.js';
import { decodeAudio, encodeAudio, resolveMediaTools } from '../../../src/media/ffmpeg.js';
import type { EngineContext } from '../../../src/ports/engines.js';
import { JapaneseReader } from '../../../src/engines/tts/japanese.js';
import { createTtsRegistry, type TtsRegistry } from '../../../src/engines/tts/registry.js';
import { synthesize } from '../../../src/engines/tts/synthesize.js';
import type { VoiceRecord } from '../../../src/engines/tts/voices.js';
import { medianF0, rms, silentRuns } from './analysis.js';

const CORPUS = resolve(import.meta.dirname, '../../../../shared/corpus/tts_text');
const FALLBACK: Record<string, string> = {
  zh: '彩虹是一种光学现象，雨后常常可以看到。',
  zh_yue: '今日天氣好好，我哋一齊去公園散步。',
  en: 'A rainbow is an optical phenomenon that appears as a colourful arc in the sky.',
  ar: 'قوس قزح ظاهرة طبيعية تظهر في السماء بعد المطر.',
  ru: 'Радуга — атмосферное оптическое явление, наблюдаемое после дождя.',
  es: 'El arcoíris es un fenómeno óptico que aparece en el cielo después de la lluvia.',
  fr: "L'arc-en-ciel est un phénomène optique qui apparaît dans le ciel après la pluie.",
  pt: 'O arco-íris é um fenômeno óptico que aparece no céu depois da chuva.',
  de: 'Der Regenbogen ist ein optisches Phänomen, das nach dem Regen am Himmel erscheint.',
  ko: '무지개는 비가 온 뒤 하늘에 나타나는 아름다운 현상입니다.',
  ja: '虹は雨上がりの空に現れる美しい現象です。',
};
const CORPUS_FILES: Record<string, string> = {
  ja: 'commonvoice_cc0/ja.txt',
  ko: 'commonvoice_cc0/ko.txt',
  zh_yue: 'piper_rainbow/zh.txt', // Cantonese reads the same Chinese characters
};

/** A real sentence of the language: the first corpus line of moderate length, else a built-in one. */
function sentenceFor(language: string): string {
  const file = join(CORPUS, CORPUS_FILES[language] ?? `piper_rainbow/${language}.txt`);
  if (existsSync(file)) {
    const lines = readFileSync(file, 'utf8').split('\n').map((l) => l.trim());
    const pick = lines.find((l) => [...l].length >= 12 && [...l].length <= 90);
    if (pick) return pick;
    const first = lines.find((l) => l.length > 0);
    if (first) return [...first].slice(0, 90).join('');
  }
  return FALLBACK[language]!;
}

const LANGUAGES = ['zh', 'en', 'ar', 'ru', 'es', 'fr', 'pt', 'de', 'ko', 'ja', 'zh_yue'];

describe('built-in TTS', () => {
  let registry: TtsRegistry;
  let voices: VoiceRecord[];
  let dir = '';
  let ctx: EngineContext;
  const tools = resolveMediaTools({ preferSystem: true });

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'soundry-tts-'));
    ctx = { tmpDir: dir, signal: new AbortController().signal, onProgress: () => undefined };
    registry = createTtsRegistry();
    voices = await registry.listVoices();
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const voiceFor = (language: string, gender = 1) => voices.find((v) => v.language === language && v.gender === gender)!;
  const run = (text: string, language: string, extra: { voiceId?: number; emotion?: number; speed?: number } = {}) =>
    synthesize({ text, language, voiceId: extra.voiceId ?? voiceFor(language).id, emotion: extra.emotion ?? 0, speed: extra.speed ?? 1 }, registry, ctx);

  it('lists voices for every language with spec records and all nine emotions', () => {
    for (const language of LANGUAGES) {
      const mine = voices.filter((v) => v.language === language);
      expect(mine.some((v) => v.gender === 1) && mine.some((v) => v.gender === 2), language).toBe(true);
    }
    expect(voices.filter((v) => v.language === 'en').length).toBeGreaterThanOrEqual(12);
    expect(new Set(voices.map((v) => v.id)).size).toBe(voices.length);
    for (const v of voices) {
      expect(v.emotion).toHaveLength(9);
      expect([1, 2]).toContain(v.gender);
      expect([1, 2, 3, 4]).toContain(v.age);
    }
    expect(voices.find((v) => v.name === 'espeak:en-us:f3')?.id).toBe(1007);
  });

  it.each(LANGUAGES)('speaks %s: plausible, audible, survives MP3', async (language) => {
    const text = sentenceFor(language);
    // CPU time, not wall time: other processes on a shared machine must not fail the test.
    const cpu = process.cpuUsage();
    const out = await run(text, language);
    const seconds = out.audio.channels[0]!.length / out.audio.sampleRate;
    const used = process.cpuUsage(cpu);
    const rtf = (used.user + used.system) / 1e6 / seconds;
    expect(seconds, text).toBeGreaterThan(0.5);
    expect(seconds).toBeLessThan(30);
    expect(rms(out.audio.channels[0]!)).toBeGreaterThan(0.02);
    expect(rtf).toBeLessThan(1);
    const mp3 = join(dir, `${language}.mp3`);
    await encodeAudio(out.audio, mp3, { ffmpeg: tools.ffmpeg, format: 'mp3' });
    const back = await decodeAudio(mp3, { ffmpeg: tools.ffmpeg });
    expect(Math.abs(back.channels[0]!.length / back.sampleRate - seconds) / seconds).toBeLessThan(0.05);
  });

  it.each(['en', 'zh'])('speed changes duration, not pitch (%s)', async (language) => {
    const text = sentenceFor(language);
    const normal = await run(text, language, { speed: 1, emotion: 8 });
    const fast = await run(text, language, { speed: 2, emotion: 8 });
    const slow = await run(text, language, { speed: 0.5, emotion: 8 });
    const dur = (o: typeof normal) => o.audio.channels[0]!.length / o.audio.sampleRate;
    const f0 = (o: typeof normal) => medianF0(o.audio.channels[0]!, o.audio.sampleRate);
    expect(dur(fast) / dur(normal)).toBeGreaterThan(0.4);
    expect(dur(fast) / dur(normal)).toBeLessThan(0.6);
    expect(dur(slow) / dur(normal)).toBeGreaterThan(1.6);
    expect(dur(slow) / dur(normal)).toBeLessThan(2.4);
    const f0n = f0(normal);
    expect(Math.abs(f0(fast) / f0n - 1)).toBeLessThan(0.1);
    expect(Math.abs(f0(slow) / f0n - 1)).toBeLessThan(0.1);
  });

  it('reads kanji as Japanese, not as "Chinese letter"', async () => {
    const reader = new JapaneseReader();
    expect(await reader.toKana('日本語を話します。')).toBe('にほんごをはなします。');
    const kana = await reader.toKana('東京は今日も晴れです。');
    expect(JapaneseReader.hasKanji(kana)).toBe(false);
    const raw = await registry.espeak.phonemizeIpa('東京は今日も晴れです。', 'ja');
    const converted = await registry.espeak.phonemizeIpa(kana, 'ja');
    expect(raw).toMatch(/tʃˈaɪniːz/); // espeak's fallback: English "Chinese letter"
    expect(converted).not.toMatch(/tʃˈaɪniːz|lˈe̞tə/);
    expect(converted).toMatch(/o̞o̞kʲo̞o̞/); // トーキョー with long vowels, not と-う-きょ-う
  });

  it('phonemizes to IPA, one sentence per line, punctuation kept', async () => {
    const ipa = await registry.espeak.phonemizeIpa('Hello world, how are you? Fine.', 'en-us');
    expect(ipa.split('\n')).toHaveLength(2);
    expect(ipa).toMatch(/^həlˈoʊ wˈɜːld, hˈaʊ ɑːɹ juː\?\nfˈaɪn\.$/);
  });

  it('emotions change prosody: happy is higher than sad, sad is slower', async () => {
    const text = sentenceFor('en');
    const happy = await run(text, 'en', { emotion: 1 });
    const sad = await run(text, 'en', { emotion: 3 });
    expect(happy.emotion).toBe('happy');
    const f0h = medianF0(happy.audio.channels[0]!, happy.audio.sampleRate);
    const f0s = medianF0(sad.audio.channels[0]!, sad.audio.sampleRate);
    expect(f0h / f0s).toBeGreaterThan(1.15);
    expect(sad.audio.channels[0]!.length).toBeGreaterThan(happy.audio.channels[0]!.length * 1.1);
    const auto = await run('I am so happy, this is wonderful!', 'en');
    expect(auto.emotion).toBe('happy');
  });

  it('line breaks become pauses, and joins do not click', async () => {
    const out = await run('The first line is here.\nThe second line follows.\n\nA new paragraph starts.', 'en', { emotion: 8 });
    const x = out.audio.channels[0]!;
    const gaps = silentRuns(x, out.audio.sampleRate).sort((a, b) => b - a);
    expect(gaps[0]).toBeGreaterThan(0.7); // paragraph
    expect(gaps[1]).toBeGreaterThan(0.35); // line
    // At both edges of every inserted pause (a run of exact zeros >= 0.2 s) the signal is already
    // faded to near zero: the biggest sample-to-sample jump within 1 ms of each edge is tiny.
    const minRun = Math.round(0.2 * out.audio.sampleRate);
    const around = Math.round(0.001 * out.audio.sampleRate);
    const maxJump = (from: number, to: number) => {
      let m = 0;
      for (let i = Math.max(1, from); i < Math.min(x.length, to); i++) m = Math.max(m, Math.abs(x[i]! - x[i - 1]!));
      return m;
    };
    let edges = 0;
    let worst = 0;
    for (let i = 0; i < x.length; ) {
      if (x[i] !== 0) {
        i++;
        continue;
      }
      let j = i;
      while (j < x.length && x[j] === 0) j++;
      if (j - i >= minRun && i > 0 && j < x.length) {
        edges += 2;
        worst = Math.max(worst, maxJump(i - around, i + 1), maxJump(j, j + around));
      }
      i = j;
    }
    expect(edges).toBeGreaterThanOrEqual(4);
    expect(worst).toBeLessThan(0.02);
  });

  it('speaks with Flite voices too', async () => {
    const slt = voices.find((v) => v.name === 'flite:slt')!;
    const out = await run(sentenceFor('en'), 'en', { voiceId: slt.id, speed: 2 });
    expect(out.engine).toBe('flite');
    expect(out.audio.sampleRate).toBe(16000);
    expect(rms(out.audio.channels[0]!)).toBeGreaterThan(0.02);
    expect(medianF0(out.audio.channels[0]!, 16000)).toBeGreaterThan(140); // a female voice
  });

  it('refuses unknown voices, language mismatches and bad input with TaskFailure', async () => {
    await expect(run('Hello.', 'en', { voiceId: 999999 })).rejects.toBeInstanceOf(TaskFailure);
    await expect(run('Hello.', 'de', { voiceId: voiceFor('en').id })).rejects.toThrow(/speaks en, not de/);
    await expect(run('Hello.', 'en', { emotion: 42 })).rejects.toBeInstanceOf(TaskFailure);
    await expect(run('!!!', 'en')).rejects.toBeInstanceOf(TaskFailure);
    const all = await synthesize({ text: 'Hallo Welt.', language: 'all', voiceId: voiceFor('de').id, emotion: 0, speed: 1 }, registry, ctx);
    expect(all.voiceKey).toMatch(/^espeak:de:/);
  });

  it('stops on abort', async () => {
    const controller = new AbortController();
    controller.abort();
    await expect(
      synthesize({ text: 'Hello there.', language: 'en', voiceId: voiceFor('en').id, emotion: 0, speed: 1 }, registry, { ...ctx, signal: controller.signal }),
    ).rejects.toThrow();
  });
});
