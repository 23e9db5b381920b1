import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { decodeAudio, resolveMediaTools } from '../../../src/media/ffmpeg.js';
import { OnnxDenoiseStage, onnxDenoiserAvailable, type OnnxDenoiser } from '../../../src/engines/enhance/onnx-denoise.js';
import { siSdr } from '../../../src/engines/enhance/metrics.js';
import { processWhole } from '../../../src/engines/enhance/stage.js';

const modelsDir = new URL('../../../../shared/corpus/models', import.meta.url).pathname;
const pairs = new URL('../../../../shared/corpus/speech/constructed_pairs_16k/noisy/', import.meta.url).pathname;
const tools = resolveMediaTools({ preferSystem: true });

for (const kind of ['dtln', 'gtcrn'] as OnnxDenoiser[]) {
  describe.skipIf(!onnxDenoiserAvailable(modelsDir, kind) || !existsSync(pairs))(`${kind} (ONNX, streaming)`, () => {
    it('improves SI-SDR by several dB at 0 and 10 dB SNR, aligned, same length', async () => {
      for (const f of ['libri5703__dishes_snr00', 'libri3436__sbnoise1_snr10']) {
        const x = await decodeAudio(`${pairs}${f}.wav`, { ffmpeg: tools.ffmpeg });
        const ref = await decodeAudio(`${pairs}${f}.CLEAN.wav`, { ffmpeg: tools.ffmpeg });
        const y = await processWhole([await OnnxDenoiseStage.create(16000, 1, { modelsDir, kind })], x, 2500);
        expect(y.channels[0]!.length).toBe(x.channels[0]!.length);
        const at0 = siSdr(y.channels[0]!, ref.channels[0]!);
        expect(at0).toBeGreaterThan(siSdr(y.channels[0]!, ref.channels[0]!, 1));
        expect(at0).toBeGreaterThan(siSdr(y.channels[0]!, ref.channels[0]!, -1));
        expect(at0 - siSdr(x.channels[0]!, ref.channels[0]!)).toBeGreaterThan(4);
      }
    });

    it('works at 48 kHz stereo through resampling', async () => {
      const f = 'libri5703__bike_snr05';
      const x = await decodeAudio(`${pairs}${f}.wav`, { ffmpeg: tools.ffmpeg, sampleRate: 48000, channels: 2 });
      const ref = await decodeAudio(`${pairs}${f}.CLEAN.wav`, { ffmpeg: tools.ffmpeg, sampleRate: 48000, channels: 2 });
      const y = await processWhole([await OnnxDenoiseStage.create(48000, 2, { modelsDir, kind })], x, 48000);
      expect(y.channels[1]!.length).toBe(x.channels[1]!.length);
      expect(siSdr(y.channels[1]!, ref.channels[1]!) - siSdr(x.channels[1]!, ref.channels[1]!)).toBeGreaterThan(2);
    });
  });
}

it('reports models as unavailable in an empty directory', () => {
  expect(onnxDenoiserAvailable('/nonexistent', 'gtcrn')).toBe(false);
});
