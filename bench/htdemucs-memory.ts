/**
 * Where HTDemucs' peak memory goes: one full-size segment through the graph Soundry builds from the checkpoint, with
 * onnxruntime session variants, each in a fresh process (VmHWM is per process). Prints one JSON line per variant:
 * VmHWM after session create and after the run, RSS sampled every 25 ms during the run (peak and its time), run time.
 *   node --import tsx bench/htdemucs-memory.ts <checkpoint.th> [variant ...]
 * Variants: default (session.ts: optimisation all, arena and memory patterns off), basic, extended, disabled
 * (graphOptimizationLevel), noprepack (session.disable_prepacking), arena (arena + memory patterns on), and any of
 * them with `+glibc` (the child runs with MALLOC_MMAP_THRESHOLD_=131072 and MALLOC_TRIM_THRESHOLD_=131072, so
 * glibc returns freed blocks to the system instead of keeping them in its heap).
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, linkSync, mkdirSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { loadHtdemucsCheckpoint } from '../src/engines/separation/onnx/htdemucs-loader.js';
import { ort } from '../src/engines/separation/onnx/session.js';
import { root } from './lib.js';

const status = (key: string) => Number(new RegExp(`${key}:\\s*(\\d+)`).exec(readFileSync('/proc/self/status', 'utf8'))?.[1] ?? NaN) / 1024;

async function child(ckpt: string, variant: string): Promise<void> {
  const dir = join('/tmp', 'soundry-htdemucs-memory');
  mkdirSync(dir, { recursive: true });
  const file = basename(ckpt);
  if (!existsSync(join(dir, file))) {
    try {
      linkSync(ckpt, join(dir, file));
    } catch {
      copyFileSync(ckpt, join(dir, file));
    }
  }
  // The loader builds the graph in memory; its own session is released and a variant opened from the same bytes.
  const loaded = await loadHtdemucsCheckpoint(dir, file, { threads: 2 });
  await loaded.session.release();
  const base = variant.replace('+glibc', '');
  const opts: ort.InferenceSession.SessionOptions = {
    executionProviders: ['cpu'], intraOpNumThreads: 2, interOpNumThreads: 1, executionMode: 'sequential',
    graphOptimizationLevel: base === 'basic' || base === 'extended' || base === 'disabled' ? base : 'all',
    enableCpuMemArena: base === 'arena', enableMemPattern: base === 'arena',
    extra: { session: {
      model_external_initializers_file_folder_path: loaded.graph.externalDataDir,
      ...(base === 'noprepack' ? { disable_prepacking: '1' } : {}),
    } },
  };
  const before = status('VmHWM');
  const t0 = performance.now();
  const session = await ort.InferenceSession.create(loaded.graph.bytes, opts);
  const createS = (performance.now() - t0) / 1000;
  const afterCreate = status('VmHWM');
  const rssAfterCreate = status('VmRSS');
  const feeds: Record<string, ort.Tensor> = {};
  let seed = 1;
  for (const m of session.inputMetadata) {
    if (!m.isTensor) throw new Error(`${m.name} is not a tensor`);
    const dims = m.shape.map((d) => (typeof d === 'number' ? d : 1));
    const n = dims.reduce((a, b) => a * b, 1);
    const data = new Float32Array(n);
    for (let i = 0; i < n; i++) data[i] = ((seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32 - 0.5) * 0.2;
    feeds[m.name] = new ort.Tensor('float32', data, dims);
  }
  const samples: Array<[number, number]> = [];
  const t1 = performance.now();
  const timer = setInterval(() => samples.push([(performance.now() - t1) / 1000, status('VmRSS')]), 25);
  await session.run(feeds);
  clearInterval(timer);
  const runS = (performance.now() - t1) / 1000;
  const peak = samples.reduce((a, s) => (s[1] > a[1] ? s : a), [0, 0]);
  // A coarse profile: RSS at tenths of the run, to see when the peak comes.
  const profile = Array.from({ length: 10 }, (_, k) => Math.round(Math.max(0, ...samples.filter((s) => s[0] >= (k * runS) / 10 && s[0] < ((k + 1) * runS) / 10).map((s) => s[1]))));
  console.log(JSON.stringify({
    variant, hwmBeforeCreateMb: Math.round(before), hwmAfterCreateMb: Math.round(afterCreate), rssAfterCreateMb: Math.round(rssAfterCreate),
    hwmAfterRunMb: Math.round(status('VmHWM')), rssAfterRunMb: Math.round(status('VmRSS')), sampledPeakMb: Math.round(peak[1]), peakAtS: +peak[0].toFixed(1),
    rssByTenthOfRunMb: profile, createS: +createS.toFixed(2), runS: +runS.toFixed(1),
    inputs: session.inputMetadata.map((m) => (m.isTensor ? `${m.name}${JSON.stringify(m.shape)}` : m.name)),
  }));
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  if (process.argv[2] === '--child') {
    await child(process.argv[3]!, process.argv[4]!);
  } else {
    const [ckpt, ...variants] = process.argv.slice(2);
    if (!ckpt) throw new Error('usage: node --import tsx bench/htdemucs-memory.ts <checkpoint.th> [variant ...]');
    for (const v of variants.length ? variants : ['default']) {
      const env = { ...process.env, ...(v.includes('+glibc') ? { MALLOC_MMAP_THRESHOLD_: '131072', MALLOC_TRIM_THRESHOLD_: '131072' } : {}) };
      const r = spawnSync(process.execPath, ['--import', 'tsx', 'bench/htdemucs-memory.ts', '--child', ckpt, v], { cwd: root, env, stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8' });
      process.stdout.write(r.stdout);
    }
  }
}
