/**
 * The production enhancement path (runEnhance, as the engine thread runs it: analysis, loudness aiming and
 * the final pass into the encoder) on long inputs, with every rendering flag at once, to show that peak
 * memory does not grow with duration. Each run is a separate process; its input is corpus speech over a
 * corpus music bed, looped by ffmpeg to the length and written as 16 kHz mono FLAC.
 *   node --import tsx bench/enhance-production.ts            (3 and 60 minutes, writes the result section)
 *   ENHANCE_PROD_MINUTES=3,180 node --import tsx bench/enhance-production.ts
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { resolveMediaTools } from '../src/media/ffmpeg.js';
import { runEnhance } from '../src/kinds/enhance/thread.js';
import type { EnhanceFlag } from '../src/engines/enhance/chain.js';
import { machine, root } from './lib.js';

const SPEECH = `${root}../shared/corpus/speech/conversational/pyannote_sample_telephone.wav`;
const MUSIC = `${root}../shared/corpus/separation/mixture_only_real_songs/demucs_test.mp3`;
const RATE = 16000;
const ALL_FLAGS: EnhanceFlag[] = ['remove_background_audio', 'remove_noise', 'remove_reverb', 'mouth_sounds', 'fillers', 'hesitations', 'stutters', 'long_silences', 'autoeq', 'normalize'];
// ENHANCE_PROD_FLAGS=autoid (or a comma list) measures another request than every rendering flag at once.
const FLAGS = (process.env.ENHANCE_PROD_FLAGS?.split(',') as EnhanceFlag[] | undefined) ?? ALL_FLAGS;
const SECTION = FLAGS === ALL_FLAGS ? '## Production path, every rendering flag at once' : `## Production path, ${FLAGS.join(' + ')}`;

function run(cmd: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const p = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    p.stderr.on('data', (d: Buffer) => (err += d.toString()));
    p.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`${cmd} exit ${code}: ${err.slice(-500)}`))));
  });
}

async function child(seconds: number): Promise<void> {
  const tools = resolveMediaTools({ preferSystem: true });
  const dir = mkdtempSync(join(tmpdir(), 'enh-prod-'));
  try {
    const input = join(dir, 'in.flac');
    // Speech looped, music bed looped 12 dB under it (amix halves both; volume=2 undoes that on ffmpeg 4.1, which lacks normalize=0).
    await run(tools.ffmpeg, ['-v', 'error', '-stream_loop', '-1', '-i', SPEECH, '-stream_loop', '-1', '-i', MUSIC, '-filter_complex',
      '[1:a]volume=-12dB[m];[0:a][m]amix=inputs=2:duration=first,volume=2', '-t', String(seconds), '-ac', '1', '-ar', String(RATE), input]);
    const t0 = performance.now();
    const out = await runEnhance(
      { inputPath: input, outPath: join(dir, 'out.flac'), format: 'flac', sampleRate: RATE, channels: 1, totalFrames: seconds * RATE, flags: FLAGS, modelsDir: join(dir, 'no-models'), ffmpeg: tools.ffmpeg, targetLufs: -16 },
      { tmpDir: dir, signal: new AbortController().signal, onProgress: () => undefined },
    );
    const wall = (performance.now() - t0) / 1000;
    const maxRssMb = process.resourceUsage().maxRSS / 1024;
    console.log(JSON.stringify({ wall, rtf: wall / seconds, maxRssMb, outputSeconds: out.outputSeconds, engines: out.engines, inputMb: statSync(input).size / 2 ** 20 }));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function measure(seconds: number): Promise<{ wall: number; rtf: number; maxRssMb: number; outputSeconds: number; engines: string[] }> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, ['--import', 'tsx', 'bench/enhance-production.ts', '--child', String(seconds)], { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    p.stdout.on('data', (d: Buffer) => (out += d.toString()));
    p.on('close', (code) => (code === 0 ? resolve(JSON.parse(out.trim().split('\n').pop()!)) : reject(new Error(`child exit ${code}`))));
  });
}

export async function benchEnhanceProduction(): Promise<string> {
  if (!existsSync(SPEECH) || !existsSync(MUSIC)) return 'enhance-production skipped: no corpus';
  const minutes = (process.env.ENHANCE_PROD_MINUTES ?? '3,60').split(',').map(Number);
  const rows: string[] = [];
  let engines = '';
  for (const m of minutes) {
    const r = await measure(m * 60);
    engines = r.engines.join(' + ');
    rows.push(`| ${m} min | ${r.wall.toFixed(1)} | ${r.rtf.toFixed(3)} | ${r.maxRssMb.toFixed(0)} | ${r.outputSeconds.toFixed(0)} |`);
    console.error(rows.at(-1));
  }
  const section = [
    `${SECTION} (runEnhance, separate process per run)`,
    '',
    `${machine()}; ${new Date().toISOString()}. Reproduce: \`node --import tsx bench/enhance-production.ts\` (ENHANCE_PROD_MINUTES=3,180 for three hours${FLAGS === ALL_FLAGS ? '' : `, ENHANCE_PROD_FLAGS=${FLAGS.join(',')}`}).`,
    `Input: a telephone conversation looped over a song looped 12 dB under it, 16 kHz mono FLAC. Flags: ${FLAGS.join(', ')}; no models installed, so: ${engines}.`,
    'All passes of production (analysis, loudness aiming, final pass into the FLAC encoder). Peak RSS includes Node + tsx (~100 MB).',
    '',
    '| input | wall s | RTF | peak RSS MB | output s |',
    '|---|---|---|---|---|',
    ...rows,
    '',
  ].join('\n');
  const file = `${root}bench/results/enhance.md`;
  const md = await readFile(file, 'utf8');
  const start = md.indexOf(`${SECTION} (`);
  const next = start >= 0 ? md.indexOf('\n## ', start + 3) : -1;
  const updated = start < 0 ? `${md.trimEnd()}\n\n${section}` : `${md.slice(0, start)}${section}${next >= 0 ? md.slice(next + 1) : ''}`;
  await writeFile(file, updated);
  return section;
}

if (process.argv[2] === '--child') await child(Number(process.argv[3]));
else if (import.meta.url === `file://${process.argv[1]}`) console.log(await benchEnhanceProduction());
