import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';

/**
 * What the podcast creates refuse at once (100002 naming the field, nothing stored or charged) because the task
 * would otherwise get it wrong later: one host talking to herself, highlights pointing outside the script, and
 * lines with nothing to say.
 */
const API = '/audio/api/v1/api-keys';
const SCRIPT = `${API}/podcast/script/create`;
const AUDIO = `${API}/podcast/audio/create`;
const TEXT = `Bees pollinate most flowering plants. A colony can hold fifty thousand bees in summer.
Beekeepers move hives to orchards in spring. Honey keeps for years when it is sealed.`;

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ WORKER_THREADS: '2' });
});
afterAll(async () => app?.close());

const storedPodcasts = async () => (await app.container.tasks.list({ limit: 10_000 })).filter((t) => t.kind.startsWith('podcast')).length;

async function refused(path: string, body: Record<string, unknown>, key: string, message: string) {
  const before = await storedPodcasts();
  const res = await app.post(path, body, key);
  expect(res.json.code, JSON.stringify(res.json).slice(0, 400)).toBe(100002);
  expect(res.json.message).toBe(`Invalid parameters: ${message}`);
  expect(res.json.data).toEqual({});
  expect(await storedPodcasts()).toBe(before);
}

async function script(key: string, body: Record<string, unknown> = {}) {
  const created = await app.post(SCRIPT, { source_type: 4, text: TEXT, speakers: [], style: 1, duration: 1, use_mode: 'ai', commercial_use: 0, language: 'en', ...body }, key);
  expect(created.json.code, JSON.stringify(created.json)).toBe(100000);
  const s = await app.waitTask(`${API}/podcast/script/get`, 'global_id', created.json.data.global_id, key, 120_000);
  expect(s.data.status, JSON.stringify(s).slice(0, 400)).toBe('success');
  return s.data;
}

async function englishVoices(key: string): Promise<{ female: number; male: number }> {
  const records = (await app.get(`${API}/podcast/voices?language=en&page_size=500`, key)).json.data.records as Array<{ id: number; gender: number }>;
  return { female: records.find((v) => v.gender === 2)!.id, male: records.find((v) => v.gender === 1)!.id };
}

