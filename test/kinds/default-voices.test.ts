import { describe, expect, it } from 'vitest';
import { defaultSpeakers } from '../../src/kinds/podcast-script/worker.js';
import { openAiVoice } from '../../src/kinds/tts/openai.js';
import type { VoiceRecord } from '../../src/ports/voices.js';

const rec = (id: number, name: string, language: string, gender: number, extra: Partial<VoiceRecord> = {}): VoiceRecord => ({
  id, name, language, gender, age: 3, emotion: ['auto'], display_name: name, ...extra,
});
const builtins = [
  rec(1001, 'espeak:en-us:m1', 'en', 1), rec(1002, 'espeak:en-us:m3', 'en', 1), rec(1003, 'espeak:en-us:m7', 'en', 1), rec(1004, 'espeak:en-us:grandpa', 'en', 1),
  rec(1005, 'espeak:en-us:f1', 'en', 2), rec(1006, 'espeak:en-us:f4', 'en', 2), rec(1007, 'espeak:en-us:f3', 'en', 2),
  rec(1009, 'espeak:en-gb:m1', 'en', 1), rec(1010, 'espeak:en-gb:f1', 'en', 2), rec(1071, 'espeak:de:m1', 'de', 1), rec(1075, 'espeak:de:f1', 'de', 2),
];
const lessac = rec(5001, 'piper:en_US-lessac-medium', 'en', 2, { neural: true });
const ryan = rec(5002, 'piper:en_US-ryan-medium', 'en', 1, { neural: true });
const thorstenPending = rec(5003, 'piper:de_DE-thorsten-medium', 'de', 1, { neural: true, downloaded: false });

describe('default podcast hosts', () => {
  it('are built-in voices when no neural voice is installed', () => {
    expect(defaultSpeakers(builtins, 'en').map((v) => v.id)).toEqual([1005, 1001]);
  });
  it('prefer the installed neural voice of each gender, listed after the built-ins or not', () => {
    expect(defaultSpeakers([...builtins, lessac], 'en').map((v) => v.id)).toEqual([5001, 1001]);
    expect(defaultSpeakers([...builtins, ryan, lessac], 'en').map((v) => v.id)).toEqual([5001, 5002]);
  });
  it('never pick a neural voice that is not downloaded yet (a default starts no download)', () => {
    expect(defaultSpeakers([thorstenPending, ...builtins], 'de').map((v) => v.id)).toEqual([1075, 1071]);
  });
});

describe('OpenAI voice names', () => {
  it('speak with the built-in voice of the table when no English neural voice is installed', () => {
    expect(openAiVoice('nova', builtins)?.id).toBe(1007);
    expect(openAiVoice('echo', [...builtins, thorstenPending])?.id).toBe(1001);
    expect(openAiVoice('nosuch', builtins)).toBeNull();
  });
  it('speak with the installed English neural voices of their gender, spread in table order', () => {
    const all = [...builtins, lessac, ryan];
    for (const name of ['alloy', 'coral', 'nova', 'sage', 'shimmer', 'marin']) expect(openAiVoice(name, all)?.id, name).toBe(5001);
    for (const name of ['ash', 'ballad', 'echo', 'fable', 'onyx', 'verse', 'cedar']) expect(openAiVoice(name, all)?.id, name).toBe(5002);
    const second = rec(5099, 'piper:en_US-other-medium', 'en', 2, { neural: true });
    const spread = ['alloy', 'coral', 'nova'].map((n) => openAiVoice(n, [...all, second])?.id);
    expect(spread).toEqual([5001, 5099, 5001]);
  });
  it('skip a neural voice not downloaded yet', () => {
    expect(openAiVoice('alloy', [...builtins, { ...lessac, downloaded: false }])?.id).toBe(1005);
  });
});
