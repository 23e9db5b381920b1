/**
 * Long-file enhancement cost (issue 28, "hours in minutes"): the production path (runEnhance, as the engine thread
 * runs it) on a long podcast-like input with `{}` (autoid) and with every flag, on 1 and on N chunk threads. Each run
 * is its own process; it reports wall time, CPU time (user + system of every thread, and of the ffmpeg decoders and
 * encoder it waited for), peak RSS (VmHWM: the process, every thread included; ffmpeg's own few MB are not), the
 * load average before and after (the machine is shared), the time of each pass and the wall time of each stage run
 * in the engine thread. Input: the corpus AMI meeting recording looped with seeded pink noise, as 16 kHz mono MP3
 * (written to a temp folder, never committed).
 *   node --import tsx bench/enhance-long.ts                       (10 minutes; autoid and every flag; 1 and 2 threads)
 *   ENHANCE_LONG_SECONDS=10800 ENHANCE_LONG_RUNS=autoid:2 node --import tsx bench/enhance-long.ts
 *   node --import tsx bench/enhance-long.ts --child <input> <seconds> <threads> <autoid|every>   (one run, JSON)
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { appendFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { resolveMediaTools } from '../src/media/ffmpeg.js';
import { runEnhance } from '../src/kinds/enhance/thread.js';
import { ENHANCE_FLAGS } from '../src/domain/vocabulary.js';
import type { EnhanceFlag } from '../src/engines/enhance/chain.js';
import { machine, peakRssMb, root } from './lib.js';

const SPEECH = `${root}../shared/corpus/speech/conversational/pyannote_ami_dev00.wav`;
// MODELS_DIR=harness/models (harness/real-models.sh) adds the real DeepFilterNet3, which auto then runs.
const MODELS = process.env.MODELS_DIR ?? `${root}../shared/corpus/models`;
const RATE = 16000;
const RESULTS = `${root}bench/results/enhance-long.md`;
/** Every flag: all of them but autoid (what an empty request means) and keep_music (it overrides remove_background_audio). */
const EVERY: EnhanceFlag[] = ENHANCE_FLAGS.filter((f) => f !== 'autoid' && f !== 'keep_music');
const FLAGS: Record<string, EnhanceFlag[]> = { autoid: ['autoid'], every: EVERY };

function sh(cmd: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const p = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    p.stderr.on('data', (d: Buffer) => (err += d.toString()));
    p.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`${cmd} exit ${code}: ${err.slice(-500)}`))));
  });
}

/** user + system seconds of this process (all threads) and of the children it waited for (/proc/self/stat). */
function cpuSeconds(): { self: number; children: number } {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ').map(Number);
  // Fields 14-17 (utime, stime, cutime, cstime) are 11-14 after the command name, in clock ticks (100 Hz on Linux).
  return { self: (f[11]! + f[12]!) / 100, children: (f[13]! + f[14]!) / 100 };
}

const loadavg = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');

export async function makeInput(dir: string, seconds: number): Promise<string> {
  const tools = resolveMediaTools({ preferSystem: true });
  const input = join(dir, `podcast-${seconds}s.mp3`);
  await sh(tools.ffmpeg, ['-v', 'error', '-y', '-stream_loop', '-1', '-i', SPEECH, '-f', 'lavfi', '-i', 'anoisesrc=color=pink:seed=7:amplitude=0.02:sample_rate=16000',
    '-filter_complex', '[0:a][1:a]amix=inputs=2:duration=first,volume=2', '-t', String(seconds), '-ar', String(RATE), '-ac', '1', '-c:a', 'libmp3lame', '-b:a', '64k', input]);
  return input;
}

