/**
 * MODELS_CATALOG_FILE: a site's own additions to the model catalog, as JSON. An entry whose name is in the built-in
 * catalog replaces that entry's files (a site that converted or re-exported a model pins its own build and checksum);
 * a new name adds a model (e.g. an HTDemucs ONNX export, which has no published checksum to ship here). Either way
 * the rule stays the same: a file is used only after its size and checksum match what the catalog says.
 */
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { MODEL_CATALOG, type ModelEntry } from './catalog.js';
import { kokoroVoiceEntry } from './catalog-kokoro.js';

const FileRow = z
  .object({
    path: z.string().min(1),
    url: z.string().url(),
    sizeBytes: z.number().int().nonnegative(),
    sha256: z.string().regex(/^[0-9a-fA-F]{64}$/).optional(),
    md5: z.string().regex(/^[0-9a-fA-F]{32}$/).optional(),
  })
  .refine((f) => f.sha256 !== undefined || f.md5 !== undefined, { message: 'every file needs sha256 (or md5)' });

const EntryRow = z.object({
  name: z.string().min(1).regex(/^[^/\\]+$/, 'a model name is one folder name'),
  kind: z.enum(['tts', 'separation', 'enhance', 'vad', 'asr', 'llm']).optional(),
  description: z.string().optional(),
  license: z.string().optional(),
  files: z.array(FileRow).min(1),
  /** A Kokoro voice (a style table the built-in catalog lacks, or one it ships under another id): name and id 6001-6999. */
  kokoroVoice: z.object({ voice: z.string().regex(/^[abefp][fm]_[a-z]+$/), apiId: z.number().int().min(6001).max(6999) }).optional(),
});

export const CatalogFile = z.object({ models: z.array(EntryRow) });
export type CatalogFile = z.infer<typeof CatalogFile>;

/** The built-in catalog merged with a site's file (parsed and checked; a bad file stops start-up with its reason). */
export function mergeCatalog(extra: CatalogFile, base: readonly ModelEntry[] = MODEL_CATALOG): ModelEntry[] {
  const out = [...base];
  for (const row of extra.models) {
    const files = row.files.map((f) => ({ ...f }));
    const at = out.findIndex((m) => m.name === row.name);
    if (at >= 0 && row.kokoroVoice) {
      // A voice a site pinned (with its own id) before the catalog shipped it keeps the site's id: clients stored it.
      out[at] = siteKokoroVoice(row.name, row.kokoroVoice, files, out.filter((_, i) => i !== at));
      continue;
    }
    if (at >= 0) {
      out[at] = { ...out[at]!, files };
      continue;
    }
    if (row.kokoroVoice) {
      out.push(siteKokoroVoice(row.name, row.kokoroVoice, files, out));
      continue;
    }
    if (!row.kind || row.kind === 'tts') {
      // A TTS entry needs Piper metadata that only the built-in rows carry.
      throw new Error(`MODELS_CATALOG_FILE: new model ${row.name} needs kind separation, enhance, vad, asr or llm`);
    }
    out.push({ name: row.name, kind: row.kind, description: row.description ?? row.name, license: row.license ?? 'as provided by the site', files });
  }
  return out;
}

/** A site's Kokoro voice: named kokoro-<voice>, one file voices/<voice>.bin, an id no other voice has. */
function siteKokoroVoice(name: string, k: { voice: string; apiId: number }, files: ModelEntry['files'], base: readonly ModelEntry[]): ModelEntry {
  const entry = kokoroVoiceEntry(k.voice, k.apiId, files[0]!);
  if (name !== entry.name || files.length !== 1 || files[0]!.path !== entry.kokoroVoice.file) {
    throw new Error(`MODELS_CATALOG_FILE: Kokoro voice ${k.voice} must be named ${entry.name} with the one file ${entry.kokoroVoice.file}`);
  }
  const taken = base.some((m) => (m.kind === 'tts' && m.engine === 'kokoro-voice' && m.kokoroVoice.apiId === k.apiId) || (m.kind === 'tts' && m.engine === 'piper' && m.piper.voices.some((v) => v.apiId === k.apiId)));
  if (taken) throw new Error(`MODELS_CATALOG_FILE: voice id ${k.apiId} (for ${k.voice}) is already another voice's`);
  return entry;
}

export function loadCatalog(path: string | undefined): readonly ModelEntry[] {
  if (!path) return MODEL_CATALOG;
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new Error(`MODELS_CATALOG_FILE ${path}: ${(err as Error).message}`);
  }
  const parsed = CatalogFile.safeParse(raw);
  if (!parsed.success) throw new Error(`MODELS_CATALOG_FILE ${path}: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  return mergeCatalog(parsed.data);
}
