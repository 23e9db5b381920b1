/**
 * Kokoro's front end on the shared corpus's parallel paragraphs (../shared/corpus/tts_text/piper_rainbow): espeak-ng
 * IPA, misaki's symbol mapping, and the 510-token split, per language Soundry's Kokoro voices can speak. Prints symbols,
 * chunks and time; the model itself is not run (its weights are not on these machines).
 *   npx tsx bench/kokoro-frontend.ts
 */
import { existsSync, readFileSync } from 'node:fs';
import { EspeakEngine } from '../src/engines/tts/espeak.js';
import { splitKokoroPhonemes, toKokoroPhonemes } from '../src/engines/tts/kokoro.js';
import type { KokoroDialect } from '../src/models/catalog-kokoro.js';

const CORPUS = new URL('../../shared/corpus/tts_text/piper_rainbow/', import.meta.url);
if (!existsSync(CORPUS)) {
  console.log('no shared corpus beside the repository: nothing to measure');
  process.exit(0);
}
const espeak = new EspeakEngine();
await espeak.phonemizeIpa('warm up', 'en-us');
const cases: Array<[string, string, KokoroDialect]> = [['en', 'en-us', 'en-us'], ['en', 'en', 'en-gb'], ['es', 'es', 'es'], ['fr', 'fr', 'fr'], ['pt', 'pt-br', 'pt-br']];
for (const [file, voice, dialect] of cases) {
  const text = readFileSync(new URL(`${file}.txt`, CORPUS), 'utf8');
  const t0 = performance.now();
  const ipa = await espeak.phonemizeIpa(text, voice);
  const t1 = performance.now();
  const chunks = splitKokoroPhonemes(toKokoroPhonemes(ipa, dialect));
  const t2 = performance.now();
  const lengths = chunks.map((c) => Array.from(c).length);
  console.log(`${dialect}: ${text.length} chars -> ${lengths.reduce((a, b) => a + b, 0)} symbols in ${chunks.length} chunks (longest ${Math.max(...lengths)}); espeak ${(t1 - t0).toFixed(0)} ms, mapping + split ${(t2 - t1).toFixed(2)} ms`);
}
