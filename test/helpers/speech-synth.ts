/**
 * Tiny source-filter speech synthesiser for disfluency tests and the filler benchmark: a glottal
 * pulse train (F0 contour) through three formant resonators (formant contour), plus noise bursts
 * for consonants. Deterministic (seeded noise) so tests are repeatable.
 */
export interface VowelSpec {
  seconds: number;
  f0: (t: number) => number;
  formants: (t: number) => [number, number, number];
  amp?: number;
}

export function rng(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 4294967296 - 0.5;
  };
}

export function vowel(spec: VowelSpec, rate: number): Float32Array {
  const n = Math.round(spec.seconds * rate);
  const y = new Float32Array(n);
  let phase = 0;
  const st = [0, 0, 0, 0, 0, 0];
  const bw = [80, 110, 160];
  let peak = 0;
  for (let i = 0; i < n; i++) {
    const t = i / rate;
    phase += spec.f0(t) / rate;
    // Glottal pulse: a decaying derivative-like pulse at each period start.
    const p = phase % 1;
    let x = p < 0.4 ? Math.sin(Math.PI * (p / 0.4)) ** 2 - 0.5 : -0.5 * (1 - (p - 0.4) / 0.6);
    const fm = spec.formants(t);
    for (let k = 0; k < 3; k++) {
      const r = Math.exp((-Math.PI * bw[k]!) / rate);
      const a1 = 2 * r * Math.cos((2 * Math.PI * fm[k]!) / rate), a2 = -r * r;
      const out = (1 - r) * x + a1 * st[2 * k]! + a2 * st[2 * k + 1]!;
      st[2 * k + 1] = st[2 * k]!;
      st[2 * k] = out;
      x = out;
    }
    y[i] = x;
    peak = Math.max(peak, Math.abs(x));
  }
  const ramp = Math.min(n >> 1, Math.round(0.02 * rate));
  const g = (spec.amp ?? 0.3) / (peak || 1);
  for (let i = 0; i < n; i++) {
    const e = Math.min(1, i / ramp, (n - 1 - i) / ramp);
    y[i] = y[i]! * g * e;
  }
  return y;
}

/** Band-limited noise burst (a fricative or plosive release) centred near `hz`. */
export function burst(seconds: number, rate: number, seed: number, hz = 4000, amp = 0.08): Float32Array {
  const n = Math.round(seconds * rate);
  const y = new Float32Array(n);
  const rnd = rng(seed);
  const r = 0.9, c = 2 * r * Math.cos((2 * Math.PI * hz) / rate);
  let y1 = 0, y2 = 0;
  for (let i = 0; i < n; i++) {
    const v = rnd() + c * y1 - r * r * y2;
    y2 = y1;
    y1 = v;
    y[i] = v * amp * Math.sin((Math.PI * i) / n);
  }
  return y;
}

export function silence(seconds: number, rate: number): Float32Array {
  return new Float32Array(Math.round(seconds * rate));
}

export function concat(parts: Float32Array[]): Float32Array {
  const out = new Float32Array(parts.reduce((a, p) => a + p.length, 0));
  let o = 0;
  for (const p of parts) { out.set(p, o); o += p.length; }
  return out;
}

const lerp3 = (a: [number, number, number], b: [number, number, number], x: number): [number, number, number] =>
  [a[0] + (b[0] - a[0]) * x, a[1] + (b[1] - a[1]) * x, a[2] + (b[2] - a[2]) * x];

const VOWELS: Array<[number, number, number]> = [[730, 1090, 2440], [270, 2290, 3010], [300, 870, 2240], [530, 1840, 2480], [640, 1190, 2390], [390, 1990, 2550]];

/**
 * Running speech-like material: syllables of a consonant burst and a vowel whose formants glide
 * from one vowel to another and whose F0 moves by several semitones, as in connected speech.
 */
export function speechLike(syllables: number, rate: number, seed: number): Float32Array {
  const rnd = rng(seed);
  const parts: Float32Array[] = [];
  for (let s = 0; s < syllables; s++) {
    const a = VOWELS[Math.floor((rnd() + 0.5) * VOWELS.length) % VOWELS.length]!;
    const b = VOWELS[(VOWELS.indexOf(a) + 1 + Math.floor((rnd() + 0.5) * 4)) % VOWELS.length]!;
    const f0a = 110 + 60 * (rnd() + 0.5), f0b = f0a * (rnd() > 0 ? 1.3 : 0.75);
    const dur = 0.12 + 0.1 * (rnd() + 0.5);
    parts.push(burst(0.04, rate, seed * 97 + s, 2500 + 3000 * (rnd() + 0.5)));
    parts.push(vowel({ seconds: dur, f0: (t) => f0a + ((f0b - f0a) * t) / dur, formants: (t) => lerp3(a, b, t / dur) }, rate));
    if (rnd() > 0.2) parts.push(silence(0.03 + 0.05 * (rnd() + 0.5), rate));
  }
  return concat(parts);
}

/** A filled pause "uh": schwa formants held, F0 flat with a slight fall. */
export function filler(seconds: number, rate: number, f0 = 115): Float32Array {
  return vowel({ seconds, f0: (t) => f0 * (1 - 0.04 * (t / seconds)), formants: () => [550, 1500, 2500] }, rate);
}

/** One syllable "ta"-like: burst then a short gliding vowel (same shape each call, slight F0 jitter). */
export function syllable(rate: number, seed: number, f0 = 130): Float32Array {
  const dur = 0.14;
  return concat([
    burst(0.035, rate, 7, 4200, 0.1),
    vowel({ seconds: dur, f0: (t) => f0 * (1 + 0.01 * seed) * (1 - 0.15 * (t / dur)), formants: (t) => lerp3([700, 1200, 2500], [600, 1700, 2550], t / dur) }, rate),
  ]);
}
