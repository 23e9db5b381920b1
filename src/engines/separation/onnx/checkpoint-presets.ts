/**
 * Presets for the models run from their authors' own checkpoints, derived from the built-in catalog entries' `meta`
 * (src/models/catalog-separation-checkpoints.ts), so a model catalogued there needs no second list here. A site's
 * MODELS_CATALOG_FILE can re-pin those entries' files (sizes and checksums) but not add a checkpoint model of its
 * own: its rows carry no `meta`. The meta is checked with zod: an entry whose meta does not describe a runnable model
 * is skipped with the reason, never half-used.
 */
import { z } from 'zod';
import type { ModelEntry } from '../../../models/catalog.js';

/** HTDemucs from Meta's `.th` packages or the author's safetensors copies; more than one network is a bag. */
export interface CheckpointDemucsPreset {
  family: 'htdemucs-checkpoint';
  name: string;
  /** The first network's file: how the catalog entry is found (presetEntry) and where the model's folder is. */
  file: string;
  models: ReadonlyArray<{ file: string; kwargsFile?: string }>;
  sources: readonly string[];
  segment: number;
  nFft: number;
  /** bagWeights[m][s]: how much network m counts for source s (demucs' BagOfModels `weights`). */
  bagWeights: ReadonlyArray<readonly number[]>;
  autoPull?: boolean;
}

/** BS-RoFormer / Mel-Band RoFormer from the checkpoint and its YAML configuration. */
export interface RoformerPreset {
  family: 'roformer';
  name: string;
  /** The checkpoint file (`.ckpt`). */
  file: string;
  config: string;
  /** The stems this model serves, in Soundry's names. */
  stems: readonly string[];
  /**
   * A multi-instrument model's output heads by Soundry stem (the MVSep Mega model's 53): only the heads a task needs
   * are built into the graph. Absent: the configuration's outputs are the stems.
   */
  heads?: Readonly<Record<string, number>>;
  autoPull?: boolean;
}

const stems = z.array(z.string().min(1)).min(1);

const demucsMeta = z.object({
  engine: z.literal('htdemucs-checkpoint'),
  sources: stems,
  segment: z.number().int().positive(),
  nFft: z.number().int().positive(),
  models: z.array(z.object({ file: z.string().min(1), kwargsFile: z.string().min(1).optional() })).min(1),
  bagWeights: z.array(z.array(z.number().nonnegative())).min(1),
  autoPull: z.boolean().optional(),
});

const roformerMeta = z.object({
  engine: z.literal('roformer-checkpoint'),
  stems,
  checkpointFile: z.string().min(1),
  configFile: z.string().min(1),
  heads: z.record(z.string(), z.number().int().nonnegative()).optional(),
  autoPull: z.boolean().optional(),
});

export interface SkippedEntry {
  name: string;
  why: string;
}

/** The checkpoint presets the separation entries of `catalog` describe, in the catalog's order. */
export function checkpointPresets(catalog: readonly ModelEntry[], skipped: SkippedEntry[] = []): Array<CheckpointDemucsPreset | RoformerPreset> {
  const out: Array<CheckpointDemucsPreset | RoformerPreset> = [];
  for (const entry of catalog) {
    if (entry.kind !== 'separation' || !('meta' in entry) || !entry.meta) continue;
    const engine = entry.meta.engine;
    if (engine === 'htdemucs-checkpoint') {
      const m = demucsMeta.safeParse(entry.meta);
      if (!m.success) {
        skipped.push({ name: entry.name, why: z.prettifyError(m.error) });
        continue;
      }
      const { models, sources, bagWeights } = m.data;
      if (bagWeights.length !== models.length || bagWeights.some((w) => w.length !== sources.length)) {
        skipped.push({ name: entry.name, why: `bagWeights must be ${models.length} rows of ${sources.length}` });
        continue;
      }
      const { segment, nFft, autoPull } = m.data;
      out.push({
        family: 'htdemucs-checkpoint', name: entry.name, file: models[0]!.file, models, sources, segment, nFft, bagWeights,
        ...(autoPull === undefined ? {} : { autoPull }),
      });
    } else if (engine === 'roformer-checkpoint') {
      const m = roformerMeta.safeParse(entry.meta);
      if (!m.success) {
        skipped.push({ name: entry.name, why: z.prettifyError(m.error) });
        continue;
      }
      const { checkpointFile, configFile, heads, autoPull } = m.data;
      const missing = heads ? m.data.stems.filter((s) => heads[s] === undefined) : [];
      if (missing.length) {
        skipped.push({ name: entry.name, why: `no head for ${missing.join(', ')}` });
        continue;
      }
      out.push({
        family: 'roformer', name: entry.name, file: checkpointFile, config: configFile, stems: m.data.stems,
        ...(heads ? { heads } : {}), ...(autoPull === undefined ? {} : { autoPull }),
      });
    }
  }
  return out;
}
