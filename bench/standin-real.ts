/**
 * Writes real-size stand-ins (test/fixtures/standin-real.ts: the real layers and tensor shapes, random weights) of
 * the separation models into a folder, with the MODELS_CATALOG_FILE that pins them, so bench/neural-cost.ts can
 * measure what the real networks cost where their weights cannot be downloaded. Never committed (67 MB + 157 MB).
 *   node --import tsx bench/standin-real.ts /tmp/standin-real [Kim_Vocal_2 htdemucs]
 */
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { presetCatalog, writeCatalogFile } from '../test/fixtures/pinned-catalog.js';
import { writeModel } from '../test/fixtures/separation-models.js';
import { buildRealDemucs, buildRealMdx, demucsParams, mdxParams } from '../test/fixtures/standin-real.js';
import { findPreset } from '../src/engines/separation/onnx/presets.js';
import { SEPARATION_MODELS } from '../src/models/catalog-separation.js';

export interface StandinFile {
  name: string;
  path: string;
  bytes: number;
  params: number;
  /** The real file's size where the catalog knows it (MDX); HTDemucs exports have no catalogued file. */
  realBytes?: number;
}

/** Writes the named stand-ins (MDX presets by name, htdemucs / htdemucs_6s) and `catalog.json`; returns what it wrote. */
export async function writeRealStandins(dir: string, names: readonly string[] = ['Kim_Vocal_2', 'htdemucs']): Promise<StandinFile[]> {
  const out: StandinFile[] = [];
  for (const name of names) {
    const preset = findPreset(name);
    if (!preset) throw new Error(`no separation preset ${name}`);
    if (preset.family !== 'mdx' && preset.family !== 'htdemucs') throw new Error(`${name} runs from its authors' checkpoint: the harness writes its stand-ins (harness/cases)`);
    const path = join(dir, preset.name, preset.file);
    if (preset.family === 'mdx') {
      const shape = { dimF: preset.dimF, dimT: preset.dimT };
      await writeModel(path, buildRealMdx(shape));
      const realBytes = SEPARATION_MODELS.find((m) => m.name === name)?.files[0]?.sizeBytes;
      out.push({ name, path, bytes: statSync(path).size, params: mdxParams(shape), ...(realBytes ? { realBytes } : {}) });
    } else {
      // demucs' spectrogram of a segment: n_fft/2 bins x ceil(segment / hop) frames (hop = n_fft / 4)
      const shape = { segment: preset.segment, bins: preset.nFft / 2, frames: Math.ceil(preset.segment / (preset.nFft / 4)), sources: preset.sources.length };
      await writeModel(path, buildRealDemucs(shape));
      out.push({ name, path, bytes: statSync(path).size, params: demucsParams(shape) });
    }
    const last = out.at(-1)!;
    // A stand-in whose size is off by more than its graph overhead has the wrong layout: refuse to measure with it.
    if (last.realBytes && Math.abs(last.bytes - last.realBytes) > 0.01 * last.realBytes) throw new Error(`${name}: stand-in ${last.bytes} B vs real ${last.realBytes} B`);
    console.error(`wrote ${path}: ${last.bytes} B, ${last.params} parameters${last.realBytes ? ` (real file ${last.realBytes} B)` : ''}`);
  }
  await writeCatalogFile(join(dir, 'catalog.json'), presetCatalog(dir));
  return out;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const [dir = '/tmp/standin-real', ...names] = process.argv.slice(2);
  await writeRealStandins(dir, names.length ? names : undefined);
}
