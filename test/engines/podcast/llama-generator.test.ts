import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { boundedScriptSchema, LlamaScriptGenerator, parseReply, scriptBounds } from '../../../src/engines/podcast/llama-generator.js';
import { closeJsonPrefix } from '../../../src/engines/podcast/script-prompt.js';
import type { ScriptRequest } from '../../../src/engines/podcast/script.js';
import { withinLimits } from '../../../src/kinds/podcast-script/worker.js';
import { PodcastScriptResult } from '../../../src/kinds/podcast-script/contract.js';
import { TINY_LLM, writeGguf } from '../../fixtures/gguf-writer.js';

const req = (duration = 1): ScriptRequest => ({
  source: { title: 'Bees', text: 'Bees pollinate most flowering plants.\n\nA colony can hold fifty thousand bees in summer.', language: 'en', kind: 'text' },
  sourceData: 'Bees pollinate',
  language: 'en',
  style: 1,
  duration,
  speakers: [
    { role: 'A', name: 'Maya', avatar: 'http://x/a.svg', voiceId: '11', gender: 'female' },
    { role: 'B', name: 'Leo', avatar: 'http://x/b.svg', voiceId: '12', gender: 'male' },
  ],
});

describe('closeJsonPrefix: a reply stopped at the token limit', () => {
  it('keeps every complete value and drops the one cut in half', () => {
    const cut = '{"title": "Bees", "podcast_script": [{"role": "A", "text": "Hello"}, {"role": "B", "text": "Hi th';
    expect(JSON.parse(closeJsonPrefix(cut)!)).toEqual({ title: 'Bees', podcast_script: [{ role: 'A', text: 'Hello' }, { role: 'B' }] });
  });

  it('never keeps a half key, a half number or an escaped quote as the end of a string', () => {
    expect(JSON.parse(closeJsonPrefix('{"a": "x\\"y", "b": 12')!)).toEqual({ a: 'x"y' });
    expect(JSON.parse(closeJsonPrefix('{"a": [1, 2], "tit')!)).toEqual({ a: [1, 2] });
    expect(JSON.parse(closeJsonPrefix('{"a": [')!)).toEqual({ a: [] });
  });

  it('returns a complete text as it is, and null when nothing was completed', () => {
    expect(closeJsonPrefix('{"a": {"b": [true]}} trailing')).toBe('{"a": {"b": [true]}}');
    expect(closeJsonPrefix('{"tit')).toBeNull();
  });

  it('parseReply takes a highlight index a model ran on with digits (JSON reads Infinity) instead of refusing the script', () => {
    const reply = `{"title": "T", "processed_content": "", "train_data": "", "podcast_script": [{"role": "A", "text": "One"}, {"role": "B", "text": "Two"}], "hightlights": [{"highlight": "H", "index": 0, "script_start_index": 1${'9'.repeat(400)}, "script_end_index": -${'9'.repeat(400)}}]}`;
    const parsed = parseReply(reply, false);
    expect(typeof parsed).toBe('object');
    expect((parsed as { hightlights: unknown[] }).hightlights).toEqual([{ highlight: 'H', index: 0, script_start_index: Number.MAX_SAFE_INTEGER, script_end_index: -Number.MAX_SAFE_INTEGER }]);
  });

  it('parseReply drops lines a cut left incomplete and needs two whole lines', () => {
    const head = '{"title": "Bees", "processed_content": "Intro", "train_data": "1. Bees", "podcast_script": [{"role": "A", "text": "One"}, ';
    const two = parseReply(`${head}{"role": "B", "text": "Two"}, {"role": "A", "text": "Thr`, true);
    expect(typeof two === 'string' ? two : two.podcast_script).toEqual([{ role: 'A', text: 'One' }, { role: 'B', text: 'Two' }]);
    expect(parseReply(`${head}{"role": "B", "te`, true)).toMatch(/podcast_script/);
  });
});

