import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { decodeAudio, resolveMediaTools } from '../src/media/ffmpeg.js';
import { DisfluencyStage, type DisfluencyKind } from '../src/engines/enhance/fillers.js';
import { pitch } from '../src/engines/enhance/speech-features.js';
import { processWhole } from '../src/engines/enhance/stage.js';
import { concat, filler, silence } from '../test/helpers/speech-synth.js';
import { machine, root, writeResult } from './lib.js';

/**
 * `fillers` / `hesitations` / `stutters` detection: precision and recall.
 * 1) speech/conversational: the real recordings. Only the telephone call has a word transcript (STM),
 *    and it marks no filler words; the AMI and LibriParty clips have speaker turns or speech segments
 *    only. So real-data recall cannot be measured here, and every detection on the telephone call is
 *    counted against the transcript (which may simply omit fillers: an upper bound on false alarms).
 * 2) constructed: real read speech (speech/clean) with known events inserted at known times: synthetic
 *    "uh"/"um" in pauses, real word onsets repeated before their word (stutters), and a real vowel
 *    lengthened by repeating one pitch period (hesitations). Precision/recall with a tolerance window.
 * The thresholds in fillers.ts were tuned on exactly these files (a small corpus): the figures are
 * optimistic for unseen material.
 */
const corpus = join(root, '../shared/corpus/speech/');
const tools = resolveMediaTools({ preferSystem: true });
const TOL = 0.2; // seconds: a detection matches an event when they overlap after widening the event by TOL
const FILLER_WORDS = /^(uh+|um+|uhm|er+|erm|eh|ah+|hmm+|mm+|%hesitation|<hes>|\[hes\])$/i;

interface Event { kind: DisfluencyKind; start: number; end: number }

async function detect(x: Float32Array, rate: number): Promise<{ stage: DisfluencyStage; outSeconds: number }> {
  const stage = await DisfluencyStage.create(rate, 1, { fillers: true, hesitations: true, stutters: true });
  const y = await processWhole([stage], { sampleRate: rate, channels: [x] }, rate);
  return { stage, outSeconds: y.channels[0]!.length / rate };
}

function matches(d: Event, t: Event): boolean {
  return Math.min(d.end, t.end + TOL) > Math.max(d.start, t.start - TOL);
}

/** Inter-word dips (>= 60 ms under -30 dB relative to the loudest 20 ms frame), at least 1 s apart. */
function pauses(x: Float32Array, rate: number): Array<[number, number]> {
  const fr = Math.round(0.02 * rate);
  const db: number[] = [];
  for (let i = 0; i + fr <= x.length; i += fr) {
    let e = 0;
    for (let k = 0; k < fr; k++) e += x[i + k]! ** 2;
    db.push(10 * Math.log10(e / fr + 1e-12));
  }
  const max = Math.max(...db);
  const out: Array<[number, number]> = [];
  let run = -1;
  for (let k = 0; k <= db.length; k++) {
    const quiet = k < db.length && db[k]! < max - 30;
    if (quiet && run < 0) run = k;
    if (!quiet && run >= 0) {
      if (k - run >= 3 && run > 0 && k < db.length && (!out.length || run * fr - out[out.length - 1]![1] > rate)) out.push([run * fr, k * fr]);
      run = -1;
    }
  }
  return out;
}

/** Real speech with events inserted; returns the signal and the true event times. */
function construct(x: Float32Array, rate: number, seed: number): { y: Float32Array; truth: Event[] } {
  const parts: Float32Array[] = [];
  const truth: Event[] = [];
  let at = 0, outLen = 0;
  const copy = (to: number) => { parts.push(x.subarray(at, to)); outLen += to - at; at = to; };
  const add = (a: Float32Array, kind: DisfluencyKind | null) => {
    if (kind) truth.push({ kind, start: outLen / rate, end: (outLen + a.length) / rate });
    parts.push(a);
    outLen += a.length;
  };
  const f0 = speakerF0(x, rate);
  const ps = pauses(x, rate);
  ps.forEach(([s, e], i) => {
    const mid = Math.round((s + e) / 2);
    copy(mid);
    const k = (i + seed) % 3;
    if (k === 0) {
      add(concat([silence(0.15, rate), filler(0.35 + 0.1 * (i % 3), rate, f0), silence(0.15, rate)]), 'filler');
    } else if (k === 1) {
      // Stutter: the first 100 ms of the next word, twice, each followed by a 70 ms gap.
      const onset = x.slice(e, Math.min(x.length, e + Math.round(0.1 * rate)));
      copy(e);
      add(concat([onset, silence(0.07, rate), onset, silence(0.07, rate)]), 'stutter');
    } else {
      // Hesitation: 0.4 s more of a real vowel: one pitch period of the next voiced stretch, looped.
      const start = e + Math.round(0.08 * rate);
      const w = x.subarray(start, start + 512);
      const p = w.length === 512 ? pitch(w, rate) : { f0: 0, clarity: 0 };
      if (p.f0 > 0 && p.clarity > 0.8) {
        copy(start);
        const period = Math.round(rate / p.f0);
        const loop = new Float32Array(Math.round(0.4 * rate));
        for (let n = 0; n < loop.length; n++) loop[n] = x[start + (n % period)]!;
        add(loop, 'hesitation');
      }
    }
  });
  copy(x.length);
  return { y: concat(parts), truth };
}

