import { join } from 'node:path';
import { MODEL_CATALOG, type ModelEntry } from '../../../models/catalog.js';
import { checkModelSync, type ModelCheck, type VerifiedMemo } from '../../../models/installed.js';
import { CHECKPOINT_SEPARATION_MODELS } from '../../../models/catalog-separation-checkpoints.js';
import { checkpointPresets, type CheckpointDemucsPreset, type RoformerPreset } from './checkpoint-presets.js';

/**
 * What the neural engines need to know about each supported ONNX model: its file (under MODELS_DIR/<name>/),
 * its family and the per-model constants of the reference implementations. A model runs only when the catalog (built
 * in, or the site's MODELS_CATALOG_FILE) lists it and its file has the catalog's size and checksum: a file that is
 * merely present (a Git LFS pointer, a truncated download, another model) is never picked.
 */
export const MODEL_RATE = 44100;

/** UVR MDX-Net: values from UVR's model_data.json entry for the model (keyed there by UVR's tail-md5 of the file). */
export interface MdxPreset {
  family: 'mdx';
  name: string;
  file: string;
  nFft: number;
  dimF: number;
  /** Frames per chunk: 2 ** mdx_dim_t_set. */
  dimT: number;
  hop: number;
  compensate: number;
  /** The stem the network outputs; the other one is mixture - primary. */
  primary: 'vocals' | 'instrumental';
  /** Karaoke models: "instrumental" is the mix minus the lead voice (backing vocals stay in it). */
  karaoke?: boolean;
}

/**
 * HTDemucs ONNX exports come in three tensor layouts; the stage reads which one from the graph's input ranks
 * (`layout` is only the fallback for a graph that declares none):
 * - `sevagh` (sevagh/demucs.onnx): waveform [1, 2, L] + spectrogram [1, 4, F, T] -> [1, S, 4, F, T] + [1, S, 2, L];
 * - `spectral-core` (openkara-models contract v1): `spectral` [1, 2, 2, F, T] + `mix` [1, 2, L] ->
 *   `spectral_out` [1, S, 2, 2, F, T] + `time_out` [1, S, 2, L]. Channel-major (L.re, L.im, R.re, R.im) as sevagh's,
 *   so only the declared dims differ (docs/spectral-core-contract.md of thedavidweng/openkara-models);
 * - `waveform` (STFT and iSTFT inside the graph, e.g. StemSplit's exports): [1, 2, L] -> stems [1, S, 2, L].
 */
export type DemucsLayout = 'sevagh' | 'spectral-core' | 'waveform';

export interface DemucsPreset {
  family: 'htdemucs';
  name: string;
  file: string;
  /** The layout of the catalogued export (absent: `sevagh`); the installed graph's inputs have the last word. */
  layout?: DemucsLayout;
  /** Source order of the model's output axis 1. */
  sources: readonly string[];
  /** Training segment in samples (7.8 s at 44.1 kHz = 343980); the ONNX input length is fixed to it. */
  segment: number;
  nFft: number;
  /**
   * false: used when installed (or forced by SEPARATION_ENGINE) but never the model MODELS_AUTO_PULL picks on its
   * own (htdemucs_ft: four networks in one graph, 4x the download and the run time for ~0.2 dB).
   */
  autoPull?: boolean;
}

export type NeuralPreset = MdxPreset | DemucsPreset | CheckpointDemucsPreset | RoformerPreset;

const mdx = (p: Omit<MdxPreset, 'family' | 'hop' | 'file'> & { file?: string }): MdxPreset => ({ family: 'mdx', hop: 1024, file: `${p.name}.onnx`, ...p });

export const NEURAL_PRESETS: readonly NeuralPreset[] = Object.freeze([
  // UVR model_data.json 970b3f9492014d18fefeedfe4773cb42
  mdx({ name: 'Kim_Vocal_2', nFft: 7680, dimF: 3072, dimT: 256, compensate: 1.009, primary: 'vocals' }),
  // UVR model_data.json 77d07b2667ddf05b9e3175941b4454a0
  mdx({ name: 'UVR-MDX-NET-Voc_FT', nFft: 7680, dimF: 3072, dimT: 256, compensate: 1.021, primary: 'vocals' }),
  // UVR model_data.json 55657dd70583b0fedfba5f67df11d711
  mdx({ name: 'UVR-MDX-NET-Inst_HQ_3', nFft: 6144, dimF: 3072, dimT: 256, compensate: 1.022, primary: 'instrumental' }),
  // UVR model_data.json 1d64a6d2c30f709b8c9b4ce1366d96ee (is_karaoke)
  mdx({ name: 'UVR_MDXNET_KARA_2', nFft: 5120, dimF: 2048, dimT: 256, compensate: 1.065, primary: 'instrumental', karaoke: true }),
  // Among installed 4-stem models the first listed wins: the fine-tuned bag, then the plain exports.
  { family: 'htdemucs', name: 'htdemucs_ft-openkara', file: 'htdemucs_ft.spectral.onnx', layout: 'spectral-core', sources: ['drums', 'bass', 'other', 'vocals'], segment: 343980, nFft: 4096, autoPull: false },
  { family: 'htdemucs', name: 'htdemucs', file: 'htdemucs.onnx', sources: ['drums', 'bass', 'other', 'vocals'], segment: 343980, nFft: 4096 },
  { family: 'htdemucs', name: 'htdemucs-openkara', file: 'htdemucs.spectral.onnx', layout: 'spectral-core', sources: ['drums', 'bass', 'other', 'vocals'], segment: 343980, nFft: 4096 },
  { family: 'htdemucs', name: 'htdemucs_6s', file: 'htdemucs_6s.onnx', sources: ['drums', 'bass', 'other', 'vocals', 'guitar', 'piano'], segment: 343980, nFft: 4096 },
  // The authors' own checkpoints (src/models/catalog-separation-checkpoints.ts), run through graphs built here.
  ...checkpointPresets(CHECKPOINT_SEPARATION_MODELS),
]);

export function presetPath(modelsDir: string, p: NeuralPreset): string {
  return join(modelsDir, p.name, p.file);
}

export function findPreset(name: string, presets: readonly NeuralPreset[] = NEURAL_PRESETS): NeuralPreset | undefined {
  return presets.find((p) => p.name === name);
}

/** The catalog entry whose file is this preset's file, if the catalog has one. */
export function presetEntry(p: NeuralPreset, catalog: readonly ModelEntry[] = MODEL_CATALOG): ModelEntry | undefined {
  return catalog.find((m) => m.name === p.name && m.kind === 'separation' && m.files.some((f) => f.path === p.file));
}

/** Each preset's catalog check (absent: not in the catalog, so never usable). */
export function checkPresets(modelsDir: string, presets: readonly NeuralPreset[], catalog: readonly ModelEntry[] = MODEL_CATALOG, memo?: VerifiedMemo): Map<NeuralPreset, ModelCheck | undefined> {
  return new Map(presets.map((p) => {
    const entry = presetEntry(p, catalog);
    return [p, entry ? checkModelSync(modelsDir, entry, memo) : undefined];
  }));
}

export function installedPresets(modelsDir: string, presets: readonly NeuralPreset[] = NEURAL_PRESETS, catalog: readonly ModelEntry[] = MODEL_CATALOG, memo?: VerifiedMemo): NeuralPreset[] {
  const checks = checkPresets(modelsDir, presets, catalog, memo);
  return presets.filter((p) => checks.get(p)?.state === 'installed');
}
