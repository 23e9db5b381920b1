import { existsSync, readdirSync } from 'node:fs';
import { decodeAudio, resolveMediaTools } from '../src/media/ffmpeg.js';
import { loadFftProvider } from '../src/media/dsp/fft.js';
import { stft } from '../src/media/dsp/stft.js';
import { buildTemplates, classShares, NMF_CLASSES } from '../src/engines/separation/dsp/nmf.js';
import { percussiveMask } from '../src/engines/separation/dsp/hpss.js';
import { root } from './lib.js';

/**
 * Why builtin-dsp's guitar estimate is near silent on real rock guitar: the per-class share of the harmonic
 * energy that the NMF template bank gives, on the mixture and on the isolated guitar stem (the first 8 s, mono).
 * Dirs: the corpus's fof_guitar_real_stems tracks plus any `<dir>` with mixture.flac and guitar.flac given as
 * arguments. Run: `node --import tsx bench/separation-guitar-diag.ts [dir...]`
 */
const base = `${root}../shared/corpus/separation/fof_guitar_real_stems`;
const dirs = [
  ...(existsSync(base) ? readdirSync(base).sort().map((d) => `${base}/${d}`) : []),
  ...process.argv.slice(2),
].filter((d) => existsSync(`${d}/mixture.flac`) && existsSync(`${d}/guitar.flac`));
if (!dirs.length) console.log('no track with mixture.flac and guitar.flac: nothing to measure');
const tools = resolveMediaTools({ preferSystem: true });
const nFft = 4096;
const hop = 1024;
const plan = (await loadFftProvider()).create(nFft);
const bank = buildTemplates(44100, nFft);
console.log(`| track | input | ${NMF_CLASSES.join(' | ')} |\n|---|---|${NMF_CLASSES.map(() => '---|').join('')}`);
for (const dir of dirs) {
  for (const file of ['mixture', 'guitar']) {
    const a = await decodeAudio(`${dir}/${file}.flac`, { ffmpeg: tools.ffmpeg, sampleRate: 44100, channels: 1 });
    const s = stft(a.channels[0]!.subarray(0, 44100 * 8), plan, { nFft, hop });
    const mag = new Float32Array(s.frames * s.bins);
    for (let i = 0; i < mag.length; i++) mag[i] = Math.hypot(s.re[i]!, s.im[i]!);
    // The engine's HPSS kernels at 44.1 kHz (~0.4 s, ~180 Hz), so the shares are of what 390 sees.
    const perc = percussiveMask(mag, s.frames, s.bins, { kernelTime: 17, kernelFreq: 17, power: 2 });
    const harm = mag.map((v, i) => v * (1 - perc[i]!));
    const shares = classShares(harm, s.frames, bank, NMF_CLASSES);
    let total = 0;
    for (const v of harm) total += v * v;
    const cells = NMF_CLASSES.map((c) => {
      let e = 0;
      const m = shares[c]!;
      for (let i = 0; i < harm.length; i++) e += (harm[i]! * m[i]!) ** 2;
      return (e / total).toFixed(3);
    });
    console.log(`| ${dir.split('/').pop()} | ${file} | ${cells.join(' | ')} |`);
  }
}
plan.dispose();
