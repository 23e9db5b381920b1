import { existsSync, readdirSync } from 'node:fs';
import type { AudioData } from '../src/media/audio.js';
import { decodeAudio, resolveMediaTools } from '../src/media/ffmpeg.js';
import { loadFftProvider } from '../src/media/dsp/fft.js';
import { BuiltinSeparationEngine } from '../src/engines/separation/builtin.js';
import { collectingSink, sourceFromAudio, type SeparationRun } from '../src/engines/separation/engine.js';
import { planOutputs, unfoundStems } from '../src/kinds/separation/worker.js';
import { plainSdr } from './separation-honesty.js';
import { machine, root, writeResult } from './lib.js';

/**
 * Material nobody measured: the corpus' rendered songs remixed from their own stems (an instrument 12 dB up, the
 * other instruments 20 dB down, some left out), so that a rule can be checked on mixes it was not chosen on. Each
 * remix runs 320 and 501 on the built-in engine as it is, and with 320's `other` at full level
 * (`otherFollowsDoubt: false`, the engine before that rule). Plain SDR (silence 0 dB). A task whose stems include one
 * the engine found nowhere fails uncharged (docs/api.md): its stems are scored but marked, since nobody is billed.
 */

const CORPUS = `${root}../shared/corpus/separation/midi_rendered_fluidr3`;
const RATE = 44100;
const STEMS = ['drums', 'bass', 'piano', 'guitar', 'other'] as const;
const REMIXES: Record<string, Partial<Record<(typeof STEMS)[number], number>>> = {
  'as rendered': { drums: 1, bass: 1, piano: 1, guitar: 1, other: 1 },
  'other -20 dB': { drums: 1, bass: 1, piano: 1, guitar: 1, other: 0.1 },
  'piano +12 dB, other -20 dB': { drums: 1, bass: 1, piano: 4, guitar: 1, other: 0.1 },
  'guitar +12 dB, other -20 dB': { drums: 1, bass: 1, piano: 1, guitar: 4, other: 0.1 },
  'piano and guitar +12 dB': { drums: 1, bass: 1, piano: 4, guitar: 4, other: 1 },
};

interface Row { song: string; remix: string; modelType: number; stem: string; sdr: number; fullOther?: number; mixture: number; billed: boolean; note?: string }

const f2 = (x: number) => (Number.isFinite(x) ? x.toFixed(2) : 'n/a');