async function child(input: string, seconds: number, threads: number, flagsName: string): Promise<void> {
  const tools = resolveMediaTools({ preferSystem: true });
  const dir = mkdtempSync(join(tmpdir(), 'enh-long-'));
  const profile = new Map<string, number>();
  const passes: Record<string, number> = {};
  /** Process CPU seconds (every thread) at the same marks: what each pass costs whatever the machine's load. */
  const passCpu: Record<string, number> = {};
  const load0 = loadavg();
  const t0 = performance.now();
  const cpu0 = cpuSeconds();
  const mark = (f: number) => {
    const at = (performance.now() - t0) / 1000;
    const note = (name: string) => {
      passes[name] = at;
      passCpu[name] = cpuSeconds().self - cpu0.self;
    };
    if (f >= 0.1 && passes.analysis === undefined) note('analysis');
    if (f >= 0.85 && passes.chain === undefined) note('chain');
    if (f >= 0.92 && passes.aim === undefined) note('aim');
  };
  try {
    const out = await runEnhance(
      { inputPath: input, outPath: join(dir, 'out.mp3'), format: 'mp3', sampleRate: RATE, channels: 1, totalFrames: seconds * RATE, flags: FLAGS[flagsName]!, modelsDir: MODELS, ffmpeg: tools.ffmpeg, targetLufs: -16 },
      { tmpDir: dir, signal: new AbortController().signal, onProgress: mark },
      [],
      {},
      { threads, profile },
    );
    const wall = (performance.now() - t0) / 1000;
    const cpu1 = cpuSeconds();
    console.log(JSON.stringify({
      seconds, threads: out.threads, flags: flagsName, wall, cpuSelf: cpu1.self - cpu0.self, cpuChildren: cpu1.children - cpu0.children, peakRssMb: peakRssMb(),
      load: [load0, loadavg()], outputSeconds: out.outputSeconds, engines: out.engines, stages: out.stages,
      passes: { ...passes, total: wall }, passCpu: { ...passCpu, total: cpu1.self - cpu0.self }, profile: Object.fromEntries([...profile].map(([k, v]) => [k, v / 1000])),
    }));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

interface RunResult {
  seconds: number; threads: number; flags: string; wall: number; cpuSelf: number; cpuChildren: number; peakRssMb: number;
  load: [string, string]; outputSeconds: number; engines: string[]; stages: string[]; passes: Record<string, number>; passCpu?: Record<string, number>; profile: Record<string, number>;
}

function measure(input: string, seconds: number, threads: number, flags: string): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, ['--import', 'tsx', 'bench/enhance-long.ts', '--child', input, String(seconds), String(threads), flags], { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    p.stdout.on('data', (d: Buffer) => (out += d.toString()));
    p.on('close', (code) => (code === 0 ? resolve(JSON.parse(out.trim().split('\n').pop()!) as RunResult) : reject(new Error(`child exit ${code}`))));
  });
}

export function row(r: RunResult): string {
  const cpu = r.cpuSelf + r.cpuChildren;
  const prof = Object.entries(r.profile).map(([k, v]) => `${k} ${v.toFixed(1)}`).join(', ');
  // Pass boundaries from the progress marks: analysis to 0.1, the chain to 0.85, the limiter aim to 0.92, the final pass to the end.
  const span = (x: Record<string, number>) => {
    const a = x.analysis ?? 0, c = x.chain ?? x.total!, m = x.aim ?? c;
    return [a, c - a, m - c, x.total! - m].map((v) => v.toFixed(1)).join(' / ');
  };
  const passes = `${span(r.passes)}${r.passCpu ? ` (CPU ${span(r.passCpu)})` : ''}`;
  return `| ${r.flags} | ${r.seconds} | ${r.threads} | ${r.wall.toFixed(1)} | ${(r.wall / r.seconds).toFixed(3)} | ${cpu.toFixed(1)} (${r.cpuChildren.toFixed(1)} ffmpeg) | ${r.peakRssMb.toFixed(0)} | ${r.load[0]} -> ${r.load[1]} | ${r.outputSeconds.toFixed(0)} | ${passes} | ${prof} |`;
}

export async function benchEnhanceLong(): Promise<string> {
  if (!existsSync(SPEECH)) return 'enhance-long skipped: no corpus';
  const seconds = Number(process.env.ENHANCE_LONG_SECONDS ?? 600);
  const runs = (process.env.ENHANCE_LONG_RUNS ?? 'autoid:1,autoid:2,every:1,every:2').split(',').map((r) => r.split(':') as [string, string]);
  const dir = mkdtempSync(join(tmpdir(), 'enh-long-in-'));
  try {
    const input = await makeInput(dir, seconds);
    const rows: string[] = [];
    for (const [flags, threads] of runs) {
      const r = await measure(input, seconds, Number(threads), flags);
      rows.push(row(r));
      console.error(rows.at(-1));
      // Each run is appended as it ends, so a long series that is stopped keeps what it measured.
      await appendFile(`${RESULTS}.runs.jsonl`, `${JSON.stringify({ at: new Date().toISOString(), machine: machine(), ...r })}\n`);
    }
    const section = [
      `## ${seconds} s input, ${new Date().toISOString()}`,
      '',
      `${machine()}. Reproduce: \`ENHANCE_LONG_SECONDS=${seconds} ENHANCE_LONG_RUNS=${runs.map((r) => r.join(':')).join(',')} node --import tsx bench/enhance-long.ts\`.`,
      '',
      '| flags | input s | threads | wall s | wall RTF | CPU s | peak RSS MB | load avg before -> after | output s | analysis / chain / aim / final, wall s (CPU s) | engine-thread stages (wall s) |',
      '|---|---|---|---|---|---|---|---|---|---|---|',
      ...rows,
      '',
    ].join('\n');
    await writeFile(`${RESULTS}.last.md`, section);
    return section;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[2] === '--child') await child(process.argv[3]!, Number(process.argv[4]), Number(process.argv[5]), process.argv[6]!);
else if (import.meta.url === `file://${process.argv[1]}`) console.log(await benchEnhanceLong());
