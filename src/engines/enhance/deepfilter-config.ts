/**
 * DeepFilterNet's config.ini (the one inside DeepFilterNet3_onnx.tar.gz) read into the numbers the DSP core needs.
 * The keys and their fallbacks are those the authors' Rust runtime reads (libDF tract.rs): sr, fft_size, hop_size,
 * nb_erb, nb_df, min_nb_erb_freqs and norm_tau (or norm_alpha) from [df]; df_order and df_lookahead from [df], else
 * [deepfilternet]; conv_lookahead from [deepfilternet]; [train] model must be deepfilternet3 (DeepFilterNet2 exports
 * have another lookahead rule, which that runtime refuses too). Everything else (training, losses) is ignored.
 * Untrusted input: the text is bounded and every number is range-checked before any buffer is sized from it.
 */
import { z } from 'zod';
import type { DfConfig } from './deepfilter-core.js';

export interface DfArchiveConfig extends DfConfig {
  /** Set only where the file gives norm_alpha itself (it then wins over norm_tau, as in the reference). */
  normAlpha?: number;
  /** The network's look-ahead in frames: max(conv_lookahead, df_lookahead), as the reference derives it. */
  lookahead: number;
}

/** A config.ini is about 2 KB; this refuses anything that is plainly not one before parsing it. */
export const MAX_CONFIG_BYTES = 64 * 1024;

/** `[section]` -> key -> value, as Python's configparser and Rust's ini crate read the file (comments ; and #). */
export function parseIni(text: string): Map<string, Map<string, string>> {
  const out = new Map<string, Map<string, string>>();
  let section: Map<string, string> | null = null;
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (line === '' || line.startsWith(';') || line.startsWith('#')) continue;
    const head = /^\[([^\]]+)\]$/.exec(line);
    if (head) {
      const name = head[1]!.trim();
      section = out.get(name) ?? new Map<string, string>();
      out.set(name, section);
      continue;
    }
    const eq = line.search(/[=:]/);
    if (eq <= 0 || !section) continue;
    section.set(line.slice(0, eq).trim().toLowerCase(), line.slice(eq + 1).trim());
  }
  return out;
}

const int = (min: number, max: number) => z.coerce.number().int().min(min).max(max);

const DfSection = z.object({
  sr: int(8000, 192000),
  fft_size: int(16, 8192),
  hop_size: int(1, 8192),
  nb_erb: int(1, 512),
  nb_df: int(1, 4097),
  min_nb_erb_freqs: int(1, 64),
  norm_tau: z.coerce.number().positive().max(1000).optional(),
  norm_alpha: z.coerce.number().gt(0).lt(1).optional(),
  lsnr_min: z.coerce.number().min(-200).max(200).default(-15),
  lsnr_max: z.coerce.number().min(-200).max(200).default(35),
});

const NetSection = z.object({
  // DfNet's post-filter (mask_pf, pf_beta): off in the published DeepFilterNet3 config.
  mask_pf: z.enum(['true', 'false', 'True', 'False', '1', '0']).default('false').transform((v) => v.toLowerCase() === 'true' || v === '1'),
  pf_beta: z.coerce.number().min(0).max(10).default(0.02),
});

const lookaheadField = int(0, 64);
const orderField = int(1, 64);

/** Parses and checks a DeepFilterNet3 config.ini; the error says which key is missing or out of range. */
export function parseDfConfig(text: string): DfArchiveConfig {
  if (text.length > MAX_CONFIG_BYTES) throw new Error(`config.ini is ${text.length} bytes (more than ${MAX_CONFIG_BYTES}): not a DeepFilterNet config`);
  const ini = parseIni(text);
  const model = ini.get('train')?.get('model');
  if (model !== 'deepfilternet3') throw new Error(`config.ini: [train] model is ${model === undefined ? 'missing' : `"${model}"`}; only deepfilternet3 exports are supported`);
  const df = ini.get('df') ?? new Map<string, string>();
  const net = ini.get('deepfilternet') ?? new Map<string, string>();
  const parsed = DfSection.safeParse(Object.fromEntries(df));
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new Error(`config.ini [df] ${issue.path.join('.')}: ${issue.message}`);
  }
  const d = parsed.data;
  const fromEither = (key: string, field: z.ZodType<number>): number => {
    const raw = df.get(key) ?? net.get(key);
    const r = field.safeParse(raw);
    if (!r.success) throw new Error(`config.ini ${key} (in [df] or [deepfilternet]): ${raw === undefined ? 'missing' : r.error.issues[0]!.message}`);
    return r.data;
  };
  const dfOrder = fromEither('df_order', orderField);
  const dfLookahead = fromEither('df_lookahead', lookaheadField);
  const conv = lookaheadField.safeParse(net.get('conv_lookahead'));
  if (!conv.success) throw new Error(`config.ini [deepfilternet] conv_lookahead: ${net.get('conv_lookahead') === undefined ? 'missing' : conv.error.issues[0]!.message}`);
  const pf = NetSection.safeParse(Object.fromEntries(net));
  if (!pf.success) throw new Error(`config.ini [deepfilternet] ${pf.error.issues[0]!.path.join('.')}: ${pf.error.issues[0]!.message}`);
  const freqs = d.fft_size / 2 + 1;
  if (d.fft_size % 2 !== 0) throw new Error(`config.ini [df] fft_size ${d.fft_size} is odd`);
  if (d.hop_size > d.fft_size) throw new Error(`config.ini [df] hop_size ${d.hop_size} exceeds fft_size ${d.fft_size}`);
  // The overlap-add the core runs needs whole hops per frame and at least half overlap (as libDF's does).
  if (d.fft_size % d.hop_size !== 0 || 2 * d.hop_size > d.fft_size) throw new Error(`config.ini [df] hop_size ${d.hop_size} must divide fft_size ${d.fft_size} at least twice`);
  if (dfLookahead >= dfOrder) throw new Error(`config.ini df_lookahead ${dfLookahead} must be under df_order ${dfOrder}`);
  if (d.nb_df > freqs) throw new Error(`config.ini [df] nb_df ${d.nb_df} exceeds the ${freqs} frequency bins`);
  if (d.nb_erb * d.min_nb_erb_freqs > freqs) throw new Error(`config.ini [df] nb_erb ${d.nb_erb} bands of at least ${d.min_nb_erb_freqs} bins do not fit ${freqs} bins`);
  if (d.norm_tau === undefined && d.norm_alpha === undefined) throw new Error('config.ini [df] norm_tau: missing (and no norm_alpha)');
  if (d.lsnr_min >= d.lsnr_max) throw new Error(`config.ini [df] lsnr_min ${d.lsnr_min} is not below lsnr_max ${d.lsnr_max}`);
  // norm_tau is still reported where only norm_alpha is given: the tau that alpha = exp(-hop / (sr * tau)) implies.
  const normTau = d.norm_tau ?? -d.hop_size / (d.sr * Math.log(d.norm_alpha!));
  return {
    sampleRate: d.sr, fftSize: d.fft_size, hopSize: d.hop_size, nbErb: d.nb_erb, nbDf: d.nb_df,
    dfOrder, dfLookahead, convLookahead: conv.data, normTau, ...(d.norm_alpha !== undefined ? { normAlpha: d.norm_alpha } : {}),
    minNbErbFreqs: d.min_nb_erb_freqs, lsnrMin: d.lsnr_min, lsnrMax: d.lsnr_max, postFilter: pf.data.mask_pf, postFilterBeta: pf.data.pf_beta,
    lookahead: Math.max(conv.data, dfLookahead),
  };
}
