import { mkdir, mkdtemp, rename, rm, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findAsrModel, repeatsAtEnd, WhisperAsr, whisperFiles } from '../../../src/engines/asr/whisper.js';
import { WhisperTokenizer } from '../../../src/engines/asr/tokenizer.js';
import { chooseExecutionProviders } from '../../../src/engines/onnx-provider.js';
import { pinFolder } from '../../fixtures/pinned-catalog.js';
import { TINY_TRANSCRIPT, writeTinyWhisper, type TinyWhisper } from '../../fixtures/whisper-fixture.js';

const SR = 16000;

function tone(seconds: number, amp = 0.3): Float32Array {
  return Float32Array.from({ length: Math.round(seconds * SR) }, (_, i) => amp * Math.sin((2 * Math.PI * 220 * i) / SR));
}

async function* windows(...ws: Float32Array[]): AsyncGenerator<Float32Array> {
  for (const w of ws) yield w;
}

let root: string;
let tiny: TinyWhisper;
let asr: WhisperAsr;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'soundry-asr-'));
  tiny = await writeTinyWhisper(join(root, 'whisper-tiny'));
  asr = await WhisperAsr.load(tiny.dir);
});
afterAll(async () => {
  await asr?.release();
  await rm(root, { recursive: true, force: true });
});

describe('Whisper tokenizer', () => {
  it('finds the prompt tokens and the language tokens between <|startoftranscript|> and <|translate|>', async () => {
    const tk = await WhisperTokenizer.load(join(tiny.dir, 'tokenizer.json'));
    expect(tk.eot).toBe(tiny.eot);
    expect([...tk.languages.keys()]).toEqual(['en', 'zh', 'de', 'fr']);
    expect(tk.languages.get('de')).toBe(tiny.languages.de);
  });

  it('decodes byte-level BPE to UTF-8, joining a character split across tokens and skipping control tokens', async () => {
    const tk = await WhisperTokenizer.load(join(tiny.dir, 'tokenizer.json'));
    expect(tk.decode(tiny.tokenIds)).toBe(TINY_TRANSCRIPT);
    expect(tk.decode([tk.sot, ...tiny.tokenIds.slice(0, 3), tk.noTimestamps, tk.eot])).toBe('Lighthouses guided ships');
    expect(TINY_TRANSCRIPT).toContain('café');
  });
});

describe('Whisper greedy decoding', () => {
  it('transcribes 30 s windows in sequence: detects the language once, feeds the cache back, stops at <|endoftext|>', async () => {
    const progress: number[] = [];
    const t = await asr.transcribe(windows(tone(30), tone(4.5)), { onProgress: (s) => progress.push(s) });
    expect(t.language).toBe('en');
    expect(t.text).toBe(`${TINY_TRANSCRIPT} ${TINY_TRANSCRIPT}`);
    expect(t.windows).toBe(2);
    expect(t.tokens).toEqual([tiny.tokenIds.length, tiny.tokenIds.length]);
    expect(t.seconds).toBeCloseTo(34.5, 6);
    expect(progress).toEqual([30, 34.5]);
  });

  it('skips digitally silent windows and honours a forced language', async () => {
    const t = await asr.transcribe(windows(new Float32Array(30 * SR), tone(2)), { language: 'de' });
    expect(t.text).toBe(TINY_TRANSCRIPT);
    expect(t.tokens).toEqual([0, tiny.tokenIds.length]); // the silent window decoded nothing
    expect(t.language).toBe('de');
    const unknown = await asr.transcribe(windows(tone(2)), { language: 'yue' });
    expect(unknown.language).toBe('en'); // no <|yue|> token in this model: detected instead
    const silent = await asr.transcribe(windows(new Float32Array(SR)));
    expect(silent).toMatchObject({ text: '', language: null, windows: 1 });
  });

  it('caps the tokens per window', async () => {
    const t = await asr.transcribe(windows(tone(3)), { maxTokensPerWindow: 4 });
    expect(t.text).toBe('Lighthouses guided ships along');
    expect(t.tokens).toEqual([4]);
  });

  it('applies generation_config suppress_tokens and begin_suppress_tokens', async () => {
    const dir = join(root, 'suppressed');
    const t = await writeTinyWhisper(dir);
    await writeFile(join(dir, 'generation_config.json'), JSON.stringify({ suppress_tokens: [t.tokenIds[1]], begin_suppress_tokens: [220, t.eot] }));
    const m = await WhisperAsr.load(dir);
    try {
      // Token 1 may never win, so the row that wanted it falls to <|endoftext|>.
      expect((await m.transcribe(windows(tone(2)))).text).toBe('Lighthouses');
    } finally {
      await m.release();
    }
  });

  it('stops when the signal is aborted', async () => {
    const ac = new AbortController();
    ac.abort();
    await expect(asr.transcribe(windows(tone(3)), { signal: ac.signal })).rejects.toThrow();
  });

  it('detects greedy loops', () => {
    expect(repeatsAtEnd([1, 2, 3, 4])).toBe(false);
    expect(repeatsAtEnd([9, 5, 6, 5, 6, 5, 6])).toBe(true);
    expect(repeatsAtEnd([5, 6, 5, 6])).toBe(false);
  });
});

