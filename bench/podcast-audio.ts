/**
 * Podcast episodes end to end through the real API (in-process server, real engines): final audio
 * duration per duration level against the level's range, and wall time per episode.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DURATION_LEVELS } from '../src/engines/podcast/script.js';
import { extractSource } from '../src/engines/podcast/sources.js';
import { sniffMediaType } from '../src/media/fetch-input.js';
import { startTestApp } from '../test/helpers/app.js';
import { machine, root, writeResult } from './lib.js';

const API = '/audio/api/v1/api-keys';
const PLAN: Array<{ file: string; levels: number[] }> = [
  { file: 'html/readability_v8-blog.html', levels: [1, 2, 3, 4, 5, 6, 7] },
  { file: 'html/readability_bbc-1.html', levels: [1, 2, 4] },
  { file: 'html/readability_heise.html', levels: [1, 2, 4] },
  { file: 'html/readability_folha.html', levels: [1, 2, 4] },
];

export async function benchPodcastAudio(): Promise<string> {
  const corpus = join(root, '../shared/corpus/podcast_sources');
  if (!existsSync(corpus)) return writeResult('podcast-audio', '# Podcast episodes\n\nCorpus not found; nothing measured.\n');
  const app = await startTestApp({ WORKER_THREADS: '2', TTS_MAX_CHARS: '100000' });
  const rows: string[] = [];
  try {
    const { key } = await app.newKey({ credits: 1e6, rateLimit: 1e6 });
    for (const { file, levels } of PLAN) {
      const path = join(corpus, file);
      const bytes = readFileSync(path);
      const src = await extractSource({ path, sniffed: sniffMediaType(bytes.subarray(0, 4096)), contentType: null, url: null });
      const language = src.language ?? 'en';
      for (const level of levels) {
        const t0 = performance.now();
        const c = await app.post(`${API}/podcast/script/create`, { source_type: 4, text: src.text, duration: level, style: 1, language }, key);
        const s = await app.waitTask(`${API}/podcast/script/get`, 'global_id', c.json.data.global_id, key, 600_000);
        const a0 = await app.post(`${API}/podcast/audio/create`, { podcast_script: s.data.podcast_script, hightlights: s.data.hightlights, global_id: s.data.global_id, title: s.data.title }, key);
        const a = await app.waitTask(`${API}/podcast/audio/get`, 'global_id', a0.json.data.global_id, key, 600_000);
        const minutes = a.data.duration / 60;
        const range = DURATION_LEVELS[level]!;
        const inside = minutes >= range.minMinutes && minutes <= range.maxMinutes;
        rows.push(`| ${file} | ${language} | ${level} | ${range.minMinutes}-${range.maxMinutes} | ${minutes.toFixed(2)} | ${inside ? 'yes' : 'no'} | ${s.data.podcast_script.length} | ${a.data.credits} | ${((performance.now() - t0) / 1000).toFixed(1)} |`);
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
    'Each row: the page text as source_type 4, built-in generator, built-in voices, through the HTTP API (script, then audio). Wall time covers both steps.',
    '',
    '| source | language | level | expected min | episode min | inside | lines | credits | wall s |',
    '|---|---|---|---|---|---|---|---|---|',
    ...rows,
    '',
  ].join('\n'));
}
