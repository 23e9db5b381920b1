import { describe, expect, it } from 'vitest';
import { loadFftProvider } from '../../../src/media/dsp/fft.js';
import { stft } from '../../../src/media/dsp/stft.js';
import { buildTemplates, classShares } from '../../../src/engines/separation/dsp/nmf.js';
import { SOUNDFONT_TEMPLATES } from '../../../src/engines/separation/dsp/nmf-templates.generated.js';
import { GUITAR_BASES, GUITAR_BASIS_BIN_HZ } from '../../../src/engines/separation/dsp/nmf-guitar.generated.js';
import { GEN, parseSf2, regionLoops, regionRoot } from '../../../scripts/lib/sf2.js';
import { fitPartials, powerSpectrum } from '../../../scripts/lib/partials.js';

const RATE = 22050;

function chunk(id: string, body: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.write(id, 0, 'latin1');
  head.writeUInt32LE(body.length, 4);
  return Buffer.concat([head, body, body.length & 1 ? Buffer.alloc(1) : Buffer.alloc(0)]);
}
const list = (type: string, parts: Buffer[]) => chunk('LIST', Buffer.concat([Buffer.from(type, 'latin1'), ...parts]));
const name20 = (s: string) => { const b = Buffer.alloc(20); b.write(s, 'latin1'); return b; };
const u16 = (...v: number[]) => { const b = Buffer.alloc(2 * v.length); v.forEach((x, i) => b.writeUInt16LE(x, 2 * i)); return b; };
const u32 = (...v: number[]) => { const b = Buffer.alloc(4 * v.length); v.forEach((x, i) => b.writeUInt32LE(x, 4 * i)); return b; };

/** One preset (program 0) -> one instrument -> one looped sample: a 220 Hz tone with partials 1, 1/2, 1/4. */
function tinySf2(): { file: Buffer; n: number } {
  const n = 16000;
  const pcm = Buffer.alloc(2 * (n + 46));
  for (let i = 0; i < n; i++) {
    const t = i / RATE;
    const x = 0.5 * Math.sin(2 * Math.PI * 220 * t) + 0.25 * Math.sin(2 * Math.PI * 440 * t) + 0.125 * Math.sin(2 * Math.PI * 660 * t);
    pcm.writeInt16LE(Math.round(x * 32767), 2 * i);
  }
  const gen = (op: number, amount: number) => u16(op, amount);
  const shdr = (nm: string, start: number, end: number, ls: number, le: number, rate: number, pitch: number, corr: number, type: number) =>
    Buffer.concat([name20(nm), u32(start, end, ls, le, rate), Buffer.from([pitch, corr & 0xff]), u16(0, type)]);
  const pdta = list('pdta', [
    chunk('phdr', Buffer.concat([name20('Tiny Piano'), u16(0, 0, 0), u32(0, 0, 0), name20('EOP'), u16(0, 0, 1), u32(0, 0, 0)])),
    chunk('pbag', u16(0, 0, 1, 0)),
    chunk('pmod', Buffer.alloc(10)),
    chunk('pgen', Buffer.concat([gen(GEN.instrument, 0), gen(0, 0)])),
    chunk('inst', Buffer.concat([name20('Tiny'), u16(0), name20('EOI'), u16(1)])),
    chunk('ibag', u16(0, 0, 3, 0)),
    chunk('imod', Buffer.alloc(10)),
    // keyRange 48..72 (lo byte, hi byte), loop while held, then the terminal sampleID.
    chunk('igen', Buffer.concat([gen(GEN.keyRange, 48 | (72 << 8)), gen(GEN.sampleModes, 1), gen(GEN.sampleId, 0), gen(0, 0)])),
    chunk('shdr', Buffer.concat([shdr('tone', 0, n, 1000, 1000 + 2 * 1002, RATE, 57, 0, 1), shdr('EOS', 0, 0, 0, 0, 0, 0, 0, 0)])),
  ]);
  const info = list('INFO', [chunk('ifil', u16(2, 1)), chunk('INAM', Buffer.from('Tiny\0', 'latin1'))]);
  const body = Buffer.concat([Buffer.from('sfbk', 'latin1'), info, list('sdta', [chunk('smpl', pcm)]), pdta]);
  return { file: chunk('RIFF', body), n };
}

