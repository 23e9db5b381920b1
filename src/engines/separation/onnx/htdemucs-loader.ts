/**
 * Runs an HTDemucs checkpoint in the authors' own format (Meta's `.th` package or the author's `.safetensors`)
 * through ONNX Runtime: the graph is built in memory from the checkpoint's kwargs on every load, its initializers
 * pointing into the checkpoint's bytes, and the session opened from those bytes with the checkpoint's folder as the
 * one external data is read from. Nothing is written into the models folder (it may be read-only, and holds only
 * the files the catalog verifies). Rebuilding per load is cheap beside the session: on the full-size goldens
 * (harness/out; 2 cores at load average 12) reading the checkpoint took 0.02-0.13 s and building the ~300 KB graph
 * 0.09-0.63 s, against 1.4-2.2 s to create the session. The result is a session and the DemucsPreset that
 * DemucsStage runs it with.
 */
import { basename, extname, join, resolve } from 'node:path';
import { readCheckpoint } from '../../../models/checkpoint/index.js';
import { readDemucsCheckpoint, type HtdemucsConfig } from './htdemucs-config.js';
import { buildHtdemucsGraph } from './htdemucs-graph.js';
import { MODEL_RATE, type DemucsPreset } from './presets.js';
import { openSeparationSession, type GraphBytes, type ort } from './session.js';

export interface LoadedHtdemucs {
  session: ort.InferenceSession;
  preset: DemucsPreset;
  config: HtdemucsConfig;
  /** The graph the session was opened from (a few hundred KB: the weights stay in the checkpoint). */
  graph: GraphBytes;
  /** Milliseconds spent reading the checkpoint and building the graph, and creating the session. */
  ms: { build: number; session: number };
}

export interface HtdemucsLoadOptions {
  threads?: number;
  providers?: readonly string[];
}

/** The configuration and state dict of an HTDemucs checkpoint, whichever format (told apart by its first bytes). */
export async function readHtdemucsFile(path: string) {
  return readDemucsCheckpoint(await readCheckpoint(path));
}

/** Builds the graph for `dir/file` in memory and opens it. */
export async function loadHtdemucsCheckpoint(dir: string, file: string, opts: HtdemucsLoadOptions = {}): Promise<LoadedHtdemucs> {
  const t0 = performance.now();
  const { config, checkpoint } = await readHtdemucsFile(join(dir, file));
  if (config.samplerate !== MODEL_RATE) throw new Error(`${file}: HTDemucs at ${config.samplerate} Hz; the separation engine runs at ${MODEL_RATE} Hz`);
  if (config.audioChannels !== 2) throw new Error(`${file}: HTDemucs with ${config.audioChannels} audio channels; the separation engine is stereo`);
  // External-data locations are the checkpoint's base name, so they resolve against the checkpoint's own folder.
  const graph: GraphBytes = { bytes: buildHtdemucsGraph(checkpoint, config), externalDataDir: resolve(dir) };
  const t1 = performance.now();
  const session = await openSeparationSession(graph, opts.threads, opts.providers);
  const ms = { build: t1 - t0, session: performance.now() - t1 };
  const preset: DemucsPreset = {
    family: 'htdemucs', name: basename(file, extname(file)), file, layout: 'sevagh',
    sources: config.sources, segment: config.segmentSamples, nFft: config.nfft,
  };
  return { session, preset, config, graph, ms };
}
