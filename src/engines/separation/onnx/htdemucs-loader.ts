/**
 * Runs an HTDemucs checkpoint in the authors' own format (Meta's `.th` package or the author's `.safetensors`)
 * through ONNX Runtime: the graph is built from the checkpoint's kwargs and written beside it as
 * `<name>.graph.onnx` (its initializers point into the checkpoint, which ONNX Runtime only reads from the same
 * folder), with a `<name>.graph.json` stamp naming the builder version and the checkpoint's size and mtime; a
 * missing or stale graph is rebuilt, a current one reused. The result is a session and the DemucsPreset that
 * DemucsStage runs it with.
 */
import { randomBytes } from 'node:crypto';
import { readFile, rename, stat, writeFile } from 'node:fs/promises';
import { basename, extname, join } from 'node:path';
import { z } from 'zod';
import { readCheckpoint } from '../../../models/checkpoint/index.js';
import { readDemucsCheckpoint, type HtdemucsConfig } from './htdemucs-config.js';
import { buildHtdemucsGraph, HTDEMUCS_GRAPH_VERSION } from './htdemucs-graph.js';
import { MODEL_RATE, type DemucsPreset } from './presets.js';
import { openSeparationSession, type ort } from './session.js';

export interface LoadedHtdemucs {
  session: ort.InferenceSession;
  preset: DemucsPreset;
  config: HtdemucsConfig;
  graphPath: string;
  /** Whether this call (re)built the graph. */
  built: boolean;
  /** Milliseconds spent building and writing the graph (0 when reused) and creating the session. */
  ms: { build: number; session: number };
}

export interface HtdemucsLoadOptions {
  threads?: number;
  providers?: readonly string[];
}

const stampSchema = z.object({ builder: z.number(), checkpoint: z.string(), size: z.number(), mtimeMs: z.number() });

/** The configuration and state dict of an HTDemucs checkpoint, whichever format (told apart by its first bytes). */
export async function readHtdemucsFile(path: string) {
  return readDemucsCheckpoint(await readCheckpoint(path));
}

/** Builds (or reuses) the graph for `dir/file` and opens it. */
export async function loadHtdemucsCheckpoint(dir: string, file: string, opts: HtdemucsLoadOptions = {}): Promise<LoadedHtdemucs> {
  const path = join(dir, file);
  const name = basename(file, extname(file));
  const graphPath = join(dir, `${name}.graph.onnx`);
  const stampPath = join(dir, `${name}.graph.json`);
  const { config, checkpoint } = await readHtdemucsFile(path);
  if (config.samplerate !== MODEL_RATE) throw new Error(`${file}: HTDemucs at ${config.samplerate} Hz; the separation engine runs at ${MODEL_RATE} Hz`);
  if (config.audioChannels !== 2) throw new Error(`${file}: HTDemucs with ${config.audioChannels} audio channels; the separation engine is stereo`);
  const st = await stat(path);
  const stamp = { builder: HTDEMUCS_GRAPH_VERSION, checkpoint: file, size: st.size, mtimeMs: st.mtimeMs };
  let built = false;
  const t0 = performance.now();
  if (!(await isCurrent(graphPath, stampPath, stamp))) {
    const bytes = buildHtdemucsGraph(checkpoint, config);
    // Written under names of this process and renamed, so a crash never leaves a truncated graph with a valid
    // stamp, and two workers building at once never write into the same file.
    const tmp = `.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
    await writeFile(graphPath + tmp, bytes);
    await rename(graphPath + tmp, graphPath);
    await writeFile(stampPath + tmp, `${JSON.stringify(stamp)}\n`);
    await rename(stampPath + tmp, stampPath);
    built = true;
  }
  const t1 = performance.now();
  const session = await openSeparationSession(graphPath, opts.threads, opts.providers);
  const ms = { build: built ? t1 - t0 : 0, session: performance.now() - t1 };
  const preset: DemucsPreset = {
    family: 'htdemucs', name, file: basename(graphPath), layout: 'sevagh',
    sources: config.sources, segment: config.segmentSamples, nFft: config.nfft,
  };
  return { session, preset, config, graphPath, built, ms };
}

async function isCurrent(graphPath: string, stampPath: string, want: z.infer<typeof stampSchema>): Promise<boolean> {
  try {
    await stat(graphPath);
    const parsed = stampSchema.safeParse(JSON.parse(await readFile(stampPath, 'utf8')));
    if (!parsed.success) return false;
    const s = parsed.data;
    return s.builder === want.builder && s.checkpoint === want.checkpoint && s.size === want.size && s.mtimeMs === want.mtimeMs;
  } catch {
    return false;
  }
}
