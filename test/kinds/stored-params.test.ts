import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TtsParams } from '../../src/kinds/tts/contract.js';
import { SeparationParams } from '../../src/kinds/separation/contract.js';
import { EnhanceParams } from '../../src/kinds/enhance/contract.js';
import { PodcastScriptParams } from '../../src/kinds/podcast-script/contract.js';
import { PodcastAudioParams } from '../../src/kinds/podcast-audio/contract.js';
import { startTestApp, type TestApp } from '../helpers/app.js';

/**
 * Parameters exactly as release 0.1.0 stored them (no version field): a task it queued must still run
 * after an upgrade, so every kind's stored-params schema reads them as version 1.
 */
const RELEASE_0_1_0 = {
  tts: { text: 'Hello from the previous release.', voiceId: 1001, language: 'en', emotion: 1, speed: 1, format: 'mp3' },
  separation: { inputUrl: 'https://example.org/song.mp3', modelType: 350, separationType: 'stems', format: 'mp3' },
  enhance: { inputUrl: 'https://example.org/talk.wav', flags: ['remove_noise', 'normalize'] },
  podcast_script: { sourceType: 4, url: null, text: 'Some pasted text.', speakers: null, style: 1, duration: 2, language: 'en', useMode: null, commercialUse: null },
  podcast_audio: {
    scriptTaskId: 'abc',
    title: 'T',
    processedContent: '',
    language: 'en',
    lines: [{ role: 'A', name: 'Emma', avatar: '', text: 'Hi.', voiceId: 1001, sourceIndex: 0 }],
    hightlights: [],
    sourceData: 'x',
    trainData: '',
  },
} as const;

describe('stored parameters carry a version', () => {
  it('reads every kind of release 0.1.0 params as version 1', () => {
    expect(TtsParams.parse(RELEASE_0_1_0.tts)).toEqual({ ...RELEASE_0_1_0.tts, v: 1 });
    expect(SeparationParams.parse(RELEASE_0_1_0.separation)).toEqual({ ...RELEASE_0_1_0.separation, v: 1 });
    expect(EnhanceParams.parse(RELEASE_0_1_0.enhance)).toEqual({ ...RELEASE_0_1_0.enhance, v: 1 });
    expect(PodcastScriptParams.parse(RELEASE_0_1_0.podcast_script)).toEqual({ ...RELEASE_0_1_0.podcast_script, v: 1 });
    expect(PodcastAudioParams.parse(RELEASE_0_1_0.podcast_audio)).toEqual({ ...RELEASE_0_1_0.podcast_audio, v: 1 });
  });

  it('refuses a version it does not know instead of guessing', () => {
    expect(() => TtsParams.parse({ ...RELEASE_0_1_0.tts, v: 2 })).toThrow();
  });

  describe('a TTS task queued by release 0.1.0', () => {
    let app: TestApp;
    beforeAll(async () => {
      app = await startTestApp();
    });
    afterAll(async () => app?.close());

    it('runs to success after the upgrade, charged once', async () => {
      const { key, accountId, keyId } = await app.newKey({ credits: 10 });
      const id = 'release010task0000000000000000ab';
      const now = Date.now();
      // Written as 0.1.0 wrote it: the row with unversioned params, then its job.
      await app.container.tasks.create({ id, kind: 'tts', accountId, apiKeyId: keyId, params: { ...RELEASE_0_1_0.tts }, createdAt: now, expiresAt: now + 3_600_000 });
      await app.container.queue.enqueue({ taskId: id, kind: 'tts' });
      const done = await app.waitTask('/audio/api/v1/api-keys/tts/task/get', 'global_id', id, key);
      expect(done.data.status).toBe('success');
      expect(done.data.credits).toBe(1);
      const audio = await fetch(done.data.output);
      expect(audio.status).toBe(200);
      expect((await audio.arrayBuffer()).byteLength).toBeGreaterThan(1000);
    });
  });
});
