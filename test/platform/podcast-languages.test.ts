import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';

const API = '/audio/api/v1/api-keys';
/** Three or four sentences per podcast language: enough for a one-minute episode. */
const TEXTS: Record<string, string> = {
  en: 'Bees pollinate a third of the food we eat. Without them, fruit and nut harvests would collapse. Farmers now rent hives to keep orchards productive. Scientists are studying why colonies have been shrinking.',
  zh: '蜜蜂为我们三分之一的食物授粉。没有蜜蜂，水果和坚果的收成会大幅下降。农民现在租用蜂箱来保持果园的产量。科学家正在研究蜂群为什么在减少。',
  zh_yue: '蜜蜂幫我哋三分之一嘅食物授粉。冇咗蜜蜂，生果同堅果嘅收成會大跌。農夫而家租蜂箱嚟保持果園嘅產量。科學家正研究點解蜂群喺度減少。',
  ar: 'تلقح النحل ثلث الطعام الذي نأكله. بدونها ستنهار محاصيل الفاكهة والمكسرات. يستأجر المزارعون الآن خلايا النحل للحفاظ على إنتاجية البساتين. يدرس العلماء سبب تقلص المستعمرات.',
  ru: 'Пчёлы опыляют треть продуктов, которые мы едим. Без них урожаи фруктов и орехов резко упали бы. Фермеры теперь арендуют ульи, чтобы сады давали урожай. Учёные изучают, почему пчелиные семьи сокращаются.',
  es: 'Las abejas polinizan un tercio de los alimentos que comemos. Sin ellas, las cosechas de frutas y nueces se desplomarían. Los agricultores ahora alquilan colmenas para mantener sus huertos. Los científicos estudian por qué las colonias se están reduciendo.',
  fr: "Les abeilles pollinisent un tiers de ce que nous mangeons. Sans elles, les récoltes de fruits et de noix s'effondreraient. Les agriculteurs louent désormais des ruches pour leurs vergers. Les scientifiques étudient pourquoi les colonies diminuent.",
  pt: 'As abelhas polinizam um terço dos alimentos que comemos. Sem elas, as colheitas de frutas e nozes entrariam em colapso. Os agricultores agora alugam colmeias para manter os pomares produtivos. Os cientistas estudam por que as colônias estão diminuindo.',
  de: 'Bienen bestäuben ein Drittel unserer Nahrung. Ohne sie würden die Ernten von Obst und Nüssen einbrechen. Landwirte mieten heute Bienenstöcke, damit ihre Obstgärten tragen. Forscher untersuchen, warum die Völker schrumpfen.',
  ja: 'ミツバチは私たちが食べる食物の三分の一を受粉させます。ミツバチがいなければ、果物やナッツの収穫は激減するでしょう。農家は今、果樹園のために巣箱を借りています。科学者たちは群れが減っている理由を研究しています。',
  ko: '꿀벌은 우리가 먹는 음식의 삼분의 일을 수분합니다. 꿀벌이 없다면 과일과 견과류 수확은 크게 줄어들 것입니다. 농부들은 이제 과수원을 위해 벌통을 빌립니다. 과학자들은 벌 군집이 줄어드는 이유를 연구하고 있습니다.',
};

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ WORKER_THREADS: '2' });
});
afterAll(async () => app?.close());

describe('a pasted text becomes a two-host episode in every podcast language, with no model installed', () => {
  it.each(Object.keys(TEXTS))('%s', async (language) => {
    const { key } = await app.newKey({ credits: 100 });
    const created = await app.post(`${API}/podcast/script/create`, { source_type: 4, text: TEXTS[language], duration: 1, style: 2, language }, key);
    expect(created.json.code, JSON.stringify(created.json)).toBe(100000);
    const s = await app.waitTask(`${API}/podcast/script/get`, 'global_id', created.json.data.global_id, key, 120_000);
    expect(s.data.status, JSON.stringify(s)).toBe('success');
    expect(s.data.language).toBe(language);
    expect(new Set(s.data.podcast_script.map((l: any) => l.voice_id)).size).toBe(2);
    const audio = await app.post(`${API}/podcast/audio/create`, { podcast_script: s.data.podcast_script, hightlights: s.data.hightlights, global_id: s.data.global_id, title: s.data.title, processed_content: s.data.processed_content }, key);
    const a = await app.waitTask(`${API}/podcast/audio/get`, 'global_id', audio.json.data.global_id, key, 180_000);
    expect(a.data.status, JSON.stringify(a)).toBe('success');
    expect(a.data.duration).toBeGreaterThan(5);
    expect((await fetch(a.data.file_url, { method: 'HEAD' })).status).toBe(200);
  }, 300_000);
});
