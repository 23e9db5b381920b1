import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { decodeAudio, resolveMediaTools } from '../../../src/media/ffmpeg.js';
import { RnnoiseStage, SpectralGateStage } from '../../../src/engines/enhance/denoise.js';
import { siSdr } from '../../../src/engines/enhance/metrics.js';
import { processWhole, type AudioStage } from '../../../src/engines/enhance/stage.js';

const pairs = new URL('../../../../shared/corpus/speech/constructed_pairs_16k/noisy/', import.meta.url).pathname;
const tools = resolveMediaTools({ preferSystem: true });
const files = ['libri5703__dishes_snr00', 'libri5703__bike_snr05', 'libri3436__sbnoise1_snr10'];

const engines: Array<[string, (rate: number, ch: number) => Promise<AudioStage>]> = [
  ['rnnoise', (r, c) => RnnoiseStage.create(r, c)],
  ['spectral-gate', async (r, c) => new SpectralGateStage(r, c)],
];

describe.skipIf(!existsSync(pairs))('denoise on real noisy speech', () => {
  for (const [name, make] of engines) {
    it(`${name}: improves SI-SDR, keeps length and alignment (16 kHz mono)`, async () => {
      let gain = 0;
      for (const f of files) {
        const x = await decodeAudio(`${pairs}${f}.wav`, { ffmpeg: tools.ffmpeg });
        const ref = await decodeAudio(`${pairs}${f}.CLEAN.wav`, { ffmpeg: tools.ffmpeg });
        const y = await processWhole([await make(16000, 1)], x, 3333);
        expect(y.channels[0]!.length).toBe(x.channels[0]!.length);
        const at0 = siSdr(y.channels[0]!, ref.channels[0]!);
        // Aligned to within a sample (resampling leaves sub-sample offsets): lag 0 is (nearly) the best.
        for (const lag of [-2, -1, 1, 2]) expect(at0).toBeGreaterThan(siSdr(y.channels[0]!, ref.channels[0]!, lag) - 0.1);
        gain += at0 - siSdr(x.channels[0]!, ref.channels[0]!);
      }
      expect(gain / files.length).toBeGreaterThan(0.5);
    });

    it(`${name}: any rate and channel count (44.1 kHz stereo)`, async () => {
      const f = files[1]!;
      const x = await decodeAudio(`${pairs}${f}.wav`, { ffmpeg: tools.ffmpeg, sampleRate: 44100, channels: 2 });
      const ref = await decodeAudio(`${pairs}${f}.CLEAN.wav`, { ffmpeg: tools.ffmpeg, sampleRate: 44100, channels: 2 });
      const y = await processWhole([await make(44100, 2)], x, 10000);
      expect(y.sampleRate).toBe(44100);
      expect(y.channels.length).toBe(2);
      expect(y.channels[1]!.length).toBe(x.channels[1]!.length);
      for (let c = 0; c < 2; c++) expect(siSdr(y.channels[c]!, ref.channels[c]!)).toBeGreaterThan(siSdr(x.channels[c]!, ref.channels[c]!));
    });
  }
});
