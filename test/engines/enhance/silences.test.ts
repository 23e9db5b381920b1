import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { decodeAudio, resolveMediaTools } from '../../../src/media/ffmpeg.js';
import { LongSilenceStage } from '../../../src/engines/enhance/silences.js';
import { processWhole } from '../../../src/engines/enhance/stage.js';
import { SileroVad, sileroModelPath, VadTracker, WebRtcVad, type FrameVad } from '../../../src/engines/enhance/vad.js';

const base = new URL('../../../../shared/corpus/speech/constructed_pairs_16k/', import.meta.url).pathname;
const modelsDir = new URL('../../../../shared/corpus/models', import.meta.url).pathname;
const tools = resolveMediaTools({ preferSystem: true });

interface Pair { file: string; speech_segments_s?: Array<[number, number, string]> }

function overlap(cuts: Array<[number, number]>, segs: Array<[number, number, string]>): number {
  let o = 0;
  for (const [a, b] of cuts) for (const [s, e] of segs) o += Math.max(0, Math.min(b, e) - Math.max(a, s));
  return o;
}

describe.skipIf(!existsSync(base + 'pairs.json'))('long_silences', () => {
  // describe.skipIf still runs this body to collect the tests: read nothing when the corpus is absent.
  const pairs = existsSync(base + 'pairs.json') ? (JSON.parse(readFileSync(base + 'pairs.json', 'utf8')) as Pair[]) : [];
  const cases: Array<[string, string, () => Promise<FrameVad>, number]> = [
    ['webrtc', 'long_silences/four_utterances_3-6-10s_gaps.wav', () => WebRtcVad.create(2), 16000],
    ['webrtc', 'long_silences/four_utterances_3-6-10s_gaps.wav', () => WebRtcVad.create(2), 44100],
  ];
  const silero = sileroModelPath(modelsDir);
  if (silero) cases.push(['silero', 'long_silences/four_utterances_3-6-10s_gaps__bike_snr10.wav', () => SileroVad.create(silero), 16000]);

  for (const [vadName, file, makeVad, rate] of cases) {
    it(`${vadName} @ ${rate} Hz: shortens the 3/6/10 s gaps to ~0.6 s, never cuts speech (${file})`, async () => {
      const segs = pairs.find((p) => p.file === file)!.speech_segments_s!;
      const x = await decodeAudio(base + file, { ffmpeg: tools.ffmpeg, sampleRate: rate });
      const stage = new LongSilenceStage(await VadTracker.create(await makeVad(), rate), rate, 1, { minSilenceSeconds: 1, targetSeconds: 0.6 });
      const y = await processWhole([stage], x, 7000);
      const inDur = x.channels[0]!.length / rate;
      const outDur = y.channels[0]!.length / rate;
      expect(Math.abs(inDur - stage.removedSeconds - outDur)).toBeLessThan(0.01);
      // Gaps are 3, 6 and 10 s between utterances: (3-0.6)+(6-0.6)+(10-0.6) = 17.2 s at least.
      expect(stage.removedSeconds).toBeGreaterThan(16.5);
      expect(stage.removedSeconds).toBeLessThan(21);
      // The segments include each utterance's own leading/trailing silence, so cuts may reach into
      // them; what matters is that no speech energy (measured on the clean reference) is removed.
      const clean = (await decodeAudio(base + file.replace('__bike_snr10', '').replace('.wav', '.CLEAN.wav'), { ffmpeg: tools.ffmpeg, sampleRate: rate })).channels[0]!;
      let total = 0, lost = 0;
      for (let i = 0; i < clean.length; i++) total += clean[i]! ** 2;
      for (const [a, b] of stage.cuts) for (let i = Math.round(a * rate); i < Math.round(b * rate); i++) lost += clean[i]! ** 2;
      expect(lost / total).toBeLessThan(0.002);
      for (let i = 0; i + 1 < segs.length; i++) {
        const gap: [number, number] = [segs[i]![1], segs[i + 1]![0]];
        const removedInGap = stage.cuts.reduce((a, [s, e]) => a + Math.max(0, Math.min(e, gap[1]) - Math.max(s, gap[0])), 0);
        expect(gap[1] - gap[0] - removedInGap).toBeLessThan(1.2);
      }
      expect(overlap(stage.cuts, segs)).toBeLessThan(0.6 * stage.shortened);
    });
  }

  it('keeps short pauses untouched and output equals input when there are none', async () => {
    const rate = 16000;
    const n = rate * 4;
    const ch = new Float32Array(n);
    for (let i = 0; i < n; i++) ch[i] = (Math.floor(i / (rate * 0.7)) % 2 === 0 ? 0.3 : 0) * Math.sin(i * 0.1) * Math.sin(i * 0.0021);
    const stage = new LongSilenceStage(await VadTracker.create(await WebRtcVad.create(2), rate), rate, 1);
    const y = await processWhole([stage], { sampleRate: rate, channels: [ch] }, 1234);
    expect(stage.shortened).toBe(0);
    expect(Array.from(y.channels[0]!)).toEqual(Array.from(ch));
  });
});
