import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { AudioData } from '../../../src/media/audio.js';
import { decodeAudio, resolveMediaTools } from '../../../src/media/ffmpeg.js';
import { loadFftProvider } from '../../../src/media/dsp/fft.js';
import { BuiltinSeparationEngine } from '../../../src/engines/separation/builtin.js';
import { collectingSink, sourceFromAudio, type SeparationRun } from '../../../src/engines/separation/engine.js';
import { corpusSongs, scoreSong } from '../../../bench/separation-honesty.js';

/** Built-in stems are never worse than silence: a missing instrument comes back quiet, and the run says so. */

const tools = resolveMediaTools({ preferSystem: true });
const dir = mkdtempSync(join(tmpdir(), 'soundry-honesty-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A stereo WAV rendered by ffmpeg from a lavfi filter graph, decoded at 44.1 kHz. */
async function render(name: string, graph: string): Promise<AudioData> {
  const path = join(dir, `${name}.wav`);
  execFileSync(tools.ffmpeg, ['-v', 'error', '-y', '-filter_complex', graph, '-ar', '44100', '-ac', '2', path]);
  return decodeAudio(path, { ffmpeg: tools.ffmpeg, sampleRate: 44100, channels: 2 });
}

const energy = (a: AudioData) => a.channels.reduce((s, c) => s + c.reduce((x, v) => x + v * v, 0), 0);

async function separate(audio: AudioData, modelType: number): Promise<{ stems: Record<string, AudioData>; run: SeparationRun }> {
  const sink = collectingSink();
  const ctx = { tmpDir: dir, signal: new AbortController().signal, onProgress: () => undefined };
  const run = await new BuiltinSeparationEngine({ fft: await loadFftProvider() }).separate(sourceFromAudio(audio), modelType, ctx, sink);
  return { stems: sink.result(), run };
}

// Three held sine chords changing every 2 s and a little pink noise: music with no drum hits at all.
const CHORDS = [
  'sine=f=220:d=6[a]', 'sine=f=277:d=6[b]', 'sine=f=330:d=6[c]', 'anoisesrc=c=pink:a=0.01:d=6[n]',
  '[a][b][c][n]amix=inputs=4,volume=1.2',
].join(';');

describe('built-in separation honesty', () => {
  it('returns a quiet drums stem, with a note, for a mix that has no drums', async () => {
    const mix = await render('no-drums', CHORDS);
    const { stems, run } = await separate(mix, 340);
    const ratio = energy(stems.drums!) / energy(mix);
    expect(ratio).toBeLessThan(1e-6);
    expect(run.stems?.drums).toMatch(/could not find this instrument/);
    // The music itself is kept: the remainder is the mixture less only the few percent the raw drums mask took.
    expect(energy(stems.remainder!) / energy(mix)).toBeGreaterThan(0.9);
  });

  it('keeps a drums stem (hedged, not silent) when the mix has drum hits', async () => {
    // The same chords plus a white-noise burst every half second (apulsator gates the noise on and off).
    const graph = `${CHORDS}[m];anoisesrc=c=white:a=0.6:d=6,apulsator=mode=square:hz=2:amount=1:width=0.15[d];[m][d]amix=inputs=2,volume=2`;
    const mix = await render('drums', graph);
    const { stems, run } = await separate(mix, 340);
    // Drums are always turned down 12 dB (CARVED_GAIN): they cannot be told from the edges of other sounds.
    expect(energy(stems.drums!) / energy(mix)).toBeGreaterThan(0.005);
    expect(run.stems?.drums).toMatch(/unsure of this stem: turned down by up to 12\.0 dB/);
  });
});

const songs = corpusSongs();
describe.skipIf(!songs.length)('built-in separation on ../shared/corpus: no stem worse than silence', () => {
  it.each(songs.map((s) => [s.name, s] as const))('%s', async (_name, song) => {
    const scores = await scoreSong(song, {}, 8);
    const low = scores.filter((s) => !(s.builtin >= 0)).map((s) => `${s.modelType} ${s.stem} ${s.builtin.toFixed(2)} dB`);
    expect(low).toEqual([]);
    expect(scores.length).toBeGreaterThan(0);
  }, 120_000);
});

it.skipIf(existsSync(join(process.cwd(), '../shared/corpus/separation')))('corpus test skipped: ../shared/corpus/separation is absent', () => undefined);