describe('installed model lookup (verified, never just present)', () => {
  it('accepts the Hub layout with quantized files under onnx/ and prefers whisper-base, once each is pinned in the catalog', async () => {
    const models = await mkdtemp(join(tmpdir(), 'soundry-asr-models-'));
    try {
      expect(await findAsrModel(models)).toEqual({ name: null, reason: null });
      const hub = await writeTinyWhisper(join(models, 'whisper-tiny'));
      await mkdir(join(hub.dir, 'onnx'));
      await rename(join(hub.dir, 'encoder_model.onnx'), join(hub.dir, 'onnx', 'encoder_model_quantized.onnx'));
      await rename(join(hub.dir, 'decoder_model_merged.onnx'), join(hub.dir, 'onnx', 'decoder_model_merged_quantized.onnx'));
      expect(whisperFiles(hub.dir)?.decoder).toBe(join(hub.dir, 'onnx', 'decoder_model_merged_quantized.onnx'));
      // Present but not the built-in catalog's bytes: not installed, and the reason says which file is wrong.
      const unpinned = await findAsrModel(models);
      expect(unpinned.name).toBeNull();
      expect(unpinned.name === null && unpinned.reason).toMatch(/whisper-tiny\/onnx\/encoder_model_quantized\.onnx: \d+ bytes, expected 10124910 bytes/);
      const catalog = [pinFolder(models, 'whisper-tiny', 'asr')];
      const found = await findAsrModel({ modelsDir: models, catalog });
      expect(found.name).toBe('whisper-tiny');
      expect(found.name !== null && found.files.decoder).toBe(join(hub.dir, 'onnx', 'decoder_model_merged_quantized.onnx'));
      await writeTinyWhisper(join(models, 'whisper-base'));
      catalog.push(pinFolder(models, 'whisper-base', 'asr'));
      expect((await findAsrModel({ modelsDir: models, catalog })).name).toBe('whisper-base');
      // A truncated whisper-base is no longer installed: whisper-tiny serves again.
      await truncate(join(models, 'whisper-base', 'decoder_model_merged.onnx'), 100);
      expect((await findAsrModel({ modelsDir: models, catalog })).name).toBe('whisper-tiny');
    } finally {
      await rm(models, { recursive: true, force: true });
    }
  });

  it('never picks an unverified file beside the verified ones, and an LFS pointer makes the model corrupt', async () => {
    const models = await mkdtemp(join(tmpdir(), 'soundry-asr-models-'));
    try {
      const t = await writeTinyWhisper(join(models, 'whisper-tiny'));
      await mkdir(join(t.dir, 'onnx'));
      await rename(join(t.dir, 'encoder_model.onnx'), join(t.dir, 'onnx', 'encoder_model_quantized.onnx'));
      const catalog = [pinFolder(models, 'whisper-tiny', 'asr')];
      // A full-precision encoder dropped in later is preferred by name, but the catalog does not list it.
      await writeFile(join(t.dir, 'encoder_model.onnx'), 'not a model');
      const found = await findAsrModel({ modelsDir: models, catalog });
      expect(found.name !== null && found.files.encoder).toBe(join(t.dir, 'onnx', 'encoder_model_quantized.onnx'));
      // What a clone without git-lfs leaves in place of the decoder.
      await writeFile(join(t.dir, 'decoder_model_merged.onnx'), 'version https://git-lfs.github.com/spec/v1\noid sha256:' + '0'.repeat(64) + '\nsize 30727765\n');
      const lfs = await findAsrModel({ modelsDir: models, catalog });
      expect(lfs.name).toBeNull();
      expect(lfs.name === null && lfs.reason).toMatch(/decoder_model_merged\.onnx: Git LFS pointer/);
    } finally {
      await rm(models, { recursive: true, force: true });
    }
  });

  it('ONNX_EXECUTION_PROVIDER: auto falls back to CPU here and transcribes; cuda without its provider fails naming the file', async () => {
    const auto = chooseExecutionProviders('auto').providers;
    expect(auto).toEqual(['cpu']);
    const m = await WhisperAsr.load(whisperFiles(tiny.dir)!, { executionProviders: auto });
    try {
      expect((await m.transcribe(windows(tone(3)), { maxTokensPerWindow: 4 })).text).toBe('Lighthouses guided ships along');
    } finally {
      await m.release();
    }
    await expect(WhisperAsr.load(whisperFiles(tiny.dir)!, { executionProviders: chooseExecutionProviders('cuda').providers })).rejects.toThrow(
      /whisper-tiny\/encoder_model\.onnx could not be loaded \(cuda\)/,
    );
  });

  it('a verified file that onnxruntime cannot open fails naming the file (no retry can help)', async () => {
    const dir = join(root, 'broken');
    const t = await writeTinyWhisper(dir);
    await writeFile(join(dir, 'encoder_model.onnx'), Buffer.alloc(4096, 7));
    await expect(WhisperAsr.load(whisperFiles(t.dir)!)).rejects.toThrow(/broken\/encoder_model\.onnx could not be loaded \(cpu\)/);
  });
});
