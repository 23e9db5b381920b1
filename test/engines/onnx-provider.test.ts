import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { chooseExecutionProviders, probeExecutionProviders } from '../../src/engines/onnx-provider.js';
import { openSeparationSession } from '../../src/engines/separation/onnx/session.js';
import { loadConfig } from '../../src/config/config.js';
import { buildTinyMdxModel, writeModel } from '../fixtures/separation-models.js';

describe('ONNX_EXECUTION_PROVIDER', () => {
  it('auto falls back to CPU on a host without the CUDA provider library, and a session opens with that choice', async () => {
    const choice = chooseExecutionProviders('auto');
    // This machine has no GPU and onnxruntime-node installed no CUDA provider.
    expect(choice.providers).toEqual(['cpu']);
    expect(choice.reason).toMatch(/no CUDA provider library/);
    const dir = await mkdtemp(join(tmpdir(), 'soundry-ep-'));
    try {
      const path = await writeModel(join(dir, 'm.onnx'), buildTinyMdxModel(8, 4, 0.5));
      const session = await openSeparationSession(path, 1, choice.providers);
      expect(session.inputNames).toEqual(['input']);
      await session.release();
      // cuda insists: without the provider the load fails (the engine turns that into a failure naming the file).
      await expect(openSeparationSession(path, 1, chooseExecutionProviders('cuda').providers)).rejects.toThrow();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('auto picks CUDA first, CPU behind it, when the provider library is beside the binding', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'soundry-ep-bin-'));
    try {
      await writeFile(join(dir, 'libonnxruntime_providers_cuda.so'), '');
      expect(chooseExecutionProviders('auto', dir).providers).toEqual(['cuda', 'cpu']);
      expect(chooseExecutionProviders('cpu', dir).providers).toEqual(['cpu']);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('cuda without a CUDA provider that starts stops start-up with the reason and what to do; auto and cpu go on, saying so', async () => {
    // This machine has no GPU: the probe's one-node session cannot start on CUDA.
    await expect(probeExecutionProviders('cuda', chooseExecutionProviders('cuda'))).rejects.toThrow(
      /ONNX_EXECUTION_PROVIDER=cuda, but onnxruntime could not start its CUDA provider \(.+\)\. Install the CUDA build .*or set ONNX_EXECUTION_PROVIDER=auto or cpu/,
    );
    const cpu = chooseExecutionProviders('cpu');
    expect(await probeExecutionProviders('cpu', cpu)).toBe(cpu);
    // auto with a provider library that will not start (an empty file stands in for it) falls back, with the reason.
    const dir = await mkdtemp(join(tmpdir(), 'soundry-ep-probe-'));
    try {
      await writeFile(join(dir, 'libonnxruntime_providers_cuda.so'), '');
      const auto = await probeExecutionProviders('auto', chooseExecutionProviders('auto', dir));
      expect(auto.providers).toEqual(['cpu']);
      expect(auto.fellBack).toBe(true);
      expect(auto.reason).toMatch(/did not start .*running on CPU/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('is validated by the config schema (default auto)', () => {
    expect(loadConfig({}).ONNX_EXECUTION_PROVIDER).toBe('auto');
    expect(loadConfig({}).MODELS_AUTO_PULL).toBe(true);
    expect(() => loadConfig({ ONNX_EXECUTION_PROVIDER: 'rocm' })).toThrow(/ONNX_EXECUTION_PROVIDER/);
  });
});
