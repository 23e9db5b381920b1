import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

/**
 * A synthetic mix in which the built-in separation engine finds drums, bass and vocals (each stem has something
 * of its own): a centred voice whose pitch glides without repeating (vocals: centre and not repeating), a 55 Hz
 * line a little louder on the left (bass), and noise bursts every quarter second (drums). A stem the engine finds
 * nowhere fails its task uncharged (docs/api.md, "Separation"), so tests of successful separations use this rather
 * than plain tones, where it finds no drums and no vocals. test/engines/separation/unfound.test.ts checks that the
 * engine still finds them here.
 */
const VOICE = '0.3*sin(2*PI*(350*t+30*(1-cos(2*PI*0.37*t))/(2*PI*0.37)))';
const DRUMS = '0.8*(random(0)-0.5)*lt(mod(t\\,0.25)\\,0.06)';

/** The lavfi `aevalsrc` source of the mix (stereo, 44.1 kHz), `seconds` long. */
export function separableSongSource(seconds: number): string {
  return `aevalsrc=${VOICE}+0.3*sin(2*PI*55*t)+${DRUMS}|${VOICE}+0.2*sin(2*PI*55*t)+${DRUMS}:s=44100:d=${seconds}`;
}

/** Writes the mix to `path` as 16-bit WAV (extra ffmpeg output options before the path, e.g. another codec). */
export async function makeSeparableSong(ffmpeg: string, path: string, seconds: number, outputArgs: string[] = ['-c:a', 'pcm_s16le']): Promise<string> {
  await promisify(execFile)(ffmpeg, ['-hide_banner', '-loglevel', 'error', '-y', '-f', 'lavfi', '-i', separableSongSource(seconds), ...outputArgs, path]);
  return path;
}
