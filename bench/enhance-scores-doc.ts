/**
 * The "Standard scores" section of bench/results/enhance.md, written from a run's scored files (bench/enhance-scores.ts
 * measures; this only formats, so `--doc` can rewrite the section from bench/results/enhance-scores.runs.json).
 */
import {
  aggregate, dnsmosTable, pairsTable, REAL_NOISY_CONDITION, REAL_REVERB_CONDITION, stoiCrossCheck,
  type Aggregate, type RunInfo, type ScoredItem,
} from './enhance-scores-table.js';

export const SECTION = '## Standard scores: PESQ, STOI, DNSMOS and SI-SDR per system and condition';
const ALL = 'all pairs';

/** The rows autoid is taken apart into (bench/enhance-scores.ts CHAINS). */
const EQ_QUESTION = ['unprocessed', 'remove_noise', 'remove_noise+normalize', 'remove_noise+autoeq', 'remove_noise+autoeq+normalize', '{} (autoid)'];

const f = (x: number | undefined, d: number) => (x !== undefined && Number.isFinite(x) ? x.toFixed(d) : '–');
const signed = (x: number, d: number) => (Number.isFinite(x) ? `${x >= 0 ? '+' : ''}${x.toFixed(d)}` : '–');

function eqQuestion(all: readonly Aggregate[]): string {
  const row = (s: string) => all.find((a) => a.system === s);
  const lines = ['| system (all pairs) | engines run | PESQ-WB | STOI | SI-SDR dB | DNSMOS SIG | BAK | OVRL |', '|---|---|---|---|---|---|---|---|'];
  for (const s of EQ_QUESTION) {
    const a = row(s);
    if (a) lines.push(`| ${s} | ${a.engines.join(' + ')} | ${f(a.mean.pesq_wb, 2)} | ${f(a.mean.stoi, 3)} | ${f(a.mean.si_sdr, 2)} | ${f(a.mean.dnsmos_sig, 2)} | ${f(a.mean.dnsmos_bak, 2)} | ${f(a.mean.dnsmos_ovrl, 2)} |`);
  }
  const dn = row('remove_noise'), eq = row('remove_noise+autoeq'), nz = row('remove_noise+normalize'), both = row('remove_noise+autoeq+normalize');
  const d = (a: Aggregate | undefined, b: Aggregate | undefined, m: 'pesq_wb' | 'dnsmos_ovrl' | 'si_sdr' | 'stoi', k: number) => (a && b ? signed(a.mean[m] - b.mean[m], k) : '–');
  const say = (label: string, a: Aggregate | undefined) => `${label}: PESQ ${d(a, dn, 'pesq_wb', 2)}, STOI ${d(a, dn, 'stoi', 3)}, DNSMOS OVRL ${d(a, dn, 'dnsmos_ovrl', 2)}, SI-SDR ${d(a, dn, 'si_sdr', 2)} dB`;
  return [
    ...lines, '',
    `Against remove_noise alone (mean over the pairs): ${say('+autoeq', eq)}; ${say('+normalize', nz)}; ${say('+autoeq+normalize', both)}.`,
    'SI-SDR is blind to a gain (normalize moves it only through its peak limiter) but not to EQ, which is a filter: a changed spectrum, and the phase of its IIR sections, count as distortion against the reference. PESQ aligns level itself and compares loudness-like spectra, so EQ moves it too; DNSMOS needs no reference and is the closest to "what a listener hears" here.',
  ].join('\n');
}

const ANCHOR = `Published figures, with their sources:

| source | test set | PESQ-WB | STOI | SI-SDR dB | other |
|---|---|---|---|---|---|
| Schröter, Rosenkranz, Escalante-B., Maier, "DeepFilterNet: Perceptually Motivated Real-Time Speech Enhancement", Interspeech 2023 (arXiv:2305.08227); PESQ as stated in issue 28 and in the paper's summary at emergentmind.com/papers/2305.08227 | VoiceBank+DEMAND test (824 utterances) | 3.17 | – | – | RTF 0.19 on one thread of a notebook CPU, 40 ms latency (the paper's abstract) |
| Moonbox's ONNX export of the official DeepFilterNet3 weights, model card huggingface.co/moonbox-dev/DeepFilterNet3-ONNX (an independent measurement) | VoiceBank+DEMAND test (824 noisy utterances) | 3.163 (fp16), 3.159 (int8) | 0.9452, 0.9448 | 18.91, 18.89 | – |

The paper's other columns (CSIG, CBAK, COVL, STOI) could not be read from here and are not quoted. A user of the official test script reports lower DeepFilterNet2/3 figures than the paper's (github.com/Rikorose/DeepFilterNet/issues/537, closed as stale); the independent ONNX figure above agrees with 3.17 within 0.01.

**The test sets differ, so no number above compares directly with ours.** VoiceBank+DEMAND's test set is 824 utterances of two speakers, with DEMAND noises mixed at 2.5 to 17.5 dB SNR and no reverberation, originally 48 kHz. Ours is 15 pairs (3 per condition: far too few for more than a direction), LibriSpeech and CMU ARCTIC speech with real recorded noises (dishes, an exercise bike, a thunderstorm, machine noise with drifting tones, a freesound ambience recording) at 0, 5 and 10 dB, and two room impulse responses (SpeechBrain's example RIR and a simulated RT60 0.79 s room), at 16 kHz: lower SNRs than VoiceBank+DEMAND's and reverberation it does not have, so the same model would score lower here. PESQ-WB of the unprocessed input is the fairest bridge: compare each system's gain over it, not its absolute score.`;

