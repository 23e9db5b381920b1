/**
 * Supervised NMF with fixed timbre templates (Smaragdis & Brown 2003; Benetos et al.): one harmonic template
 * per semitone per instrument class. Only activations are estimated (KL multiplicative updates, per frame),
 * then each class's share of the model spectrum is its Wiener-like mask. Templates are sparse (a few bins per
 * partial), which keeps a 380-template update cheap.
 *
 * Where the partial amplitudes and inharmonicity come from (`TemplateSource`):
 * - 'soundfont': measured per class and octave on the FluidR3 GM soundfont by scripts/derive-nmf-templates.ts
 *   (table in nmf-templates.generated.ts). The FluidR3-rendered benchmark songs therefore score templates of
 *   their own soundfont; bench/results/separation.md compares both sources on real recordings too.
 * - 'handset': spectral-envelope priors set by hand from acoustics literature, fitted to no soundfont.
 * Register ranges and lobe widths (vibrato, chorus) are the hand-set ones in both: static samples carry neither.
 */
import { SOUNDFONT_TEMPLATES, type DerivedRegister } from './nmf-templates.generated.js';
import { GUITAR_BASES, GUITAR_BASIS_BIN_HZ } from './nmf-guitar.generated.js';

export const NMF_CLASSES = ['piano', 'guitar', 'strings', 'wind', 'synthesizer', 'bass', 'vocals', 'noise'] as const;
export type NmfClass = (typeof NMF_CLASSES)[number];

interface ClassPrior {
  midi: [number, number];
  partials: number;
  /** Amplitude of partial h at frequency f of the note `midi`. */
  amp(h: number, f: number, midi: number): number;
  /** Relative lobe width: vibrato/chorus broaden partials. */
  relWidth: number;
  /** Inharmonicity coefficient B of f_h = h f0 sqrt(1 + B h^2) (stiff strings). */
  inharmonicity(midi: number): number;
}

function formant(f: number, center: number, widthOct: number): number {
  const d = Math.log2(f / center) / widthOct;
  return Math.exp(-0.5 * d * d);
}

function priors(): Record<Exclude<NmfClass, 'noise'>, ClassPrior> {
  return {
    // Struck stiff strings: strong low partials decaying fast, stretched partials growing with pitch.
    piano: { midi: [28, 100], partials: 20, amp: (h) => h ** -1.3, relWidth: 0.003, inharmonicity: (m) => 1.5e-4 * 2 ** ((m - 60) / 18) },
    // Plucked near the bridge: comb-filtered spectrum (missing every ~6th partial), brighter than piano.
    guitar: { midi: [40, 88], partials: 24, amp: (h) => (Math.abs(Math.sin((Math.PI * h) / 6.3)) + 0.1) * h ** -0.8, relWidth: 0.004, inharmonicity: () => 2e-5 },
    // Bowed: sawtooth-like 1/h with body resonances, vibrato widens partials.
    strings: { midi: [36, 100], partials: 28, amp: (h, f) => h ** -1 * (0.5 + formant(f, 450, 0.6) + 0.7 * formant(f, 2500, 0.5)), relWidth: 0.012, inharmonicity: () => 0 },
    // Reeds and flutes: weak even partials (closed-pipe), steep roll-off.
    wind: { midi: [50, 98], partials: 16, amp: (h) => (h % 2 === 0 ? 0.45 : 1) * h ** -1.6, relWidth: 0.007, inharmonicity: () => 0 },
    // Oscillators: exactly stable pitch, bright flat-ish partials up to the top.
    synthesizer: { midi: [36, 96], partials: 40, amp: (h) => h ** -0.7, relWidth: 0.0015, inharmonicity: () => 0 },
    bass: { midi: [28, 55], partials: 12, amp: (h) => h ** -1.4, relWidth: 0.004, inharmonicity: () => 1e-4 },
    // Voice: formants around 500/1500/2800 Hz and wide vibrato.
    vocals: { midi: [45, 84], partials: 30, amp: (h, f) => h ** -0.6 * (0.2 + formant(f, 550, 0.5) + 0.7 * formant(f, 1600, 0.4) + 0.5 * formant(f, 2900, 0.3)), relWidth: 0.02, inharmonicity: () => 0 },
  };
}