export async function benchSeparationRemixes(seconds = Number(process.env.REMIX_SECONDS ?? 20)): Promise<string> {
  const t0 = Date.now();
  const tools = resolveMediaTools({ preferSystem: true });
  const fft = await loadFftProvider();
  const rows: Row[] = [];
  const songs = existsSync(CORPUS) ? readdirSync(CORPUS).sort().filter((n) => existsSync(`${CORPUS}/${n}/other.flac`)) : [];
  for (const song of songs) {
    const st: Record<string, AudioData> = {};
    for (const s of STEMS) st[s] = await decodeAudio(`${CORPUS}/${song}/${s}.flac`, { ffmpeg: tools.ffmpeg, sampleRate: RATE, channels: 2 });
    const n = Math.min(seconds * RATE, ...Object.values(st).map((a) => a.channels[0]!.length));
    for (const [remix, w] of Object.entries(REMIXES)) {
      const part = (s: string) => st[s]!.channels.map((c) => c.subarray(0, n).map((v) => v * (w[s as keyof typeof w] ?? 0)));
      const parts = Object.fromEntries(STEMS.map((s) => [s, part(s)]));
      const mix = [0, 1].map((ch) => Float32Array.from({ length: n }, (_, i) => STEMS.reduce((a, s) => a + parts[s]![ch]![i]!, 0)));
      const refs: Record<number, Record<string, Float32Array[]>> = {
        320: Object.fromEntries(STEMS.map((s) => [s, parts[s]!])),
        // 501 has no piano or guitar stem: its `other` is everything but drums and bass.
        501: { drums: parts.drums!, bass: parts.bass!, other: [0, 1].map((ch) => Float32Array.from({ length: n }, (_, i) => mix[ch]![i]! - parts.drums![ch]![i]! - parts.bass![ch]![i]!)) },
      };
      for (const modelType of [320, 501]) {
        const separate = async (otherFollowsDoubt: boolean) => {
          const sink = collectingSink();
          const ctx = { tmpDir: '/tmp', signal: new AbortController().signal, onProgress: () => undefined };
          const run = (await new BuiltinSeparationEngine({ fft, otherFollowsDoubt }).separate(sourceFromAudio({ sampleRate: RATE, channels: mix }), modelType, ctx, sink)) as SeparationRun;
          return { run, est: sink.result() };
        };
        const now = await separate(true);
        const before = modelType === 320 ? await separate(false) : undefined;
        const billed = unfoundStems(now.run.missing, modelType, planOutputs(modelType, 'stems')).length === 0;
        for (const [stem, ref] of Object.entries(refs[modelType]!)) {
          if (ref.every((c) => c.every((v) => v === 0))) continue;
          rows.push({
            song, remix, modelType, stem, billed,
            sdr: plainSdr(ref, now.est[stem]!.channels),
            ...(before && stem === 'other' ? { fullOther: plainSdr(ref, before.est.other!.channels) } : {}),
            mixture: plainSdr(ref, mix),
            ...(now.run.stems?.[stem] ? { note: now.run.stems[stem] } : {}),
          });
        }
      }
      console.error(`separation-remixes: ${song} ${remix} done`);
    }
  }
  const billed = rows.filter((r) => r.billed);
  const others = rows.filter((r) => r.fullOther !== undefined);
  const md = [
    '# Built-in separation on remixes of the rendered corpus songs',
    '',
    `Machine: ${machine()}. Run: \`npm run bench -- separation-remixes\` (${((Date.now() - t0) / 1000).toFixed(0)} s; first ${seconds} s of each song, REMIX_SECONDS).`,
    '',
    "Each FluidR3 render's own stems remixed (gains per stem), so the mixes are ones no rule was chosen on. Plain SDR over",
    'the clip (silence 0 dB). "task": `billed` when the task succeeds; `fails, uncharged` when a stem it returns was found',
    "nowhere. \"full-level other\": 320's `other` without the rule that turns it down where the piano or guitar is doubted.",
    '',
    '| song | remix | model | stem | task | built-in | full-level other | mixture | note |',
    '|---|---|---|---|---|---|---|---|---|',
    ...rows.map((r) => `| ${r.song} | ${r.remix} | ${r.modelType} | ${r.stem} | ${r.billed ? 'billed' : 'fails, uncharged'} | ${f2(r.sdr)} | ${r.fullOther === undefined ? '' : f2(r.fullOther)} | ${f2(r.mixture)} | ${r.note ?? ''} |`),
    '',
    `Stems scored: ${rows.length}; below 0 dB: ${rows.filter((r) => r.sdr < 0).length} (worst ${f2(Math.min(...rows.map((r) => r.sdr)))} dB).`,
    `Billed stems: ${billed.length}; below 0 dB: ${billed.filter((r) => r.sdr < 0).length} (worst ${f2(Math.min(...billed.map((r) => r.sdr)))} dB).`,
    `320 \`other\`: with the rule ${others.filter((r) => r.sdr < 0).length} of ${others.length} below 0 dB (worst ${f2(Math.min(...others.map((r) => r.sdr)))}); at full level ${others.filter((r) => r.fullOther! < 0).length} (worst ${f2(Math.min(...others.map((r) => r.fullOther!)))}).`,
    others.some((r) => r.billed)
      ? `320 \`other\` in billed tasks: with the rule worst ${f2(Math.min(...others.filter((r) => r.billed).map((r) => r.sdr)))} dB, at full level worst ${f2(Math.min(...others.filter((r) => r.billed).map((r) => r.fullOther!)))} dB.`
      : '320 `other` in billed tasks: none (every 320 task here fails: its piano or guitar was found nowhere).',
    '',
  ].join('\n');
  return writeResult('separation-remixes', md);
}
