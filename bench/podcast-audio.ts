/**
 * Podcast episodes end to end through the real API (in-process server, real engines): final audio
 * duration per duration level against the level's range, and wall time per episode.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DURATION_LEVELS, measureSize, rateOf } from '../src/engines/podcast/script.js';
import { extractSource } from '../src/engines/podcast/sources.js';
import { sniffMediaType } from '../src/media/sniff.js';
import { startTestApp } from '../test/helpers/app.js';
import { machine, root, writeResult } from './lib.js';

const API = '/audio/api/v1/api-keys';
const PLAN: Array<{ file: string; levels: number[] }> = [
  { file: 'html/readability_v8-blog.html', levels: [1, 2, 3, 4, 5, 6, 7] },
  { file: 'html/readability_bbc-1.html', levels: [1, 2, 4] },
  { file: 'html/readability_heise.html', levels: [1, 2, 4] },
  { file: 'html/readability_folha.html', levels: [1, 2, 4] },
];
/** Short parallel texts in every podcast language: too short for long levels, enough to measure the spoken rate. */
const RATE_TEXTS: Array<{ file: string; language: string }> = [
  ...['ar', 'de', 'en', 'es', 'fr', 'pt', 'ru', 'zh'].map((l) => ({ file: `piper_rainbow/${l}.txt`, language: l })),
  { file: 'piper_rainbow/zh.txt', language: 'zh_yue' },
  { file: 'commonvoice_cc0/ja.txt', language: 'ja' },
  { file: 'commonvoice_cc0/ko.txt', language: 'ko' },
];

export async function benchPodcastAudio(): Promise<string> {
  const corpus = join(root, '../shared/corpus/podcast_sources');
  if (!existsSync(corpus)) return writeResult('podcast-audio', '# Podcast episodes\n\nCorpus not found; nothing measured.\n');
  const app = await startTestApp({ WORKER_THREADS: '2', TTS_MAX_CHARS: '100000' });
  const rows: string[] = [];
  const rates: string[] = [];
  try {
    const { key } = await app.newKey({ credits: 1e6, rateLimit: 1e6 });
    const episode = async (text: string, language: string, level: number) => {
      const t0 = performance.now();
      const c = await app.post(`${API}/podcast/script/create`, { source_type: 4, text, duration: level, style: 1, language }, key);
      const s = await app.waitTask(`${API}/podcast/script/get`, 'global_id', c.json.data.global_id, key, 600_000);
      const a0 = await app.post(`${API}/podcast/audio/create`, { podcast_script: s.data.podcast_script, hightlights: s.data.hightlights, global_id: s.data.global_id, title: s.data.title }, key);
      const a = await app.waitTask(`${API}/podcast/audio/get`, 'global_id', a0.json.data.global_id, key, 600_000);
      const size = measureSize(s.data.podcast_script.map((l: { text: string }) => l.text).join('\n'), language);
      return { minutes: a.data.duration / 60, lines: s.data.podcast_script.length, credits: a.data.credits, size, wall: (performance.now() - t0) / 1000 };
    };
    const texts = join(root, '../shared/corpus/tts_text');
    for (const { file, language } of RATE_TEXTS) {
      const path = join(texts, file);
      if (!existsSync(path)) continue;
      const e = await episode(readFileSync(path, 'utf8'), language, 2);
      const realized = e.size / e.minutes;
      rates.push(`| ${language} | ${file} | ${e.size} | ${e.minutes.toFixed(2)} | ${realized.toFixed(0)} | ${rateOf(language)} | ${(realized / rateOf(language)).toFixed(2)} |`);
      console.error(rates.at(-1));
    }
    for (const { file, levels } of PLAN) {
      const path = join(corpus, file);
      const bytes = readFileSync(path);
      const src = await extractSource({ path, sniffed: sniffMediaType(bytes.subarray(0, 4096)), contentType: null, url: null });
      const language = src.language ?? 'en';
      for (const level of levels) {
        const e = await episode(src.text, language, level);
        const range = DURATION_LEVELS[level]!;
        const inside = e.minutes >= range.minMinutes && e.minutes <= range.maxMinutes;
        rows.push(`| ${file} | ${language} | ${level} | ${range.minMinutes}-${range.maxMinutes} | ${e.minutes.toFixed(2)} | ${inside ? 'yes' : 'no'} | ${e.lines} | ${e.size} | ${e.credits} | ${e.wall.toFixed(1)} |`);
        console.error(rows.at(-1));
      }
    }
  } finally {
    await app.close();
  }
  return writeResult('podcast-audio', [
    '# Podcast episodes: final audio duration per level',
    '',
    `Machine: ${machine()}. Command: \`npm run bench -- podcast-audio\`. Measured ${new Date().toISOString()}.`,
    'Each row: the page text as source_type 4, built-in generator, built-in voices, through the HTTP API (script, then audio). Wall time covers both steps. A source with too little text for a level gives a shorter script and episode (the outline says so): readability_heise has 1,756 characters of article text, too little for level 4.',
    '',
    '| source | language | level | expected min | episode min | inside | lines | words/chars | credits | wall s |',
    '|---|---|---|---|---|---|---|---|---|---|',
    ...rows,
    '',
    '## Spoken rate per language (built-in voices, level 2 scripts from tts_text)',
    '',
    'Script size (words, or characters for zh/zh_yue/ja/ko) per minute of final audio, pauses included, against SPEAKING_RATE, the rate the generator sizes scripts with.',
    '',
    '| language | source | size | episode min | realized per min | SPEAKING_RATE | ratio |',
    '|---|---|---|---|---|---|---|',
    ...rates,
    '',
  ].join('\n'));
}