export type TemplateSource = 'soundfont' | 'handset';
/** Chosen by bench/separation.ts on the real recordings of the corpus (see bench/results/separation.md). */
export const DEFAULT_TEMPLATE_SOURCE: TemplateSource = 'soundfont';

/**
 * Partial amplitude and B at a fractional MIDI note from the derived per-octave rows: linear between octave
 * centres, clamped at the outermost rows, so templates change smoothly from one semitone to the next.
 */
function derivedAt(rows: readonly DerivedRegister[], midi: number): { amp(h: number): number; B: number } {
  const centre = (r: DerivedRegister) => r.lo + 5.5;
  let i = rows.findIndex((r) => centre(r) > midi);
  if (i < 0) i = rows.length;
  const a = rows[Math.max(0, i - 1)]!;
  const b = rows[Math.min(rows.length - 1, i)]!;
  const w = a === b ? 0 : (midi - centre(a)) / (centre(b) - centre(a));
  const mix = (x: number, y: number) => x * (1 - w) + y * w;
  return { amp: (h) => mix(a.partials[h - 1] ?? 0, b.partials[h - 1] ?? 0), B: mix(a.inharmonicity, b.inharmonicity) };
}

/** Hand-set priors with amplitudes and B replaced by the soundfont measurements where a class has them. */
function soundfontPriors(): Record<Exclude<NmfClass, 'noise'>, ClassPrior> {
  const hand = priors();
  const out = { ...hand };
  for (const name of Object.keys(hand) as Array<keyof typeof hand>) {
    const rows = SOUNDFONT_TEMPLATES[name];
    if (!rows?.length) continue;
    const p = hand[name];
    const partials = Math.max(...rows.map((r) => r.partials.length));
    out[name] = { ...p, partials, amp: (h, _f, m) => derivedAt(rows, m).amp(h), inharmonicity: (m) => derivedAt(rows, m).B };
  }
  return out;
}

export interface TemplateBank {
  bins: number;
  classOf: Uint8Array;
  offsets: Int32Array;
  index: Int32Array;
  value: Float32Array;
  colSum: Float64Array;
}

/**
 * Builds the bank. `learnedGuitar` adds the bases learned on real electric-guitar stems
 * (scripts/learn-guitar-templates.ts) to the guitar class, resampled to this STFT's bins by frequency.
 */
export function buildTemplates(sampleRate: number, nFft: number, source: TemplateSource = DEFAULT_TEMPLATE_SOURCE, learnedGuitar = true): TemplateBank {
  const bins = (nFft >> 1) + 1;
  const binHz = sampleRate / nFft;
  const maxHz = Math.min(11000, sampleRate / 2 - binHz);
  const cls: number[] = [];
  const offsets: number[] = [0];
  const index: number[] = [];
  const value: number[] = [];
  const dense = new Float32Array(bins);
  const push = (c: number) => {
    let sum = 0;
    for (let k = 0; k < bins; k++) sum += dense[k]!;
    if (sum <= 0) return;
    for (let k = 0; k < bins; k++) {
      if (dense[k]! > 1e-3 * sum) {
        index.push(k);
        value.push(dense[k]! / sum);
      }
    }
    cls.push(c);
    offsets.push(index.length);
  };
  const table = source === 'soundfont' ? soundfontPriors() : priors();
  NMF_CLASSES.forEach((name, c) => {
    if (name === 'noise') {
      // Broadband templates (log-spaced bands) absorb drums, breath and anything unpitched.
      const edges = 14;
      for (let b = 0; b < edges; b++) {
        dense.fill(0);
        const f0 = 40 * (maxHz / 40) ** (b / edges);
        const f1 = 40 * (maxHz / 40) ** ((b + 1) / edges);
        for (let k = Math.floor(f0 / binHz); k <= Math.min(bins - 1, Math.ceil(f1 / binHz)); k++) dense[k] = 1;
        push(c);
      }
      return;
    }
    if (name === 'guitar' && learnedGuitar) {
      for (const basis of GUITAR_BASES) {
        dense.fill(0);
        for (let k = 0; k < bins && k * binHz <= maxHz; k++) {
          const x = (k * binHz) / GUITAR_BASIS_BIN_HZ;
          const i = Math.floor(x);
          if (i + 1 >= basis.length) break;
          dense[k] = basis[i]! + (basis[i + 1]! - basis[i]!) * (x - i);
        }
        push(c);
      }
    }
    const p = table[name];
    for (let m = p.midi[0]; m <= p.midi[1]; m++) {
      dense.fill(0);
      const f0 = 440 * 2 ** ((m - 69) / 12);
      const B = p.inharmonicity(m);
      for (let h = 1; h <= p.partials; h++) {
        const fh = h * f0 * Math.sqrt(1 + B * h * h);
        if (fh > maxHz) break;
        const a = p.amp(h, fh, m);
        if (!(a > 0)) continue;
        const center = fh / binHz;
        // Window main lobe (Hann: ~2 bins) or the instrument's own spread, whichever is wider.
        const sigma = Math.max(0.9, (fh * p.relWidth) / binHz);
        for (let k = Math.max(0, Math.floor(center - 2.5 * sigma)); k <= Math.min(bins - 1, Math.ceil(center + 2.5 * sigma)); k++) {
          const d = (k - center) / sigma;
          dense[k]! += a * Math.exp(-0.5 * d * d);
        }
      }
      push(c);
    }
  });
  const count = cls.length;
  const colSum = new Float64Array(count);
  for (let j = 0; j < count; j++) for (let q = offsets[j]!; q < offsets[j + 1]!; q++) colSum[j]! += value[q]!;
  return { bins, classOf: Uint8Array.from(cls), offsets: Int32Array.from(offsets), index: Int32Array.from(index), value: Float32Array.from(value), colSum };
}

