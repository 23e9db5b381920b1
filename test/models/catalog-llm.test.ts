import { Command } from 'commander';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { registerModelCommands } from '../../src/cli/models.js';
import { findModel } from '../../src/models/catalog.js';
import { DEFAULT_LOCAL_LLM, LLM_MODELS } from '../../src/models/catalog-llm.js';
import { mergeCatalog } from '../../src/models/catalog-file.js';

describe('local language models in the catalog', () => {
  it('the default is the Qwen2.5 1.5B Instruct Q4_K_M GGUF, pinned to a Hub revision with its published size and sha256', () => {
    const entry = findModel(DEFAULT_LOCAL_LLM)!;
    expect(entry.kind).toBe('llm');
    expect(entry.license).toBe('Apache-2.0');
    expect(entry.files).toHaveLength(1);
    const [file] = entry.files;
    expect(file!.url).toBe('https://huggingface.co/Qwen/Qwen2.5-1.5B-Instruct-GGUF/resolve/91cad51170dc346986eccefdc2dd33a9da36ead9/qwen2.5-1.5b-instruct-q4_k_m.gguf');
    expect(file!.path).toBe('qwen2.5-1.5b-instruct-q4_k_m.gguf');
    expect(file!.sizeBytes).toBe(1_117_320_736);
    expect(file!.sha256).toMatch(/^[0-9a-f]{64}$/);
    for (const m of LLM_MODELS) expect(m.files.every((f) => f.sha256 && f.path.endsWith('.gguf'))).toBe(true);
  });

  it('a site can add another GGUF of kind llm (MODELS_CATALOG_FILE), and `models list --kind llm` shows them', async () => {
    const merged = mergeCatalog({
      models: [{ name: 'qwen2.5-3b-instruct', kind: 'llm', files: [{ path: 'qwen2.5-3b-instruct-q4_k_m.gguf', url: 'https://example.org/q.gguf', sizeBytes: 10, sha256: 'a'.repeat(64) }] }],
    });
    const dir = await mkdtemp(join(tmpdir(), 'soundry-llm-catalog-'));
    try {
      const printed: unknown[] = [];
      const program = new Command('soundry').exitOverride();
      registerModelCommands(program, { modelsDir: dir, print: (o) => printed.push(o), progress: () => undefined, catalog: merged });
      await program.parseAsync(['node', 'soundry', 'models', 'list', '--kind', 'llm']);
      const names = (printed[0] as { models: Array<{ name: string; kind: string; installed: boolean }> }).models.map((m) => [m.name, m.kind, m.installed]);
      expect(names).toEqual([[DEFAULT_LOCAL_LLM, 'llm', false], ['qwen2.5-3b-instruct', 'llm', false]]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
