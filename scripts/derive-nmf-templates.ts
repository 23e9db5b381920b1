/**
 * Derives the NMF timbre-template table (src/engines/separation/dsp/nmf-templates.generated.ts) from the
 * FluidR3 General MIDI soundfont: per instrument class and octave, the relative amplitudes of harmonics
 * 1..PARTIALS and the inharmonicity B, measured on the sustained part of every sample region that the class's
 * GM programs map a key of that octave to.
 *
 *   cd /tmp && apt-get download fluid-soundfont-gm && dpkg -x fluid-soundfont-gm_*.deb fluid
 *   node --import tsx scripts/derive-nmf-templates.ts /tmp/fluid/usr/share/sounds/sf2/FluidR3_GM.sf2 [deb version]
 *
 * Resampling a region to another key keeps the ratio of every partial to f0, so a region's partial amplitudes
 * and B hold for all keys it covers: each region is analysed once at its root and weighted by its key count
 * per octave. Not modelled: filter/envelope generators, vibrato (the template bank keeps its own lobe widths).
 */
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { loadFftProvider, type RealFft } from '../src/media/dsp/fft.js';
import { parseSf2, regionLoops, regionRoot, type Sf2File, type Sf2Region } from './lib/sf2.js';
import { fitPartials, powerSpectrum } from './lib/partials.js';

const PARTIALS = 32;
/** Octaves kept: MIDI 24..107 (C1..B7), beyond what any class template in nmf.ts spans. */
const OCTAVES = [24, 36, 48, 60, 72, 84, 96];
const MAX_HZ = 11000;

/** GM program numbers (0-based) per class. Timpani (47) is a drum, not a string template; left out. */
const CLASSES: Record<string, number[]> = {
  piano: range(0, 7),
  guitar: range(24, 31),
  bass: range(32, 39),
  strings: range(40, 51).filter((p) => p !== 47),
  wind: range(56, 79),
  synthesizer: range(80, 95),
  vocals: range(52, 54),
};

function range(a: number, b: number): number[] {
  return Array.from({ length: b - a + 1 }, (_, i) => a + i);
}

/** The sustained tone of a region: from 30 ms past the onset up to 1.5 s, or its loop tiled when shorter. */
function sustained(file: Sf2File, r: Sf2Region, n: number): Float32Array | undefined {
  const s = file.samples[r.sampleId]!;
  const from = s.start + Math.round(0.03 * s.sampleRate);
  const to = Math.min(s.end, s.start + Math.round(1.5 * s.sampleRate));
  if (to - from >= n) return Float32Array.from(file.data.subarray(from, to), (v) => v / 32768);
  const loopLen = s.endLoop - s.startLoop;
  if (!regionLoops(r) || loopLen < 16 || s.endLoop > s.end) return undefined;
  const out = new Float32Array(2 * n);
  for (let i = 0; i < out.length; i++) out[i] = file.data[s.startLoop + (i % loopLen)]! / 32768;
  return out;
}

interface Acc { weight: number; amps: Float64Array; bs: Array<[number, number]> }