/**
 * Per-frame KL-NMF activations with the bank fixed, then each requested class's share of the model spectrum.
 * Shares of all classes sum to at most 1 in every bin.
 */
export function classShares(mag: Float32Array, frames: number, bank: TemplateBank, targets: readonly NmfClass[], iterations = 8): Record<string, Float32Array> {
  const { bins, offsets, index, value, colSum, classOf } = bank;
  const count = classOf.length;
  const h = new Float64Array(count);
  const model = new Float64Array(bins);
  const ratio = new Float64Array(bins);
  const targetIds = targets.map((t) => NMF_CLASSES.indexOf(t));
  const perClass = targetIds.map(() => new Float64Array(bins));
  const out: Record<string, Float32Array> = {};
  for (const t of targets) out[t] = new Float32Array(frames * bins);
  let started = false;
  for (let t = 0; t < frames; t++) {
    const row = t * bins;
    let energy = 0;
    for (let k = 0; k < bins; k++) energy += mag[row + k]!;
    if (energy < 1e-8) continue;
    // Warm start from the previous frame (music changes slowly), so few iterations suffice.
    const warm = t > 0 && started;
    started = true;
    for (let j = 0; j < count; j++) {
      if (warm) {
        h[j] = h[j]! * 0.8 + 1e-9;
        continue;
      }
      let s = 0;
      for (let q = offsets[j]!; q < offsets[j + 1]!; q++) s += value[q]! * mag[row + index[q]!]!;
      h[j] = s / colSum[j]! / count + 1e-9;
    }
    for (let it = 0; it <= iterations; it++) {
      model.fill(1e-12);
      for (let j = 0; j < count; j++) {
        const hj = h[j]!;
        if (hj < 1e-12) continue;
        for (let q = offsets[j]!; q < offsets[j + 1]!; q++) model[index[q]!]! += hj * value[q]!;
      }
      if (it === iterations) break;
      for (let k = 0; k < bins; k++) ratio[k] = mag[row + k]! / model[k]!;
      for (let j = 0; j < count; j++) {
        if (h[j]! < 1e-12) continue;
        let s = 0;
        for (let q = offsets[j]!; q < offsets[j + 1]!; q++) s += value[q]! * ratio[index[q]!]!;
        h[j]! *= s / colSum[j]!;
      }
    }
    for (let c = 0; c < targetIds.length; c++) {
      const acc = perClass[c]!;
      acc.fill(0);
      for (let j = 0; j < count; j++) {
        if (classOf[j] !== targetIds[c]) continue;
        const hj = h[j]!;
        for (let q = offsets[j]!; q < offsets[j + 1]!; q++) acc[index[q]!]! += hj * value[q]!;
      }
      const dst = out[targets[c]!]!;
      for (let k = 0; k < bins; k++) dst[row + k] = Math.min(1, acc[k]! / model[k]!);
    }
  }
  return out;
}
