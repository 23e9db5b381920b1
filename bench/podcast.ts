/** Podcast text side: extraction over the corpus, then built-in scripts at every duration level vs target size. */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { BuiltinScriptGenerator } from '../src/engines/podcast/builtin-generator.js';
import { DURATION_LEVELS, isCharCounted, measureSize, SPEAKING_RATE, targetSize, type SpeakerInfo } from '../src/engines/podcast/script.js';
import { extractSource, type ExtractedSource } from '../src/engines/podcast/sources.js';
import { sniffMediaType } from '../src/media/sniff.js';
import { machine, median, root, writeResult } from './lib.js';

const SPEAKERS: SpeakerInfo[] = [
  { role: 'A', name: 'Maya', avatar: '', voiceId: 'a', gender: 'female' },
  { role: 'B', name: 'Leo', avatar: '', voiceId: 'b', gender: 'male' },
];

export async function benchPodcast(): Promise<string> {
  const corpus = join(root, '../shared/corpus/podcast_sources');
  if (!existsSync(corpus)) return writeResult('podcast', '# Podcast scripts\n\nCorpus ../shared/corpus/podcast_sources not found; nothing measured.\n');
  const files = readdirSync(corpus).flatMap((d) => readdirSync(join(corpus, d)).filter((f) => !f.endsWith('.json')).map((f) => join(d, f))).sort();
  const extractRows: string[] = [];
  const sources: Array<{ name: string; src: ExtractedSource }> = [];
  let titleOk = 0;
  let titleTotal = 0;
  for (const name of files) {
    const path = join(corpus, name);
    const bytes = readFileSync(path);
    const t0 = performance.now();
    try {
      const src = await extractSource({ path, sniffed: sniffMediaType(bytes.subarray(0, 4096)), contentType: null, url: null });
      const ms = performance.now() - t0;
      const metaPath = path.replace(/\.html$/, '.meta.json');
      let match = '-';
      if (metaPath !== path && existsSync(metaPath)) {
        const meta = JSON.parse(readFileSync(metaPath, 'utf8')) as { title: string };
        titleTotal++;
        if (meta.title === src.title) titleOk++;
        match = meta.title === src.title ? 'yes' : `no (expected "${meta.title}")`;
      }
      sources.push({ name, src });
      extractRows.push(`| ${name} | ${src.kind} | ok | ${src.language ?? '-'} | ${src.text.length} | ${ms.toFixed(0)} | ${src.title.slice(0, 60).replace(/\|/g, '/')} | ${match} |`);
    } catch (err) {
      extractRows.push(`| ${name} | - | failed: ${(err as Error).message} | - | - | ${(performance.now() - t0).toFixed(0)} | - | - |`);
    }
  }

  const gen = new BuiltinScriptGenerator();
  const signal = new AbortController().signal;
  const levelRows: string[] = [];
  for (const level of Object.keys(DURATION_LEVELS).map(Number)) {
    const ratios: number[] = [];
    const times: number[] = [];
    let within = 0;
    let tooShort = 0;
    for (const { src } of sources) {
      const language = src.language ?? 'en';
      const t0 = performance.now();
      const s = await gen.generate({ source: src, sourceData: '', language, style: 1 + (level % 9), duration: level, speakers: SPEAKERS }, signal);
      times.push(performance.now() - t0);
      const ratio = measureSize(s.podcast_script.map((l) => l.text).join(' '), language) / targetSize(level, language);
      ratios.push(ratio);
      if (Math.abs(ratio - 1) <= 0.15) within++;
      if (/too short/.test(s.train_data)) tooShort++;
    }
    const r = DURATION_LEVELS[level]!;
    levelRows.push(
      `| ${level} (${r.minMinutes}-${r.maxMinutes} min) | ${targetSize(level, 'en')} | ${median(ratios).toFixed(2)} | ${Math.min(...ratios).toFixed(2)}-${Math.max(...ratios).toFixed(2)} | ${within}/${sources.length} | ${tooShort} | ${median(times).toFixed(0)} | ${Math.max(...times).toFixed(0)} |`,
    );
  }
  const md = [
    '# Podcast scripts (text side)',
    '',
    `Machine: ${machine()}. Command: \`npm run bench -- podcast\`. Built-in generator (no model). Sizes are words, or characters for ${['zh', 'zh_yue', 'ja', 'ko'].filter(isCharCounted).join('/')}; targets at the middle of each level (en ${SPEAKING_RATE.en} wpm, the measured rates of SPEAKING_RATE in src/engines/podcast/script.ts). Final audio durations are in podcast-audio.md.`,
    '',
    `## Extraction (${sources.length}/${files.length} succeeded; title equal to Readability's meta.json: ${titleOk}/${titleTotal})`,
    '',
    '| file | kind | result | language | chars | ms | title | title matches meta.json |',
    '|---|---|---|---|---|---|---|---|',
    ...extractRows,
    '',
    `## Script size vs target, per duration level (over the ${sources.length} extracted sources, in each source's detected language, en when none)`,
    '',
    '"within ±15%" counts scripts whose size is within 15% of the target; "too short" counts sources with too little text for the level (the outline says so).',
    '',
    '| level | target (en words) | median size/target | min-max | within ±15% | too short | median ms/script | max ms |',
    '|---|---|---|---|---|---|---|---|',
    ...levelRows,
    '',
  ].join('\n');
  return writeResult('podcast', md);
}