describe('bounds of the grammar', () => {
  it('grow with the episode length, and LLM_MAX_TOKENS caps the reply', () => {
    const short = scriptBounds(req(1));
    const long = scriptBounds(req(7));
    expect(long.lines).toBeGreaterThan(short.lines);
    expect(long.maxTokens).toBeGreaterThan(short.maxTokens);
    // A level-7 episode (~2,000 words, ~3,500 tokens) fits with room to spare.
    expect(long.maxTokens).toBeGreaterThan(3 * 3500);
    expect(scriptBounds(req(7), 900).maxTokens).toBe(900);
  });

  it('bounds every string and array of the schema, and allows only the hosts\' letters as roles', () => {
    const schema = boundedScriptSchema(['A', 'B'], scriptBounds(req(2)));
    expect(schema.properties.podcast_script.items.properties.role.enum).toEqual(['A', 'B']);
    const unbounded: string[] = [];
    const walk = (s: Record<string, unknown>, path: string) => {
      if (s.type === 'string' && s.maxLength === undefined) unbounded.push(path);
      if (s.type === 'array' && s.maxItems === undefined) unbounded.push(path);
      for (const [k, v] of Object.entries((s.properties ?? {}) as Record<string, Record<string, unknown>>)) walk(v, `${path}.${k}`);
      if (s.items) walk(s.items as Record<string, unknown>, `${path}[]`);
    };
    walk(schema as unknown as Record<string, unknown>, '$');
    expect(unbounded).toEqual([]);
  });
});

describe('LlamaScriptGenerator with a tiny random-weight GGUF the test writes', () => {
  let dir: string;
  let generator: LlamaScriptGenerator;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'soundry-llama-'));
    writeGguf(join(dir, 'tiny.gguf'), TINY_LLM);
    // One thread: llama.cpp's threads wait on each other at every layer, which a busy 2-core test host punishes.
    generator = await LlamaScriptGenerator.load({ modelPath: join(dir, 'tiny.gguf'), model: 'tiny', threads: 1, gpu: false });
  }, 60_000);
  afterAll(async () => {
    await generator?.dispose();
    await rm(dir, { recursive: true, force: true });
  });

  it('random weights under the JSON-schema grammar still give a valid script, with the request\'s hosts', async () => {
    const progress: number[] = [];
    const script = await generator.generate(req(1), AbortSignal.timeout(120_000), (f) => progress.push(f));
    expect(generator.id).toBe('llama:tiny');
    expect(generator.backend).toBe('cpu');
    expect(script.title.trim()).not.toBe('');
    expect(script.podcast_script.length).toBeGreaterThanOrEqual(1);
    for (const line of script.podcast_script) {
      expect(['A', 'B']).toContain(line.role);
      expect(line.voice_id).toBe(line.role === 'A' ? '11' : '12');
      expect(line.name).toBe(line.role === 'A' ? 'Maya' : 'Leo');
      expect(line.text.trim()).not.toBe('');
      expect(line.text.length).toBeLessThanOrEqual(600);
    }
    // What the task stores: inside the audio step's limits and the result schema.
    const stored = { ...withinLimits(script, 50_000), source_data: 'x', language: 'en', avatar: null };
    expect(PodcastScriptResult.safeParse(stored).success).toBe(true);
    expect(progress.length).toBeGreaterThan(0);
    expect(Math.max(...progress)).toBeLessThanOrEqual(1);
  }, 120_000);

  it('a source longer than the context is summarised part by part first, and the reply fits beside it', async () => {
    const small = await LlamaScriptGenerator.load({ modelPath: join(dir, 'tiny.gguf'), model: 'tiny', threads: 1, gpu: false, maxContext: 3072 });
    try {
      const paragraph = 'Bees pollinate most flowering plants, and a colony can hold fifty thousand bees in summer. ';
      const long = { ...req(1), source: { ...req(1).source, text: Array.from({ length: 12 }, () => paragraph.repeat(6)).join('\n\n') } };
      const phases: number[] = [];
      const script = await small.generate(long, AbortSignal.timeout(120_000), (f) => phases.push(f));
      expect(script.podcast_script.length).toBeGreaterThanOrEqual(1);
      expect(phases.length).toBeGreaterThan(0);
    } finally {
      await small.dispose();
    }
  }, 120_000);

  it('stops at the task\'s abort signal', async () => {
    const controller = new AbortController();
    const pending = generator.generate(req(3), controller.signal, () => controller.abort(new Error('cancelled by the test')));
    await expect(pending).rejects.toThrow(/cancelled by the test/);
  }, 60_000);
});