function speakerF0(x: Float32Array, rate: number): number {
  const f: number[] = [];
  for (let i = 0; i + 512 <= x.length; i += 1600) {
    const p = pitch(x.subarray(i, i + 512), rate);
    if (p.f0 > 0 && p.clarity > 0.8) f.push(p.f0);
  }
  f.sort((a, b) => a - b);
  return f.length ? f[f.length >> 1]! * 0.95 : 120;
}

function stmFillers(path: string): { words: number; fillers: Event[] } | null {
  if (!existsSync(path)) return null;
  let words = 0;
  const fillers: Event[] = [];
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    const f = line.trim().split(/\s+/);
    if (f.length < 6) continue;
    const [s, e] = [Number(f[3]), Number(f[4])];
    for (const w of f.slice(5)) {
      words++;
      if (FILLER_WORDS.test(w.replace(/[.,?!]/g, ''))) fillers.push({ kind: 'filler', start: s, end: e });
    }
  }
  return { words, fillers };
}

const fmt = (v: number) => (Number.isFinite(v) ? v.toFixed(2) : 'n/a');

export async function benchFillers(): Promise<string> {
  const lines: string[] = [];
  lines.push('## fillers, hesitations, stutters', '');
  lines.push(`${machine()}; ${new Date().toISOString()}. Reproduce: \`npm run bench -- enhance-fillers\`. Detector: \`disfluency-dsp\` (src/engines/enhance/fillers.ts), all three flags on, 16 kHz mono.`, '');
  lines.push(`A detection is a true positive when it overlaps a true event widened by ±${TOL} s (any kind; per-kind rows count kind-matched pairs). Thresholds were tuned on these same files (small corpus): expect worse on unseen recordings.`, '');
  lines.push('### Real conversational recordings (speech/conversational)', '');
  lines.push('The telephone STM is the only word transcript and it contains no filler words (it reads like a cleaned transcript, so fillers may be present but unmarked); the AMI RTTM and LibriParty JSON have no words. Recall is therefore not measurable on real data here, and detections on the telephone call are all counted as false against its transcript.', '');
  lines.push('| file | seconds | labelled fillers | detected (f/h/s) | precision | recall | removed s |', '|---|---|---|---|---|---|---|');
  const dir = join(corpus, 'conversational/');
  for (const f of ['pyannote_sample_telephone', 'pyannote_ami_dev00', 'pyannote_ami_trn01', 'pyannote_ami_tst00', 'speechbrain_vad_train', 'speechbrain_vad_valid']) {
    if (!existsSync(dir + f + '.wav')) continue;
    const a = await decodeAudio(dir + f + '.wav', { ffmpeg: tools.ffmpeg, sampleRate: 16000 });
    const x = a.channels[0]!;
    const { stage } = await detect(x, 16000);
    const labels = stmFillers(dir + f + '.stm');
    const r = stage.report;
    const det = r.events.length;
    const tp = labels ? r.events.filter((d) => labels.fillers.some((t) => matches(d, t))).length : NaN;
    const hit = labels ? labels.fillers.filter((t) => r.events.some((d) => matches(d, t))).length : NaN;
    const precision = labels && det ? tp / det : NaN;
    const recall = labels && labels.fillers.length ? hit / labels.fillers.length : NaN;
    lines.push(`| ${f} | ${(x.length / 16000).toFixed(1)} | ${labels ? labels.fillers.length : 'no word labels'} | ${det} (${r.fillers}/${r.hesitations}/${r.stutters}) at ${r.events.map((e) => `${e.kind[0]}@${e.start.toFixed(2)}`).join(' ') || '-'} | ${fmt(precision)} | ${fmt(recall)} | ${r.removedSeconds.toFixed(2)} |`);
  }
  lines.push('', '### Constructed: real speech (speech/clean read speech, then the conversational recordings) with inserted events', '');
  lines.push('Fillers: synthetic "uh" (schwa formants, speaker-matched flat F0, 0.35-0.55 s) in a pause; stutters: the first 100 ms of the real next word repeated twice with 70 ms gaps; hesitations: 0.4 s added to a real vowel by looping one pitch period. Events rotate over the pauses of each file.', '');
  lines.push('| file | true (f/h/s) | detected (f/h/s) | TP | precision | recall | filler P/R | hesitation P/R | stutter P/R |', '|---|---|---|---|---|---|---|---|---|');
  const sums = { t: 0, d: 0, tp: 0, hit: 0 };
  const per: Record<DisfluencyKind, { t: number; d: number; tp: number; hit: number }> = {
    filler: { t: 0, d: 0, tp: 0, hit: 0 }, hesitation: { t: 0, d: 0, tp: 0, hit: 0 }, stutter: { t: 0, d: 0, tp: 0, hit: 0 },
  };
  const cleanDir = join(corpus, 'clean/');
  const files = existsSync(cleanDir) ? readdirSync(cleanDir).filter((n) => /\.(wav|ogg|flac)$/.test(n)).sort().map((n) => cleanDir + n) : [];
  // The real conversational recordings too: spontaneous speech, room noise, telephone band.
  files.push(...['pyannote_sample_telephone', 'pyannote_ami_dev00', 'pyannote_ami_tst00', 'speechbrain_vad_valid'].map((n) => `${dir}${n}.wav`).filter((p) => existsSync(p)));
  let seed = 0;
  for (const path of files) {
    const name = path.split('/').pop()!;
    const a = await decodeAudio(path, { ffmpeg: tools.ffmpeg, sampleRate: 16000 });
    const { y, truth } = construct(a.channels[0]!, 16000, seed++);
    const { stage } = await detect(y, 16000);
    const ev = stage.report.events;
    const tp = ev.filter((d) => truth.some((t) => matches(d, t))).length;
    const hit = truth.filter((t) => ev.some((d) => matches(d, t))).length;
    sums.t += truth.length; sums.d += ev.length; sums.tp += tp; sums.hit += hit;
    const cells: string[] = [];
    const count = (list: Event[], k: DisfluencyKind) => list.filter((e) => e.kind === k).length;
    for (const k of ['filler', 'hesitation', 'stutter'] as const) {
      const t = truth.filter((e) => e.kind === k), d = ev.filter((e) => e.kind === k);
      const ktp = d.filter((x) => t.some((u) => matches(x, u))).length;
      const khit = t.filter((u) => d.some((x) => matches(x, u))).length;
      per[k].t += t.length; per[k].d += d.length; per[k].tp += ktp; per[k].hit += khit;
      cells.push(`${fmt(d.length ? ktp / d.length : NaN)}/${fmt(t.length ? khit / t.length : NaN)}`);
    }
    const kinds = (l: Event[]) => `${count(l, 'filler')}/${count(l, 'hesitation')}/${count(l, 'stutter')}`;
    lines.push(`| ${name} | ${truth.length} (${kinds(truth)}) | ${ev.length} (${kinds(ev)}) | ${tp} | ${fmt(ev.length ? tp / ev.length : NaN)} | ${fmt(truth.length ? hit / truth.length : NaN)} | ${cells.join(' | ')} |`);
  }
  const pr = (s: { t: number; d: number; tp: number; hit: number }) => `${fmt(s.d ? s.tp / s.d : NaN)}/${fmt(s.t ? s.hit / s.t : NaN)}`;
  lines.push(`| **all** | ${sums.t} | ${sums.d} | ${sums.tp} | ${fmt(sums.d ? sums.tp / sums.d : NaN)} | ${fmt(sums.t ? sums.hit / sums.t : NaN)} | ${pr(per.filler)} | ${pr(per.hesitation)} | ${pr(per.stutter)} |`, '');
  const section = lines.join('\n');
  console.log(section);
  return writeSection(section);
}

/** Replaces (or appends) this section in bench/results/enhance.md, leaving the other sections as they are. */
async function writeSection(section: string): Promise<string> {
  const path = join(root, 'bench/results/enhance.md');
  const old = existsSync(path) ? await readFile(path, 'utf8') : '# Enhancement DSP benchmark\n';
  const head = '## fillers, hesitations, stutters';
  const i = old.indexOf(head);
  let next = i < 0 ? -1 : old.indexOf('\n## ', i + head.length);
  if (next >= 0) next += 1;
  const body = i < 0 ? `${old.trimEnd()}\n\n${section}\n` : `${old.slice(0, i)}${section}\n${next >= 0 ? '\n' + old.slice(next) : ''}`;
  return writeResult('enhance', body);
}
