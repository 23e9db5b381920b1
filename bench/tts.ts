/**
 * TTS real-time factor per engine and language on the corpus paragraphs. Baseline, in the same run:
 * the engine's own synthesis of the whole paragraph in one call (no splitting, prosody, fades, or
 * encoding). The ratio shows what Soundry's pipeline (split, emotion, joins) and MP3 encoding add.
 */
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTtsEngines } from '../src/engines/tts/setup.js';
import { synthesizeText } from '../src/engines/tts/pipeline.js';
import { encodeAudio, resolveMediaTools } from '../src/media/ffmpeg.js';
import { durationSeconds } from '../src/media/audio.js';
import { machine, median, root, writeResult } from './lib.js';

const CORPUS = join(root, '..', 'shared', 'corpus', 'tts_text');
const FILES: Record<string, string> = {
  en: 'piper_rainbow/en.txt', zh: 'piper_rainbow/zh.txt', ar: 'piper_rainbow/ar.txt', ru: 'piper_rainbow/ru.txt',
  es: 'piper_rainbow/es.txt', fr: 'piper_rainbow/fr.txt', pt: 'piper_rainbow/pt.txt', de: 'piper_rainbow/de.txt',
  ko: 'commonvoice_cc0/ko.txt', ja: 'commonvoice_cc0/ja.txt', zh_yue: 'piper_rainbow/zh.txt',
};
const REPEATS = Number(process.env.BENCH_REPEATS ?? 3);

export async function benchTts(): Promise<string> {
  if (!existsSync(CORPUS)) throw new Error(`corpus not found at ${CORPUS}`);
  const registry = createTtsEngines({ modelsDir: process.env.MODELS_DIR ?? join(root, 'data', 'models') });
  const tools = resolveMediaTools({ preferSystem: true });
  const voices = await registry.listVoices();
  const dir = await mkdtemp(join(tmpdir(), 'soundry-bench-tts-'));
  const ctx = { tmpDir: dir, signal: new AbortController().signal, onProgress: () => {} };
  const rows: string[] = [];
  try {
    for (const [language, file] of Object.entries(FILES)) {
      const text = readFileSync(join(CORPUS, file), 'utf8').trim();
      const byEngine = new Map<string, number>();
      for (const v of voices) if (v.language === language && !byEngine.has(v.name.split(':')[0]!)) byEngine.set(v.name.split(':')[0]!, v.id);
      for (const [engineId, voiceId] of byEngine) {
        const resolved = (await registry.resolveVoice(voiceId))!;
        const neutral = { rate: 1, pitch: 1, pitchRange: 1, energy: 1 };
        // Warm-up: the first synthesis in a process loads WASM/sessions (reported separately).
        const t0 = performance.now();
        await resolved.engine.synthesize({ text: 'Warm up.', voice: resolved.voice, prosody: neutral }, ctx);
        const firstCall = (performance.now() - t0) / 1000;
        const base: number[] = [];
        const full: number[] = [];
        let seconds = 0;
        for (let i = 0; i < REPEATS; i++) {
          let t = performance.now();
          const raw = await resolved.engine.synthesize({ text, voice: resolved.voice, prosody: neutral }, ctx);
          base.push((performance.now() - t) / 1000 / durationSeconds(raw));
          t = performance.now();
          const audio = await synthesizeText({ text, language, voice: resolved.voice, emotionId: 0, speed: 1 }, resolved.engine, ctx, { sonic: registry.sonic, japanese: registry.japanese });
          await encodeAudio(audio, join(dir, 'out.mp3'), { ffmpeg: tools.ffmpeg, format: 'mp3' });
          seconds = durationSeconds(audio);
          full.push((performance.now() - t) / 1000 / seconds);
        }
        rows.push(`| ${language} | ${engineId} (${voiceId}) | ${[...text].length} | ${seconds.toFixed(1)} | ${median(base).toFixed(4)} | ${median(full).toFixed(4)} | ${(median(full) / median(base)).toFixed(2)} | ${firstCall.toFixed(2)} |`);
        console.error(rows.at(-1));
      }
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  return writeResult('tts', [
    '# TTS real-time factor',
    '',
    `Machine: ${machine()}; ffmpeg from ${tools.source}. Command: \`npm run bench -- tts\` (BENCH_REPEATS=${REPEATS}, medians). Measured ${new Date().toISOString()}.`,
    'Texts: `../shared/corpus/tts_text` (zh_yue reads the Mandarin paragraph with a Cantonese voice: the corpus has no Cantonese text).',
    'RTF = processing seconds / audio seconds (lower is faster). Baseline: the engine alone, whole paragraph in one call, neutral prosody.',
    'Soundry: the full worker path (sentence split, emotion prosody, joins with fades, peak normalisation) plus MP3 encoding.',
    '',
    '| language | engine (voice id) | characters | audio s | RTF engine alone (baseline) | RTF Soundry + MP3 | ratio | first call s |',
    '|---|---|---|---|---|---|---|---|',
    ...rows,
    '',
  ].join('\n'));
}
