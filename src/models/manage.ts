/**
 * Offline installs and removal: `models add` imports files copied from elsewhere (a USB stick, another server) only
 * after their size and checksum match the catalog, through the same temp-file + fsync + rename as a download, and
 * `models remove` deletes a catalog model's folder.
 */
import { copyFile, mkdir, open, rename, rm, stat } from 'node:fs/promises';
import { basename, dirname } from 'node:path';
import type { ModelEntry, ModelFile } from './catalog.js';
import { fileDigest, modelDir, modelFilePath } from './download.js';
import { expectedChecksum, rememberVerified } from './installed.js';
import { withDownloadLock } from './download-lock.js';

export class ImportRefused extends Error {}

/** Which catalog file each given path is: by file name, or the only file of a one-file model. */
function matchFiles(entry: ModelEntry, sources: string[]): Array<{ file: ModelFile; source: string }> {
  return sources.map((source) => {
    const byName = entry.files.find((f) => basename(f.path) === basename(source));
    const file = byName ?? (entry.files.length === 1 && sources.length === 1 ? entry.files[0] : undefined);
    if (!file) throw new ImportRefused(`${source} is none of ${entry.name}'s files (${entry.files.map((f) => basename(f.path)).join(', ')})`);
    return { file, source };
  });
}

export interface ImportResult {
  name: string;
  dir: string;
  files: Array<{ path: string; from: string; sizeBytes: number }>;
}

export async function importModel(entry: ModelEntry, sources: string[], modelsDir: string): Promise<ImportResult> {
  const pairs = matchFiles(entry, sources);
  // Everything is checked before anything is installed, so a bad file leaves the model as it was.
  for (const { file, source } of pairs) {
    const sum = expectedChecksum(file);
    if (!sum) throw new ImportRefused(`the catalog has no checksum for ${entry.name}/${file.path}`);
    const size = (await stat(source)).size;
    if (size !== file.sizeBytes) throw new ImportRefused(`${source}: ${size} bytes, but ${entry.name}/${file.path} is ${file.sizeBytes} bytes`);
    const digest = await fileDigest(source, sum.algorithm);
    if (digest !== sum.expected) throw new ImportRefused(`${source}: ${sum.algorithm} ${digest}, but ${entry.name}/${file.path} is ${sum.expected} (checksum mismatch)`);
  }
  const result: ImportResult = { name: entry.name, dir: modelDir(modelsDir, entry), files: [] };
  for (const { file, source } of pairs) {
    const dest = modelFilePath(modelsDir, entry, file);
    // The same lock as a download: an import never shares a .part file with one in progress.
    await withDownloadLock(dest, async () => {
      const part = `${dest}.part`;
      await mkdir(dirname(dest), { recursive: true });
      await copyFile(source, part);
      const fh = await open(part, 'r+');
      try {
        await fh.sync();
      } finally {
        await fh.close();
      }
      // The copy is checked again: the source could have changed between the check and the copy.
      const sum = expectedChecksum(file)!;
      if ((await fileDigest(part, sum.algorithm)) !== sum.expected) {
        await rm(part, { force: true });
        throw new ImportRefused(`${source} changed while it was copied; nothing was installed for ${file.path}`);
      }
      await rename(part, dest);
    });
    result.files.push({ path: file.path, from: source, sizeBytes: file.sizeBytes });
  }
  rememberVerified(modelsDir, entry);
  return result;
}

export async function removeModel(entry: ModelEntry, modelsDir: string): Promise<{ name: string; removed: boolean }> {
  const dir = modelDir(modelsDir, entry);
  const existed = await stat(dir).then(() => true, () => false);
  await rm(dir, { recursive: true, force: true });
  return { name: entry.name, removed: existed };
}
