/**
 * Writes stand-in separation models with the real models' exact signatures (a constant gain in place of
 * the network) into a folder, so the neural engines' own pipeline (resampling, STFT/iSTFT, segment
 * overlap-add, encoders) can be timed where no weights can be downloaded. Figures taken with them are the
 * engine's overhead around the network, never the network's cost.
 * The network's cost is measured with bench/standin-real.ts (real layers and shapes) by bench/neural-cost.ts.
 * Models count only once verified against the catalog, so it also writes the site catalog that pins them:
 *   node --import tsx bench/standin-models.ts /tmp/standin-models
 *   MODELS_DIR=/tmp/standin-models MODELS_CATALOG_FILE=/tmp/standin-models/catalog.json node --import tsx bench/separation.ts
 */
import { join } from 'node:path';
import { presetCatalog, writeCatalogFile } from '../test/fixtures/pinned-catalog.js';
import { buildTinyDemucsModel, buildTinyMdxModel, writeModel } from '../test/fixtures/separation-models.js';

const dir = process.argv[2] ?? '/tmp/standin-models';
await writeModel(join(dir, 'Kim_Vocal_2/Kim_Vocal_2.onnx'), buildTinyMdxModel(3072, 256, 0.5));
// demucs: 343980-sample segments; the spectrogram branch is 2048 bins x 336 frames (n_fft 4096, hop 1024).
await writeModel(join(dir, 'htdemucs/htdemucs.onnx'), buildTinyDemucsModel({ segment: 343980, bins: 2048, frames: 336, timeGain: [0.1, 0.1, 0.1, 0.1], freqGain: [0.15, 0.15, 0.15, 0.15] }));
await writeCatalogFile(join(dir, 'catalog.json'), presetCatalog(dir));
console.log(dir);
