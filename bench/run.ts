/** `npm run bench [-- http|tts ... [--option value ...]]`: runs the named benchmarks (all by default); results in bench/results/. */
import { benchHttp } from './http.js';
import { benchTts } from './tts.js';
import { benchPodcast } from './podcast.js';
import { benchPodcastAudio } from './podcast-audio.js';
import { benchSeparation } from './separation.js';
import { benchEnhance } from './enhance.js';
import { benchFillers } from './enhance-fillers.js';
import { benchScaleout } from './scaleout.js';
import { benchSeparationHonesty } from './separation-honesty.js';
import { benchSeparationRemixes } from './separation-remixes.js';
import { benchNeuralCost } from './neural-cost.js';
import { benchLlm } from './llm.js';
import { benchTtsCost } from './tts-cost.js';
import { benchAsrCost } from './asr-cost.js';
import { benchSeparationQuality } from './separation-quality.js';
import { benchSeparationCost } from './separation-cost.js';
import { benchEnhanceLong } from './enhance-long.js';

const all: Record<string, () => Promise<string>> = { http: benchHttp, tts: benchTts, podcast: benchPodcast, 'podcast-audio': benchPodcastAudio, separation: () => benchSeparation(), enhance: benchEnhance, 'enhance-fillers': benchFillers, scaleout: benchScaleout, 'separation-honesty': benchSeparationHonesty, 'separation-remixes': () => benchSeparationRemixes(), 'neural-cost': benchNeuralCost, 'tts-cost': benchTtsCost, 'asr-cost': benchAsrCost, llm: benchLlm, 'separation-quality': () => benchSeparationQuality(), 'separation-cost': benchSeparationCost, dereverb: () => import('./dereverb.js').then((m) => m.benchDereverb()), 'enhance-autoid': () => import('./enhance-autoid.js').then((m) => m.benchEnhanceAutoid()) };
all['enhance-long'] = benchEnhanceLong;
// Benchmark names come first; from the first `--option` on, the arguments are the benchmarks' own (they read argv).
const args = process.argv.slice(2).filter((a) => a !== '--');
const firstOption = args.findIndex((a) => a.startsWith('--'));
const names = firstOption < 0 ? args : args.slice(0, firstOption);
for (const name of names.length ? names : Object.keys(all)) {
  const fn = all[name];
  if (!fn) throw new Error(`unknown benchmark ${name}; known: ${Object.keys(all).join(', ')}`);
  const path = await fn();
  console.log(`${name}: ${path}`);
}
