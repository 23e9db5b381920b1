import { describe, expect, it } from 'vitest';
import { TaskFailure } from '../../src/domain/errors.js';
import { PODCAST_LIMITS } from '../../src/domain/podcast-limits.js';
import type { PodcastScript } from '../../src/engines/podcast/script.js';
import { PodcastAudioCreateBody } from '../../src/kinds/podcast-audio/contract.js';
import { withinLimits } from '../../src/kinds/podcast-script/worker.js';

const line = (text: string) => ({ role: 'A', name: 'Emma', avatar: 'https://example.com/a.svg', text, voice_id: '1' });
const script = (over: Partial<PodcastScript> = {}): PodcastScript => ({
  title: 'Title',
  processed_content: 'Summary.',
  train_data: '1. Intro',
  podcast_script: [line('Hello.'), line('Bye.')],
  hightlights: [{ highlight: 'Hello', index: 0, script_start_index: 0, script_end_index: 0 }],
  podcast_script_txt: 'Title\n\nEmma: Hello.\nEmma: Bye.',
  ...over,
});

describe('a script task hands out only what the audio step accepts back', () => {
  it('cuts the descriptive fields to their limits and re-renders the transcript under the cut title', () => {
    const long = script({
      title: `A ${'very '.repeat(200)}long title`,
      processed_content: 'p'.repeat(30_000),
      train_data: 'o'.repeat(30_000),
      hightlights: Array.from({ length: 150 }, (_, i) => ({ highlight: 'h'.repeat(3000), index: i, script_start_index: 0, script_end_index: 1 })),
    });
    const out = withinLimits(long, 50_000);
    expect(out.title.length).toBe(PODCAST_LIMITS.titleChars);
    expect(out.title.endsWith('…')).toBe(true);
    expect(out.processed_content.length).toBe(PODCAST_LIMITS.processedContentChars);
    expect(out.train_data.length).toBe(PODCAST_LIMITS.outlineChars);
    expect(out.hightlights).toHaveLength(PODCAST_LIMITS.highlights);
    expect(out.podcast_script_txt.startsWith(`${out.title}\n`)).toBe(true);
    const back = PodcastAudioCreateBody.safeParse({ ...out, global_id: 'x' });
    expect(back.success, JSON.stringify(back.error?.issues?.slice(0, 2))).toBe(true);
    // A surrogate pair at the cut is not split.
    expect(withinLimits(script({ title: '😀'.repeat(400) }), 50_000).title).toMatch(/^(😀)+…$/u);
  });

  it('fails, saying why, a script whose lines the audio step would refuse', () => {
    expect(() => withinLimits(script({ podcast_script: [line('x'.repeat(5001))] }), 50_000)).toThrow(TaskFailure);
    expect(() => withinLimits(script({ podcast_script: [line('x'.repeat(5001))] }), 50_000)).toThrow(/the longest 5001 characters of at most 5000/);
    expect(() => withinLimits(script({ podcast_script: Array.from({ length: 20 }, () => line('y'.repeat(3000))) }), 50_000)).toThrow(/60000 characters in all of at most 50000/);
    expect(() => withinLimits(script({ podcast_script: Array.from({ length: 1001 }, () => line('z')) }), 50_000)).toThrow(/1001 lines of at most 1000/);
    expect(withinLimits(script(), 50_000)).toEqual(script());
  });
});