describe('podcast creates refuse what the task would get wrong', () => {
  it('speakers: one voice, or the same voice twice, is refused; two voices make a conversation', async () => {
    const { key } = await app.newKey();
    const { female, male } = await englishVoices(key);
    const body = { source_type: 4, text: TEXT, style: 1, duration: 1, language: 'en' };
    const one = 'speakers: a podcast has two or more hosts: give two or more voice ids, or none for the default pair (got one)';
    await refused(SCRIPT, { ...body, speakers: [female] }, key, one);
    await refused(SCRIPT, { ...body, speakers: [String(female)] }, key, one);
    await refused(SCRIPT, { ...body, speakers: [female, female] }, key, `speakers[1]: voice ${female} is already speakers[0]: each host needs a voice of their own`);
    await refused(SCRIPT, { ...body, speakers: [male, female, male] }, key, `speakers[2]: voice ${male} is already speakers[0]: each host needs a voice of their own`);

    const s = await script(key, { speakers: [female, male] });
    const names = new Map(s.podcast_script.map((l: any) => [l.voice_id, l.name]));
    expect(names.size).toBe(2);
    expect(new Set(names.values()).size).toBe(2);
    // Nobody greets or introduces herself as her own co-host.
    for (const l of s.podcast_script) expect(l.text).not.toMatch(new RegExp(`\\b(Hi|Hello|co-host|here with) ${l.name}\\b`));
  }, 180_000);

  it('hightlights: indexes outside the script or a backwards range are refused; ranges inside it get their lines\' start times', async () => {
    const { key } = await app.newKey();
    const s = await script(key);
    const [a, b] = [s.podcast_script.find((l: any) => l.role === 'A'), s.podcast_script.find((l: any) => l.role === 'B')];
    // Nine lines of the script's own hosts, as an edited script: indexes 0 to 8.
    const lines = Array.from({ length: 9 }, (_, i) => ({ ...(i % 2 ? b : a), text: `This is line number ${i + 1} of the episode.` }));
    const hl = (start: number, end: number) => ({ highlight: 'Bees', index: 0, script_start_index: start, script_end_index: end });
    const audio = (hightlights: unknown[]) => ({ title: s.title, processed_content: s.processed_content, podcast_script: lines, hightlights, global_id: s.global_id });
    const range = "must be between 0 and 8, the script's last line index (lines count from 0)";
    await refused(AUDIO, audio([hl(999, 1999)]), key, `hightlights[0].script_start_index: 999 is outside the script: ${range}; hightlights[0].script_end_index: 1999 is outside the script: ${range}`);
    await refused(AUDIO, audio([hl(0, 1), hl(-5, 2)]), key, `hightlights[1].script_start_index: -5 is outside the script: ${range}`);
    await refused(AUDIO, audio([hl(3, 9)]), key, `hightlights[0].script_end_index: 9 is outside the script: ${range}`);
    await refused(AUDIO, audio([hl(5, 1)]), key, 'hightlights[0].script_start_index: 5 is after hightlights[0].script_end_index 1: a highlight runs from its first line to its last');
    await refused(
      AUDIO,
      { ...audio([hl(1, 1)]), podcast_script: [lines[0]] },
      key,
      "hightlights[0].script_start_index: 1 is outside the script: must be 0, the script's only line (lines count from 0); hightlights[0].script_end_index: 1 is outside the script: must be 0, the script's only line (lines count from 0)",
    );

    // The edges and one line alone are inside: accepted, and each starts where its first line does.
    const created = await app.post(AUDIO, audio([hl(0, 0), hl(3, 5), hl(8, 8)]), key);
    expect(created.json.code, JSON.stringify(created.json)).toBe(100000);
    const done = await app.waitTask(`${API}/podcast/audio/get`, 'global_id', created.json.data.global_id, key, 180_000);
    expect(done.data.status, JSON.stringify(done.data).slice(0, 400)).toBe('success');
    const [first, middle, last] = done.data.hightlights.map((h: any) => h.start_time);
    expect(first).toBeGreaterThan(0);
    expect(middle).toBeGreaterThan(first);
    expect(last).toBeGreaterThan(middle);
    expect(last).toBeLessThan(done.data.duration);
  }, 300_000);

  it('podcast_script: a line with nothing to say is left out like an empty one; a script of only such lines is refused', async () => {
    const { key } = await app.newKey();
    const s = await script(key);
    const [a, b] = [s.podcast_script.find((l: any) => l.role === 'A'), s.podcast_script.find((l: any) => l.role === 'B')];
    // The TTS create refuses such text at once: the podcast lines follow the same rule.
    await refused(`${API}/tts/task/create`, { voice_id: Number(a.voice_id), emotion: 0, speed: 1, language: 'all', text: '👍🎉' }, key, 'text: must contain something to say');
    const nothing = [{ ...a, text: '👍🎉' }, { ...b, text: '   ' }, { ...a, text: '...!?' }, { ...b, text: '★ ★ ☆' }];
    await refused(AUDIO, { podcast_script: nothing, global_id: s.global_id }, key, 'podcast_script: no line has something to say (a line that is empty or has no letter or digit is left out)');

    // Mixed in with lines that speak, they are removed lines: the episode is made (it used to fail with "nothing to say").
    const script3 = [{ ...a, text: 'Welcome to the show about bees.' }, { ...b, text: '😂😂' }, { ...b, text: 'Bees keep the orchards going.' }, { ...a, text: '!!!' }, { ...a, text: 'Thanks for listening.' }];
    const created = await app.post(AUDIO, { podcast_script: script3, hightlights: [{ highlight: 'Bees', index: 0, script_start_index: 1, script_end_index: 2 }], global_id: s.global_id }, key);
    expect(created.json.code, JSON.stringify(created.json)).toBe(100000);
    const done = await app.waitTask(`${API}/podcast/audio/get`, 'global_id', created.json.data.global_id, key, 180_000);
    expect(done.data.status, JSON.stringify(done.data).slice(0, 400)).toBe('success');
    expect(done.data.podcast_script.map((l: any) => l.text)).toEqual(['Welcome to the show about bees.', 'Bees keep the orchards going.', 'Thanks for listening.']);
    // A highlight starting on a removed line starts at the next spoken one, as for an emptied line.
    expect(done.data.hightlights[0].start_time).toBeGreaterThan(0);
  }, 300_000);

  it('an episode holds its minimum price from its create: episodes created together on a small balance are not spoken for free', async () => {
    const { key } = await app.newKey({ credits: 15 });
    const s = await script(key);
    const [a, b] = [s.podcast_script.find((l: any) => l.role === 'A'), s.podcast_script.find((l: any) => l.role === 'B')];
    const body = { podcast_script: [{ ...a, text: 'Welcome to a short show.' }, { ...b, text: 'Thanks for listening.' }], global_id: s.global_id };
    // 15 credits: the first episode holds 10, the next the 5 left (the spec lets a lower balance pay in part), the third is refused.
    const made = await Promise.all([0, 1, 2].map(() => app.post(AUDIO, body, key)));
    expect(made.map((m) => m.json.code).sort()).toEqual([100000, 100000, 100100]);
    const funds = (await app.get(`${API}/account/balance`, key)).json.data;
    expect(funds).toMatchObject({ balance: 15, available: 0 });
    expect([10, 15]).toContain(funds.held); // 15 while both wait; 10 if one already finished and was charged
    for (const m of made.filter((x) => x.json.code === 100000)) {
      const done = await app.waitTask(`${API}/podcast/audio/get`, 'global_id', m.json.data.global_id, key, 180_000);
      expect(done.data.status, JSON.stringify(done.data).slice(0, 400)).toBe('success');
    }
    // Both episodes charged, together the whole balance (10, then the 5 left); before holds the third was made too, for nothing.
    expect((await app.get(`${API}/account/balance`, key)).json.data).toMatchObject({ balance: 0, held: 0, available: 0 });
  }, 300_000);
});
