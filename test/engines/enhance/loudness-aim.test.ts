import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { decodeAudio, encodeAudio, resolveMediaTools } from '../../../src/media/ffmpeg.js';
import { LoudnessMeter, parseEbur128Summary } from '../../../src/engines/enhance/loudness.js';
import { NormalizeStage } from '../../../src/engines/enhance/normalize.js';
import { aimedNormalize, LimiterAimPass } from '../../../src/engines/enhance/loudness-aim.js';
import { blocksOf, processWhole } from '../../../src/engines/enhance/stage.js';

const corpus = new URL('../../../../shared/corpus/speech/', import.meta.url).pathname;
const tools = resolveMediaTools({ preferSystem: true });
const dir = mkdtempSync(join(tmpdir(), 'loud-aim-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** ffmpeg's ebur128 on the encoded output: the reference the issue holds us to. */
async function ffmpegAfter(audio: Parameters<typeof encodeAudio>[0]): Promise<{ integratedLufs: number; truePeakDbtp: number | null }> {
  const path = join(dir, `o${Math.random().toString(36).slice(2)}.flac`);
  await encodeAudio(audio, path, { ffmpeg: tools.ffmpeg, format: 'flac' });
  const r = spawnSync(tools.ffmpeg, ['-nostdin', '-hide_banner', '-nostats', '-i', path, '-filter_complex', 'ebur128=peak=true', '-f', 'null', '-'], { encoding: 'utf8' });
  return parseEbur128Summary(r.stderr);
}

// Files that missed -16 LUFS before: limited speech (telephone, AMI meeting) and a -52.8 LUFS reverberant file.
const FILES = ['conversational/pyannote_sample_telephone.wav', 'conversational/pyannote_ami_dev00.wav', 'constructed_pairs_16k/reverb/arctic_aew_a0001__sbrir3_rev.wav', 'clean/librispeech_5703-47212-0000.ogg'];

describe('normalize aimed through the limiter', () => {
  for (const f of FILES) {
    it.skipIf(!existsSync(corpus + f))(`${f}: -16 LUFS within 0.5 LU by ffmpeg, true peak at most -1 dBTP`, async () => {
      const audio = await decodeAudio(corpus + f, { ffmpeg: tools.ffmpeg });
      const meter = new LoudnessMeter(audio.sampleRate, audio.channels.length);
      for await (const b of blocksOf(audio, 16384)) meter.push(b);
      const measured = meter.result();
      const opts = { targetLufs: -16 };
      const aimPass = new LimiterAimPass(measured, audio.sampleRate, audio.channels.length, opts);
      for await (const b of blocksOf(audio, 16384)) aimPass.push(b);
      const aim = new NormalizeStage(measured, audio.sampleRate, audio.channels.length, opts).limiting ? aimPass.result() : null;
      expect(aim?.capped ?? false).toBe(false);
      const out = await processWhole([aimedNormalize(measured, aim, audio.sampleRate, audio.channels.length, opts)], audio, 16384);
      const ref = await ffmpegAfter(out);
      expect(Math.abs(ref.integratedLufs + 16), `got ${ref.integratedLufs} LUFS (aim ${JSON.stringify(aim)})`).toBeLessThan(0.5);
      expect(ref.truePeakDbtp!).toBeLessThanOrEqual(-0.95);
    }, 60_000);
  }
});
