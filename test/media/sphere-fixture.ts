/**
 * NIST SPHERE files built in the test (no corpus file, nothing committed): the 1024-byte ASCII header ("NIST_1A",
 * header size, `name -type value` fields, "end_head"), then the samples as 16-bit PCM in either byte order, 8-bit
 * mu-law, or a Shorten v2 stream as NIST's w_encode embeds it (sample_coding "pcm,embedded-shorten-v2.00": no
 * verbatim WAV header inside, unlike .shn files).
 */
export type SphereCoding = 'pcm-le' | 'pcm-be' | 'ulaw' | 'shorten';

export function nistSphere(opts: {
  sampleRate: number;
  channels: number;
  /** Interleaved 16-bit samples. */
  samples: Int16Array;
  coding: SphereCoding;
  /** Bytes after the header instead of the coded samples (a corrupt stream). */
  payload?: Buffer;
  sampleCount?: number;
}): Buffer {
  const { sampleRate, channels, samples, coding } = opts;
  const frames = opts.sampleCount ?? samples.length / channels;
  const ulaw = coding === 'ulaw';
  const fields = [
    `sample_count -i ${frames}`,
    `sample_rate -i ${sampleRate}`,
    `channel_count -i ${channels}`,
    `sample_n_bytes -i ${ulaw ? 1 : 2}`,
    ...(ulaw ? ['sample_coding -s4 ulaw'] : []),
    ...(coding === 'pcm-le' || coding === 'shorten' ? ['sample_byte_format -s2 01'] : []),
    ...(coding === 'pcm-be' ? ['sample_byte_format -s2 10'] : []),
    ...(coding === 'shorten' ? ['sample_coding -s26 pcm,embedded-shorten-v2.00'] : []),
    `sample_sig_bits -i ${ulaw ? 8 : 16}`,
    'database_id -s7 soundry',
  ];
  const header = Buffer.alloc(1024, 0x20);
  header.write(`NIST_1A\n   1024\n${fields.join('\n')}\nend_head\n`, 0, 'latin1');
  let body: Buffer;
  if (opts.payload) body = opts.payload;
  else if (coding === 'shorten') body = shortenStream(samples, channels);
  else if (ulaw) body = Buffer.from(Array.from(samples, muLaw));
  else {
    body = Buffer.alloc(samples.length * 2);
    samples.forEach((v, i) => (coding === 'pcm-le' ? body.writeInt16LE(v, i * 2) : body.writeInt16BE(v, i * 2)));
  }
  return Buffer.concat([header, body]);
}

/** G.711 mu-law of a 16-bit sample. */
function muLaw(sample: number): number {
  const BIAS = 0x84;
  const sign = sample < 0 ? 0x80 : 0;
  let x = Math.min(32635, Math.abs(sample)) + BIAS;
  let exponent = 7;
  for (let mask = 0x4000; (x & mask) === 0 && exponent > 0; mask >>= 1) exponent--;
  const mantissa = (x >> (exponent + 3)) & 0x0f;
  x = ~(sign | (exponent << 4) | mantissa) & 0xff;
  return x;
}

class BitWriter {
  private readonly bytes: number[] = [];
  private cur = 0;
  private n = 0;

  bits(v: number, k: number): void {
    for (let i = k - 1; i >= 0; i--) {
      this.cur = (this.cur << 1) | (Math.floor(v / 2 ** i) & 1);
      if (++this.n === 8) { this.bytes.push(this.cur); this.cur = 0; this.n = 0; }
    }
  }

  /** Shorten's unsigned Rice code: the high part in unary (zeros, then a one), the low k bits as they are. */
  uvar(v: number, k: number): void {
    for (let q = Math.floor(v / 2 ** k); q > 0; q--) this.bits(0, 1);
    this.bits(1, 1);
    if (k) this.bits(v % 2 ** k, k);
  }

  /** Shorten's "ulong" (version >= 1): the Rice parameter itself coded first. */
  ulong(v: number): void {
    let k = 0;
    while (Math.floor(v / 2 ** k) > 3) k++;
    this.uvar(k, 2);
    this.uvar(v, k);
  }

  /** Signed: zigzag (0, -1, 1, -2 ...) with one more low bit. */
  svar(v: number, k: number): void {
    this.uvar(v >= 0 ? 2 * v : -2 * v - 1, k + 1);
  }

  done(): Buffer {
    if (this.n) this.bits(0, 8 - this.n);
    return Buffer.from(this.bytes);
  }
}

const FN_DIFF1 = 1, FN_QUIT = 4, FN_BLOCKSIZE = 5;
const TYPE_S16LH = 5;

/** A Shorten v2 stream ("ajkg", version 2): first-order differences per 256-sample block and channel, Rice coded. */
export function shortenStream(samples: Int16Array, channels: number): Buffer {
  const frames = samples.length / channels;
  const w = new BitWriter();
  const BLOCK = 256;
  // ftype, channels, block size, max LPC order, mean blocks (w_encode's defaults), bytes to skip.
  for (const v of [TYPE_S16LH, channels, BLOCK, 0, 4, 0]) w.ulong(v);
  const prev = new Array<number>(channels).fill(0);
  let block = BLOCK;
  for (let s = 0; s < frames; s += block) {
    if (frames - s < block) {
      block = frames - s;
      w.uvar(FN_BLOCKSIZE, 2);
      w.ulong(block);
    }
    for (let c = 0; c < channels; c++) {
      const res: number[] = [];
      for (let i = s; i < s + block; i++) {
        const v = samples[i * channels + c]!;
        res.push(v - prev[c]!);
        prev[c] = v;
      }
      const mean = res.reduce((a, r) => a + Math.abs(r), 0) / block;
      const energy = mean < 1 ? 0 : Math.floor(Math.log2(mean));
      w.uvar(FN_DIFF1, 2);
      w.uvar(energy, 3);
      for (const r of res) w.svar(r, energy);
    }
  }
  w.uvar(FN_QUIT, 2);
  return Buffer.concat([Buffer.from('ajkg\x02', 'latin1'), w.done()]);
}
