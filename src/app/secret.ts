import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';

/** The URL-signing secret: from config, else generated once and kept in DATA_DIR so links survive restarts. */
export async function loadOrCreateSecret(path: string, configured: string | undefined): Promise<string> {
  if (configured) return configured;
  try {
    const existing = (await readFile(path, 'utf8')).trim();
    if (existing.length >= 32) return existing;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  await mkdir(dirname(path), { recursive: true });
  const secret = randomBytes(32).toString('base64url');
  // 'wx' fails if another process created it meanwhile; then use theirs.
  try {
    await writeFile(path, secret, { mode: 0o600, flag: 'wx' });
    return secret;
  } catch {
    return (await readFile(path, 'utf8')).trim();
  }
}