async function main(): Promise<void> {
  const path = process.argv[2] ?? '/tmp/fluid/usr/share/sounds/sf2/FluidR3_GM.sf2';
  const debVersion = process.argv[3] ?? '3.1-5.3';
  const buf = readFileSync(path);
  const sha = createHash('sha256').update(buf).digest('hex');
  const file = parseSf2(buf);
  const provider = await loadFftProvider();
  const ffts = new Map<number, RealFft>();
  const fftOf = (n: number) => ffts.get(n) ?? ffts.set(n, provider.create(n)).get(n)!;
  const perRegion = new Map<string, { amps: number[]; B: number } | null>();
  const table: Record<string, Array<{ lo: number; keys: number; inharmonicity: number; partials: number[] }>> = {};
  for (const [cls, programs] of Object.entries(CLASSES)) {
    const acc = OCTAVES.map((): Acc => ({ weight: 0, amps: new Float64Array(PARTIALS), bs: [] }));
    for (const preset of file.presets.filter((p) => p.bank === 0 && programs.includes(p.program))) {
      for (const zone of preset.zones) {
        const inst = file.instruments[zone.instrument]!;
        for (const r of inst.regions) {
          const lo = Math.max(zone.keyLo, r.keyLo);
          const hi = Math.min(zone.keyHi, r.keyHi);
          if (lo > hi) continue;
          const key = `${zone.instrument}:${r.sampleId}:${r.keyLo}`;
          if (!perRegion.has(key)) perRegion.set(key, analyse(file, r, fftOf));
          const fit = perRegion.get(key);
          if (!fit) continue;
          OCTAVES.forEach((o, i) => {
            const keys = Math.max(0, Math.min(hi, o + 11) - Math.max(lo, o) + 1);
            if (!keys) return;
            // Each region counts by the keys it plays in this octave, its spectrum at unit peak.
            const a = acc[i]!;
            a.weight += keys;
            for (let h = 0; h < PARTIALS; h++) a.amps[h]! += keys * fit.amps[h]!;
            a.bs.push([fit.B, keys]);
          });
        }
      }
    }
    table[cls] = OCTAVES.flatMap((o, i) => {
      const a = acc[i]!;
      if (!a.weight) return [];
      const amps = Array.from(a.amps, (v) => v / a.weight);
      const peak = Math.max(...amps);
      return [{ lo: o, keys: a.weight, inharmonicity: weightedMedian(a.bs), partials: trim(amps.map((v) => Number((v / peak).toFixed(3)))) }];
    });
    console.error(`${cls}: ${table[cls]!.map((r) => `${r.lo}:${r.keys}k B=${r.inharmonicity.toExponential(1)}`).join(' ')}`);
  }
  for (const f of ffts.values()) f.dispose();
  writeFileSync(new URL('../src/engines/separation/dsp/nmf-templates.generated.ts', import.meta.url), render(table, file, sha, debVersion));
}

function analyse(file: Sf2File, r: Sf2Region, fftOf: (n: number) => RealFft): { amps: number[]; B: number } | null {
  const s = file.samples[r.sampleId]!;
  const root = regionRoot(file, r);
  const f0 = 440 * 2 ** ((root - 69) / 12);
  // At least ~10 bins between partials, so neighbours do not share a main lobe.
  const n = Math.min(32768, Math.max(4096, 2 ** Math.ceil(Math.log2((10 * s.sampleRate) / f0))));
  const x = sustained(file, r, n);
  if (!x) return null;
  const fit = fitPartials(powerSpectrum(x, fftOf(n)), s.sampleRate, n, f0, PARTIALS, Math.min(MAX_HZ, 0.45 * s.sampleRate));
  const peak = Math.max(...fit.amps);
  if (!(peak > 0)) return null;
  return { amps: fit.amps.map((v) => v / peak), B: fit.inharmonicity };
}

/** Trailing zeros (partials above the analysed band) carry nothing: the bank treats missing ones as 0. */
function trim(v: number[]): number[] {
  let n = v.length;
  while (n > 1 && v[n - 1] === 0) n--;
  return v.slice(0, n);
}

function weightedMedian(v: Array<[number, number]>): number {
  const s = [...v].sort((a, b) => a[0] - b[0]);
  const total = s.reduce((t, [, w]) => t + w, 0);
  let run = 0;
  for (const [x, w] of s) if ((run += w) >= total / 2) return Number(x.toPrecision(2));
  return 0;
}

function render(table: Record<string, unknown[]>, file: Sf2File, sha: string, debVersion: string): string {
  const body = Object.entries(table)
    .map(([cls, rows]) => `  ${cls}: [\n${(rows as Array<Record<string, unknown>>).map((r) => `    ${JSON.stringify(r).replace(/"(\w+)":/g, '$1: ').replace(/,/g, ', ')},`).join('\n')}\n  ],`)
    .join('\n');
  return `// GENERATED by \`node --import tsx scripts/derive-nmf-templates.ts\` -- do not edit by hand.
// Source: FluidR3_GM.sf2 (${file.info.INAM ?? 'FluidR3'}, SF2 ${file.info.ifil ?? '?'}), Debian package fluid-soundfont-gm ${debVersion},
// sha256 ${sha}.
// FluidR3 GM soundfont (c) Frank Wen and contributors, MIT licence (Debian copyright file); only these measured
// numbers are derived from it, no audio. Per class and octave (MIDI lo..lo+11): key-weighted mean relative
// amplitude of harmonics 1..${PARTIALS} (peak = 1,
// trailing zeros cut) and median inharmonicity B of f_h = h f0 sqrt(1 + B h^2).

export interface DerivedRegister {
  lo: number;
  keys: number;
  inharmonicity: number;
  partials: number[];
}

export const SOUNDFONT_TEMPLATES: Record<string, DerivedRegister[]> = {
${body}
};
`;
}

await main();
