/**
 * The one question every neural engine asks before it opens a model file: is this catalog model installed (every
 * file at the catalog's size with its checksum matched, src/models/installed.ts)? A file that merely exists (a Git
 * LFS pointer, a truncated download, another model under the same name) is never handed to onnxruntime.
 */
import { MODEL_CATALOG, type ModelEntry } from './catalog.js';
import { modelFilePath } from './download.js';
import { checkModel, checkModelSync, describeCheck, type ModelCheck, type VerifiedMemo } from './installed.js';

/** Where an engine looks for models: MODELS_DIR, the effective catalog (built-in plus MODELS_CATALOG_FILE), a memo. */
export interface ModelSource {
  modelsDir: string;
  /** Default: the built-in catalog. */
  catalog?: readonly ModelEntry[];
  /** Digests already checked by this caller (a read-only MODELS_DIR cannot keep a marker). */
  memo?: VerifiedMemo;
}

export type VerifiedModel =
  | { ok: true; entry: ModelEntry; dir: string; /** Absolute path of each catalog file, by its catalog path. */ files: Map<string, string> }
  | { ok: false; /** absent: nothing of it is on disk; present: what is wrong (corrupt files, not in the catalog). */ reason: string | null };

/** Engines were given a bare MODELS_DIR before the verified check existed; they still accept one. */
export function modelSource(src: string | ModelSource): ModelSource {
  return typeof src === 'string' ? { modelsDir: src } : src;
}

function entryOf(src: ModelSource, name: string): ModelEntry | undefined {
  return (src.catalog ?? MODEL_CATALOG).find((e) => e.name === name);
}

function toResult(src: ModelSource, entry: ModelEntry, check: ModelCheck): VerifiedModel {
  if (check.state === 'installed') {
    const files = new Map(entry.files.map((f) => [f.path, modelFilePath(src.modelsDir, entry, f)]));
    return { ok: true, entry, dir: modelFilePath(src.modelsDir, entry, { path: '.' }), files };
  }
  // A model with some files missing and none wrong is simply not installed; a wrong file is worth a note.
  return { ok: false, reason: check.state === 'corrupt' ? describeCheck(check) : null };
}

/** Synchronous: engine threads decide a route synchronously, off the event loop. */
export function verifiedModelSync(source: string | ModelSource, name: string): VerifiedModel {
  const src = modelSource(source);
  const entry = entryOf(src, name);
  if (!entry) return { ok: false, reason: `${name} is not in the model catalog` };
  return toResult(src, entry, checkModelSync(src.modelsDir, entry, src.memo));
}

/** The same, hashing with async reads (for the process side: a first look at a 40 MB file must not block the loop). */
export async function verifiedModel(source: string | ModelSource, name: string): Promise<VerifiedModel> {
  const src = modelSource(source);
  const entry = entryOf(src, name);
  if (!entry) return { ok: false, reason: `${name} is not in the model catalog` };
  return toResult(src, entry, await checkModel(src.modelsDir, entry));
}
