/**
 * Minimal SoundFont 2 reader: just what deriving timbre templates needs (presets -> instruments -> sample
 * regions with key range, root key and loop points, plus the 16-bit sample pool). Modulators, velocity layers
 * and 24-bit data are read past: the templates only need each region's steady spectrum. Layout per the SF2.04
 * spec: RIFF 'sfbk' { LIST INFO, LIST sdta { smpl }, LIST pdta { phdr pbag pmod pgen inst ibag imod igen shdr } }.
 */

export interface Sf2Sample {
  name: string;
  start: number;
  end: number;
  startLoop: number;
  endLoop: number;
  sampleRate: number;
  originalPitch: number;
  /** Cents. */
  pitchCorrection: number;
  sampleType: number;
}

/** One instrument zone resolved against its instrument's global zone; generators by SF2 operator number. */
export interface Sf2Region {
  keyLo: number;
  keyHi: number;
  sampleId: number;
  gens: Map<number, number>;
}

export interface Sf2Instrument {
  name: string;
  regions: Sf2Region[];
}

export interface Sf2Preset {
  name: string;
  program: number;
  bank: number;
  /** Preset zones: instrument index with the key range that zone maps to it. */
  zones: Array<{ instrument: number; keyLo: number; keyHi: number }>;
}

export interface Sf2File {
  info: Record<string, string>;
  presets: Sf2Preset[];
  instruments: Sf2Instrument[];
  samples: Sf2Sample[];
  /** The whole smpl chunk, sample-frame indexed (shdr offsets point into it). */
  data: Int16Array;
}

/** Generator operators used here (SF2.04 section 8.1.2). */
export const GEN = { keyRange: 43, instrument: 41, sampleId: 53, sampleModes: 54, overridingRootKey: 58, coarseTune: 51, fineTune: 52 } as const;

interface Chunk {
  id: string;
  start: number;
  size: number;
}

function chunks(buf: Buffer, start: number, end: number): Chunk[] {
  const out: Chunk[] = [];
  let p = start;
  while (p + 8 <= end) {
    const id = buf.toString('latin1', p, p + 4);
    const size = buf.readUInt32LE(p + 4);
    if (p + 8 + size > end) throw new Error(`sf2: chunk ${id} overruns its parent`);
    out.push({ id, start: p + 8, size });
    // Chunks are word-aligned: odd sizes carry a pad byte.
    p += 8 + size + (size & 1);
  }
  return out;
}

function list(buf: Buffer, all: Chunk[], type: string): Chunk[] {
  const c = all.find((x) => x.id === 'LIST' && buf.toString('latin1', x.start, x.start + 4) === type);
  if (!c) throw new Error(`sf2: no LIST ${type}`);
  return chunks(buf, c.start + 4, c.start + c.size);
}

function cstr(buf: Buffer, start: number, len: number): string {
  const s = buf.toString('latin1', start, start + len);
  const z = s.indexOf('\0');
  return (z < 0 ? s : s.slice(0, z)).trim();
}

function records(buf: Buffer, sub: Chunk[], id: string, size: number): number[] {
  const c = sub.find((x) => x.id === id);
  if (!c) throw new Error(`sf2: no ${id} chunk`);
  if (c.size % size !== 0) throw new Error(`sf2: ${id} size ${c.size} is not a multiple of ${size}`);
  return Array.from({ length: c.size / size }, (_, i) => c.start + i * size);
}

/** Generator list of bag `b`: [oper, raw 16-bit amount] pairs. */
function bagGens(buf: Buffer, bags: number[], gens: number[], b: number): Array<[number, number]> {
  const from = buf.readUInt16LE(bags[b]!);
  const to = buf.readUInt16LE(bags[b + 1]!);
  const out: Array<[number, number]> = [];
  for (let g = from; g < to; g++) out.push([buf.readUInt16LE(gens[g]!), buf.readUInt16LE(gens[g]! + 2)]);
  return out;
}

const signed = (v: number) => (v >= 0x8000 ? v - 0x10000 : v);
/** Range generators pack lo in the low byte and hi in the high byte. */
const range = (v: number): [number, number] => [v & 0xff, v >> 8];

