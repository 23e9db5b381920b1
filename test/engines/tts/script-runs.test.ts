import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EngineContext } from '../../../src/ports/engines.js';
import { createTtsRegistry, type TtsRegistry } from '../../../src/engines/tts/registry.js';
import { splitScriptRuns } from '../../../src/engines/tts/script-runs.js';
import { synthesize } from '../../../src/engines/tts/synthesize.js';
import type { VoiceRecord } from '../../../src/engines/tts/voices.js';

describe('splitScriptRuns', () => {
  it('hands foreign scripts to the language that owns them, keeps the rest with the voice', () => {
    expect(splitScriptRuns('Hello 你好 Привет مرحبا こんにちは世界 world.', 'en')).toEqual([
      { text: 'Hello ', espeak: null },
      { text: '你好 ', espeak: 'cmn' },
      { text: 'Привет ', espeak: 'ru' },
      { text: 'مرحبا ', espeak: 'ar' },
      { text: 'こんにちは世界 ', espeak: 'ja' },
      { text: 'world.', espeak: null },
    ]);
  });

  it('leaves text in the voice\'s own script (and Latin, digits, punctuation) as one run', () => {
    expect(splitScriptRuns('我用iPhone 15拍照，价格是7999元。', 'zh')).toEqual([{ text: '我用iPhone 15拍照，价格是7999元。', espeak: null }]);
    expect(splitScriptRuns('Привет, мир! 2024', 'ru')).toEqual([{ text: 'Привет, мир! 2024', espeak: null }]);
    expect(splitScriptRuns('The year 2024, twice.', 'en')).toEqual([{ text: 'The year 2024, twice.', espeak: null }]);
    expect(splitScriptRuns('にほんごと漢字', 'ja')).toEqual([{ text: 'にほんごと漢字', espeak: null }]);
    expect(splitScriptRuns('你好', 'zh_yue')).toEqual([{ text: '你好', espeak: null }]);
  });

  it('hands Latin words in Japanese text to English (espeak ja spells them letter by letter)', () => {
    expect(splitScriptRuns('きのうiPhoneをかいました。', 'ja')).toEqual([
      { text: 'きのう', espeak: null },
      { text: 'iPhone', espeak: 'en-us' },
      { text: 'をかいました。', espeak: null },
    ]);
    expect(splitScriptRuns('Я купил iPhone.', 'ru')).toEqual([{ text: 'Я купил iPhone.', espeak: null }]);
  });

  it('reads kana in a Chinese voice\'s text as Japanese, Cyrillic in a German one as Russian', () => {
    expect(splitScriptRuns('他说 ありがとう', 'zh').map((r) => r.espeak)).toEqual([null, 'ja']);
    // Kana joined to ideographs makes the whole run Japanese (okurigana: 読みます).
    expect(splitScriptRuns('読みます', 'zh').map((r) => r.espeak)).toEqual(['ja']);
    expect(splitScriptRuns('Er sagte до свидания.', 'de')).toEqual([
      { text: 'Er sagte ', espeak: null },
      { text: 'до свидания.', espeak: 'ru' },
    ]);
  });
});

describe('mixed scripts through espeak', () => {
  let registry: TtsRegistry;
  let voices: VoiceRecord[];
  let dir = '';
  let ctx: EngineContext;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'soundry-scripts-'));
    ctx = { tmpDir: dir, signal: new AbortController().signal, onProgress: () => undefined };
    registry = createTtsRegistry();
    voices = await registry.listVoices();
  });
  afterAll(async () => rm(dir, { recursive: true, force: true }));

  const seconds = async (text: string, name: string) => {
    const voice = voices.find((v) => v.name === name)!;
    const out = await synthesize({ text, language: voice.language, voiceId: voice.id, emotion: 8, speed: 1 }, registry, ctx);
    return out.audio.channels[0]!.length / out.audio.sampleRate;
  };

  // Before: an English voice said "Chinese letter" per ideograph and spelled Cyrillic letter by letter.
  it.each([
    ['你好，世界', 'espeak:cmn:f1'],
    ['Привет', 'espeak:ru:f1'],
    ['こんにちは、日本語です', 'espeak:ja:f1'],
  ])('an English voice reads %s about as long as its own language\'s voice does', async (text, native) => {
    const inEnglish = await seconds(text, 'espeak:en-us:f1');
    const inNative = await seconds(text, native);
    expect(inEnglish / inNative).toBeGreaterThan(0.6);
    expect(inEnglish / inNative).toBeLessThan(1.5);
  });
});
