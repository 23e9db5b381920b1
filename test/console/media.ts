import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { resolveMediaTools } from '../../src/media/ffmpeg.js';

const run = promisify(execFile);
const tools = resolveMediaTools({ preferSystem: true });

/** A short test recording made by ffmpeg from a lavfi source (sine, anoisesrc, aevalsrc...). */
export async function makeAudio(dir: string, name: string, lavfi: string, extra: string[] = []): Promise<string> {
  const path = join(dir, name);
  await run(tools.ffmpeg, ['-hide_banner', '-loglevel', 'error', '-y', '-f', 'lavfi', '-i', lavfi, ...extra, path]);
  return path;
}
