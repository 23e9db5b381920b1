/**
 * Local language models (GGUF, llama.cpp via node-llama-cpp) for podcast scripts when no LLM_BASE_URL is set.
 *
 * qwen2.5-1.5b-instruct: Qwen/Qwen2.5-1.5B-Instruct-GGUF (Apache-2.0), the Q4_K_M file, pinned to revision
 * 91cad51170dc346986eccefdc2dd33a9da36ead9. Size and sha256 are the Hub's Git LFS pointer values for that file
 * (the Hub's file page shows the same "SHA256"), as public projects that pin this file publish them: a model-
 * preparation script pinning that revision with size and sha256, a Rust model spec, a llama.cpp runtime pin with
 * the revision URL, and a table of Qwen GGUF checksums "taken from the Hugging Face API" all give 1,117,320,736
 * bytes and 6a1a2eb6...4e9407e independently. pullModel verifies both while streaming, so a wrong value would fail
 * loudly, never load a foreign file. The 3B Q4_K_M (2,104,932,768 bytes, sha256 626b4a66...5c62d in the same table)
 * writes better dialogue at about twice the cost; it is not pinned here because no revision-pinned URL for it was
 * found: docs/models.md shows how a site pins it (MODELS_CATALOG_FILE) and selects it (LLM_LOCAL_MODEL).
 */
import type { OtherModelEntry } from './catalog.js';

const QWEN15 = { repo: 'Qwen/Qwen2.5-1.5B-Instruct-GGUF', revision: '91cad51170dc346986eccefdc2dd33a9da36ead9', file: 'qwen2.5-1.5b-instruct-q4_k_m.gguf' };

/** The model a podcast script task uses when LLM_LOCAL_MODEL is not set. */
export const DEFAULT_LOCAL_LLM = 'qwen2.5-1.5b-instruct';

export const LLM_MODELS: readonly OtherModelEntry[] = [
  {
    name: DEFAULT_LOCAL_LLM,
    kind: 'llm',
    description: 'Qwen2.5 1.5B Instruct (GGUF Q4_K_M): writes podcast scripts locally, no endpoint or account',
    license: 'Apache-2.0',
    meta: { engine: 'llama.cpp', file: QWEN15.file, source: `huggingface ${QWEN15.repo}@${QWEN15.revision}` },
    files: [
      {
        path: QWEN15.file,
        url: `https://huggingface.co/${QWEN15.repo}/resolve/${QWEN15.revision}/${QWEN15.file}`,
        sizeBytes: 1117320736,
        sha256: '6a1a2eb6d15622bf3c96857206351ba97e1af16c30d7a74ee38970e434e9407e',
      },
    ],
  },
];