describe('SF2 parser and derived NMF templates', () => {
  it('reads a tiny SF2 built here: preset, instrument region, sample header and data', async () => {
    const { file: buf, n } = tinySf2();
    const file = parseSf2(buf);
    expect(file.info.ifil).toBe('2.01');
    expect(file.info.INAM).toBe('Tiny');
    expect(file.presets).toEqual([{ name: 'Tiny Piano', program: 0, bank: 0, zones: [{ instrument: 0, keyLo: 0, keyHi: 127 }] }]);
    expect(file.instruments).toHaveLength(1);
    const r = file.instruments[0]!.regions[0]!;
    expect([r.keyLo, r.keyHi, r.sampleId]).toEqual([48, 72, 0]);
    expect(regionLoops(r)).toBe(true);
    expect(regionRoot(file, r)).toBe(57);
    expect(file.samples[0]).toMatchObject({ name: 'tone', end: n, sampleRate: RATE, originalPitch: 57 });
    // The partial measurement recovers the 1 : 1/2 : 1/4 tone from the parsed data.
    const fft = (await loadFftProvider()).create(4096);
    const x = Float32Array.from(file.data.subarray(0, n), (v) => v / 32768);
    const fit = fitPartials(powerSpectrum(x, fft), RATE, 4096, 220, 4, 5000);
    fft.dispose();
    expect(fit.f0).toBeCloseTo(220, 0);
    expect(fit.amps[1]! / fit.amps[0]!).toBeCloseTo(0.5, 1);
    expect(fit.amps[2]! / fit.amps[0]!).toBeCloseTo(0.25, 1);
    expect(fit.inharmonicity).toBe(0);
  });

  it('has a generated table for every pitched class, partials normalised to peak 1', () => {
    for (const cls of ['piano', 'guitar', 'strings', 'wind', 'synthesizer', 'bass', 'vocals']) {
      const rows = SOUNDFONT_TEMPLATES[cls]!;
      expect(rows.length).toBeGreaterThan(2);
      for (const r of rows) expect(Math.max(...r.partials)).toBe(1);
    }
  });

  it('builds the soundfont bank as large as the hand-set one, and a struck-string tone reads as piano more than guitar', async () => {
    const nFft = 2048;
    const derived = buildTemplates(RATE, nFft, 'soundfont');
    const hand = buildTemplates(RATE, nFft, 'handset');
    expect(derived.classOf.length).toBe(hand.classOf.length);
    expect(derived.value.every((v) => Number.isFinite(v) && v >= 0)).toBe(true);
    // C4 with piano-like stretched partials decaying as h^-1.5 and a slow exponential decay.
    const len = RATE * 2;
    const x = new Float32Array(len);
    const f0 = 261.6;
    for (let h = 1; h <= 16; h++) {
      const fh = h * f0 * Math.sqrt(1 + 3e-4 * h * h);
      if (fh > RATE / 2 - 200) break;
      for (let i = 0; i < len; i++) x[i]! += 0.3 * h ** -1.5 * Math.sin(2 * Math.PI * fh * (i / RATE)) * Math.exp(-i / RATE);
    }
    const fft = (await loadFftProvider()).create(nFft);
    const s = stft(x, fft, { nFft, hop: nFft / 4 });
    fft.dispose();
    const mag = new Float32Array(s.re.length);
    for (let i = 0; i < mag.length; i++) mag[i] = Math.hypot(s.re[i]!, s.im[i]!);
    const shares = classShares(mag, s.frames, derived, ['piano', 'guitar']);
    let piano = 0;
    let guitar = 0;
    for (let i = 0; i < mag.length; i++) {
      piano += shares.piano![i]! * mag[i]! ** 2;
      guitar += shares.guitar![i]! * mag[i]! ** 2;
    }
    expect(piano).toBeGreaterThan(guitar);
  });

  it('adds the bases learned on real guitar stems to the guitar class, and a spectrum shaped like one reads as guitar', () => {
    const nFft = 2048;
    const withLearned = buildTemplates(RATE, nFft, 'soundfont', true);
    const without = buildTemplates(RATE, nFft, 'soundfont', false);
    const guitarId = 1; // NMF_CLASSES order: piano, guitar, ...
    const count = (b: typeof without) => b.classOf.filter((c) => c === guitarId).length;
    expect(count(withLearned) - count(without)).toBe(GUITAR_BASES.length);
    // Ten frames of a learned basis at this rate's bins (linear in frequency, as the bank resamples it).
    const bins = nFft / 2 + 1;
    const binHz = RATE / nFft;
    const basis = GUITAR_BASES[0]!;
    const frame = Float32Array.from({ length: bins }, (_, k) => {
      const x = (k * binHz) / GUITAR_BASIS_BIN_HZ;
      const i = Math.floor(x);
      return i + 1 < basis.length ? basis[i]! + (basis[i + 1]! - basis[i]!) * (x - i) : 0;
    });
    const mag = new Float32Array(bins * 10);
    for (let t = 0; t < 10; t++) mag.set(frame, t * bins);
    const share = (bank: typeof without) => {
      const g = classShares(mag, 10, bank, ['guitar']).guitar!;
      let num = 0;
      let den = 0;
      for (let i = 0; i < mag.length; i++) {
        num += g[i]! * mag[i]! ** 2;
        den += mag[i]! ** 2;
      }
      return num / den;
    };
    expect(share(withLearned)).toBeGreaterThan(0.5);
    expect(share(without)).toBeLessThan(share(withLearned));
  });
});