/** DeepFilterNet3 as scored here beside its published figures, or why it is absent. */
function anchor(overall: readonly Aggregate[], perCondition: readonly Aggregate[]): string {
  const here = overall.find((a) => a.system === 'deepfilternet3');
  const head = '### Published anchor: DeepFilterNet3';
  if (!here) {
    return `${head}\n\nDeepFilterNet3 is not in this run: no verified model in MODELS_DIR (auto-pull fetches it from GitHub, which these machines cannot reach). With its archive in MODELS_DIR this bench scores it as the \`deepfilternet3\` row, and the chains that choose it name it under "engines run". ${ANCHOR}`;
  }
  const un = overall.find((a) => a.system === 'unprocessed');
  const rows = [
    '| DeepFilterNet3 | test set | PESQ-WB | ΔPESQ over its input | STOI | SI-SDR dB |',
    '|---|---|---|---|---|---|',
    `| Soundry's deepfilternet3 stage (authors' ONNX export), this run | these ${here.files} pairs (all conditions) | ${f(here.mean.pesq_wb, 2)} | ${signed(here.mean.pesq_wb - (un?.mean.pesq_wb ?? NaN), 2)} | ${f(here.mean.stoi, 3)} | ${f(here.mean.si_sdr, 2)} |`,
  ];
  for (const a of perCondition.filter((x) => x.system === 'deepfilternet3')) {
    const u = perCondition.find((x) => x.system === 'unprocessed' && x.condition === a.condition);
    rows.push(`| same | ${a.condition} (${a.files} pairs) | ${f(a.mean.pesq_wb, 2)} | ${signed(a.mean.pesq_wb - (u?.mean.pesq_wb ?? NaN), 2)} | ${f(a.mean.stoi, 3)} | ${f(a.mean.si_sdr, 2)} |`);
  }
  return `${head}\n\nDeepFilterNet3 is in this run (row \`deepfilternet3\`: the authors' ONNX export through Soundry's stage, 48 kHz inside, resampled from and back to 16 kHz here). Beside it:\n\n${rows.join('\n')}\n\n${ANCHOR}`;
}