export function parseSf2(buf: Buffer): Sf2File {
  if (buf.toString('latin1', 0, 4) !== 'RIFF' || buf.toString('latin1', 8, 12) !== 'sfbk') throw new Error('sf2: not a RIFF sfbk file');
  const top = chunks(buf, 12, Math.min(buf.length, 8 + buf.readUInt32LE(4)));
  const info: Record<string, string> = {};
  for (const c of list(buf, top, 'INFO')) {
    info[c.id] = c.id === 'ifil' ? `${buf.readUInt16LE(c.start)}.${String(buf.readUInt16LE(c.start + 2)).padStart(2, '0')}` : cstr(buf, c.start, c.size);
  }
  const smpl = list(buf, top, 'sdta').find((c) => c.id === 'smpl');
  if (!smpl) throw new Error('sf2: no smpl chunk');
  // Copy: the chunk may sit at an odd offset, which an Int16Array view cannot.
  const data = new Int16Array(smpl.size >> 1);
  for (let i = 0; i < data.length; i++) data[i] = buf.readInt16LE(smpl.start + 2 * i);

  const pdta = list(buf, top, 'pdta');
  const phdr = records(buf, pdta, 'phdr', 38);
  const pbag = records(buf, pdta, 'pbag', 4);
  const pgen = records(buf, pdta, 'pgen', 4);
  const inst = records(buf, pdta, 'inst', 22);
  const ibag = records(buf, pdta, 'ibag', 4);
  const igen = records(buf, pdta, 'igen', 4);
  const shdr = records(buf, pdta, 'shdr', 46);

  const samples: Sf2Sample[] = shdr.slice(0, -1).map((p) => ({
    name: cstr(buf, p, 20),
    start: buf.readUInt32LE(p + 20),
    end: buf.readUInt32LE(p + 24),
    startLoop: buf.readUInt32LE(p + 28),
    endLoop: buf.readUInt32LE(p + 32),
    sampleRate: buf.readUInt32LE(p + 36),
    originalPitch: buf.readUInt8(p + 40),
    pitchCorrection: buf.readInt8(p + 41),
    sampleType: buf.readUInt16LE(p + 44),
  }));

  // The last inst/phdr record is the terminal "EOI"/"EOP" sentinel that only bounds the previous bag list.
  const instruments: Sf2Instrument[] = inst.slice(0, -1).map((p, i) => {
    const b0 = buf.readUInt16LE(p + 20);
    const b1 = buf.readUInt16LE(inst[i + 1]! + 20);
    const global = new Map<number, number>();
    const regions: Sf2Region[] = [];
    for (let b = b0; b < b1; b++) {
      const g = bagGens(buf, ibag, igen, b);
      const sample = g.find(([op]) => op === GEN.sampleId);
      if (!sample) {
        // A zone without sampleID is the global zone only when it comes first (spec 7.7); others are ignored.
        if (b === b0) for (const [op, v] of g) global.set(op, v);
        continue;
      }
      const gens = new Map(global);
      for (const [op, v] of g) gens.set(op, v);
      const [keyLo, keyHi] = gens.has(GEN.keyRange) ? range(gens.get(GEN.keyRange)!) : [0, 127];
      regions.push({ keyLo, keyHi, sampleId: sample[1], gens });
    }
    return { name: cstr(buf, p, 20), regions };
  });

  const presets: Sf2Preset[] = phdr.slice(0, -1).map((p, i) => {
    const b0 = buf.readUInt16LE(p + 24);
    const b1 = buf.readUInt16LE(phdr[i + 1]! + 24);
    let globalRange: [number, number] = [0, 127];
    const zones: Sf2Preset['zones'] = [];
    for (let b = b0; b < b1; b++) {
      const g = bagGens(buf, pbag, pgen, b);
      const instrument = g.find(([op]) => op === GEN.instrument);
      const kr = g.find(([op]) => op === GEN.keyRange);
      if (!instrument) {
        if (b === b0 && kr) globalRange = range(kr[1]);
        continue;
      }
      const [keyLo, keyHi] = kr ? range(kr[1]) : globalRange;
      zones.push({ instrument: instrument[1], keyLo, keyHi });
    }
    return { name: cstr(buf, p, 20), program: buf.readUInt16LE(p + 20), bank: buf.readUInt16LE(p + 22), zones };
  });

  return { info, presets, instruments, samples, data };
}

/** Root key of a region in fractional MIDI notes (overridingRootKey, else the sample's pitch, plus corrections). */
export function regionRoot(file: Sf2File, r: Sf2Region): number {
  const s = file.samples[r.sampleId]!;
  const over = r.gens.get(GEN.overridingRootKey);
  const key = over !== undefined && signed(over) >= 0 ? signed(over) : s.originalPitch;
  // coarse/fine tune shift the played pitch up, which is the same as a lower root.
  const tune = signed(r.gens.get(GEN.coarseTune) ?? 0) + signed(r.gens.get(GEN.fineTune) ?? 0) / 100;
  return key - s.pitchCorrection / 100 - tune;
}

/** True when the region loops its sample while the key is held (sampleModes 1 or 3). */
export function regionLoops(r: Sf2Region): boolean {
  return ((r.gens.get(GEN.sampleModes) ?? 0) & 1) === 1;
}