export function renderScores(items: readonly ScoredItem[], info: RunInfo): string {
  const isPair = (c: string) => c !== REAL_NOISY_CONDITION && c !== REAL_REVERB_CONDITION;
  const perCondition = aggregate(items, { conditions: isPair });
  const overall = aggregate(items, { allLabel: ALL, conditions: isPair }).filter((a) => a.condition === ALL);
  const pairs = new Set(items.filter((i) => isPair(i.condition)).map((i) => i.input)).size;
  const x = stoiCrossCheck(items);
  const noisy = items.filter((i) => i.condition === REAL_NOISY_CONDITION);
  const reverb = items.filter((i) => i.condition === REAL_REVERB_CONDITION);
  const label = (input: string) => input.split('/').pop()!.replace(/\.(wav|flac|sph)$/, '').replace('speechbrain_single-mic_', 'sb-').replace('nara_wpe_AMI_WSJ20-', '');
  const notes = [...new Set(items.map((i) => i.note).filter((n): n is string => !!n))];
  const cut = items.filter((i) => i.note?.includes('audio was cut'));
  const load = (l: number[]) => l.map((v) => v.toFixed(2)).join(' / ');
  return [
    SECTION,
    '',
    `**Rerun:** \`npm run bench -- enhance --scores\` (this run: ${(info.wallSeconds / 60).toFixed(1)} min of wall time on the shared 2-core machine). \`--quick\` scores one pair per condition and one real recording and prints without writing; \`--systems a,b\` runs only those; \`--doc\` rewrites this section from bench/results/enhance-scores.runs.json (every file's scores). Needs ../shared/corpus and harness/.venv (\`bash harness/setup.sh\`); not part of \`npm test\`.`,
    '',
    `Measured ${info.started} to ${info.finished} on ${info.machine}; load average (1/5/15 min) ${load(info.loadBefore)} at the start, ${load(info.loadAfter)} at the end (other sessions were running: the RTF column is indicative only). Outputs made from the working tree at \`${info.head}\` when the run started${info.dirty.length ? `, with ${info.dirty.length} paths under src/, bench/ and harness/ changed or new (listed at the end of this section): what was measured is the tree as it was, including other sessions' unfinished work` : ''}. MODELS_DIR=${info.modelsDir}.${info.options ? ` Options: ${info.options}.` : ''}`,
    '',
    ...(info.reruns ?? []).map((r) => `Re-measured later with \`--systems ${r.systems.join(',')} --merge\`: ${r.systems.join(', ')} from ${r.started} to ${r.finished}, load ${load(r.loadBefore)} at the start, ${load(r.loadAfter)} at the end, tree at \`${r.head}\`${r.dirty.length ? ` with ${r.dirty.length} paths changed or new` : ''}; their rows are from that run.\n`),
    '**How.** Every output is made by Soundry\'s code: each denoiser a user can force with ENHANCE_DENOISER (neural ones only when installed; the stage alone, through processWhole), the WPE stage alone (production settings), and the chains a request gets (the engine thread\'s runEnhance, with the flags shown; `{}` is autoid; the issue\'s `{"denoise":true}` is the API flag remove_noise), written as float WAV at the input\'s rate and channels. The scores come from the standard implementations through the reference harness (harness/enhance_scores.py in harness/.venv): PESQ wideband (ITU-T P.862.2, package pesq 0.0.4), STOI (pystoi 0.4.1), DNSMOS P.835 SIG/BAK/OVRL (speechmos 0.0.1.1, Microsoft\'s sig_bak_ovr.onnx with the DNS Challenge\'s calibration polynomials), SI-SDR (zero-mean, Le Roux et al. 2019, numpy). All scores are taken at 16 kHz mono: the pairs are 16 kHz; other files are averaged to mono and resampled with scipy\'s resample_poly (JFK is 44.1 kHz stereo). Intrusive scores (PESQ, STOI, SI-SDR) compare with the dry clean reference over the common length; where a chain cut audio (long_silences) they are left out and the row says over how many files its mean is (n/N). "clean reference" is the reference itself, the DNSMOS ceiling of this speech.',
    '',
    `### All ${pairs} constructed pairs (mean)`,
    '',
    pairsTable(overall),
    '',
    '### Per condition (3 pairs each)',
    '',
    pairsTable(perCondition),
    '',
    '### Does autoid\'s EQ or loudness normalisation lower what a listener hears?',
    '',
    eqQuestion(overall),
    '',
    '### Real recordings without a reference (DNSMOS only)',
    '',
    `Noisy (speech/noisy_no_reference: GTCRN's demo mix, the SpeechBrain examples, JFK 1961; their channels as the engines get them, DNSMOS on the mono mix). The GTCRN authors' own output of their demo mix is scored beside Soundry's GTCRN on it.`,
    '',
    dnsmosTable(noisy, label),
    '',
    'A real reverberant room (speech/reverberant_real, the first microphone of the nara_wpe AMI/WSJ demo):',
    '',
    dnsmosTable(reverb, label),
    '',
    '### Soundry\'s STOI against pystoi',
    '',
    x.n
      ? `Soundry's STOI (src/engines/enhance/metrics.ts stoi10k, after Soundry's resampler to 10 kHz, as the old quality table computed it) against pystoi (which resamples to 10 kHz itself) on the same ${x.n} output/reference pairs: mean |difference| ${x.meanAbs.toExponential(1)}, largest ${x.maxAbs.toExponential(1)}${x.worst ? ` (${x.worst.system} on ${label(x.worst.input)}: ${f(x.worst.tsStoi, 6)} against ${f(x.worst.scores.stoi ?? undefined, 6)})` : ''}, mean signed difference ${x.meanSigned.toExponential(1)}. The two resamplers to 10 kHz differ (Soundry's polyphase kernel, pystoi's own resample_oct), so this bounds both the STOI port and the resampling.`
      : 'No pair had both figures.',
    '',
    anchor(overall, perCondition),
    '',
    ...(cut.length ? [`Outputs whose intrusive scores were left out (audio cut): ${cut.map((c) => `${c.system} on ${label(c.input)}`).join(', ')}.`, ''] : []),
    ...(notes.length ? ['Scorer notes:', '', ...notes.slice(0, 20).map((n) => `- ${n}`), ''] : []),
    ...(info.dirty.length ? [`Paths changed or new against \`${info.head.split(' ')[0]}\` when measured: ${info.dirty.join(', ')}.`, ''] : []),
  ].join('\n');
}
