/**
 * Podcast host names. The TTS voice names ("English (US) Female 1") describe a voice; a host who says
 * "I'm English (US) Female 1" does not sound like a podcast. Each podcast voice therefore gets a first
 * name of its language, stable for the voice list: the i-th voice of a language and gender takes the
 * i-th name of that pool.
 */
/** The fields of a voice record that naming needs. */
export interface NamedVoice {
  id: number;
  language: string;
  /** 1 male, 2 female. */
  gender: number;
}

const NAMES: Record<string, { female: string[]; male: string[] }> = {
  en: { female: ['Emma', 'Olivia', 'Grace', 'Chloe', 'Lucy', 'Hannah', 'Amelia', 'Ruby'], male: ['James', 'Daniel', 'Henry', 'Oliver', 'Samuel', 'Thomas', 'Jack', 'Leo'] },
  es: { female: ['Lucía', 'Carmen', 'Sofía', 'Elena', 'Marta', 'Paula', 'Isabel', 'Clara'], male: ['Javier', 'Diego', 'Pablo', 'Carlos', 'Miguel', 'Andrés', 'Luis', 'Mateo'] },
  fr: { female: ['Camille', 'Chloé', 'Léa', 'Manon', 'Julie', 'Claire', 'Sophie', 'Inès'], male: ['Julien', 'Thomas', 'Hugo', 'Antoine', 'Nicolas', 'Lucas', 'Mathieu', 'Louis'] },
  pt: { female: ['Ana', 'Beatriz', 'Mariana', 'Juliana', 'Carolina', 'Fernanda', 'Larissa', 'Rita'], male: ['João', 'Pedro', 'Rafael', 'Lucas', 'Tiago', 'Bruno', 'Gabriel', 'Felipe'] },
  de: { female: ['Anna', 'Lena', 'Sophie', 'Laura', 'Julia', 'Katrin', 'Miriam', 'Clara'], male: ['Jonas', 'Felix', 'Lukas', 'Paul', 'Stefan', 'Tobias', 'Max', 'Jan'] },
  ru: { female: ['Анна', 'Мария', 'Ольга', 'Елена', 'Наталья', 'Ирина', 'Дарья', 'Ксения'], male: ['Иван', 'Алексей', 'Дмитрий', 'Сергей', 'Михаил', 'Андрей', 'Павел', 'Николай'] },
  ar: { female: ['ليلى', 'سارة', 'نور', 'مريم', 'هدى', 'ريم', 'سلمى', 'دينا'], male: ['كريم', 'عمر', 'يوسف', 'خالد', 'أحمد', 'سامي', 'طارق', 'رامي'] },
  zh: { female: ['小雨', '思琪', '雅婷', '晓燕', '佳怡', '文静', '欣然', '梦瑶'], male: ['子轩', '浩然', '明辉', '志强', '俊杰', '宇航', '建华', '天宇'] },
  zh_yue: { female: ['嘉欣', '詠詩', '凱琳', '美玲', '曉彤', '穎欣', '慧敏', '家怡'], male: ['家豪', '俊傑', '志明', '偉倫', '國華', '子健', '浩賢', '永康'] },
  ja: { female: ['さくら', 'ゆい', 'あおい', 'はるか', 'みさき', 'なつみ', 'ゆか', 'まい'], male: ['ひろし', 'たける', 'けんじ', 'しょう', 'だいき', 'ゆうと', 'りく', 'こうた'] },
  ko: { female: ['지은', '서연', '민지', '수아', '하은', '예린', '유진', '다은'], male: ['민준', '서준', '도윤', '현우', '지훈', '준호', '성민', '태현'] },
};

/**
 * The host name of every voice of a podcast language, by voice id. A pool that runs out numbers its
 * names ("Emma 2"); voices of other languages keep their display name.
 */
export function hostNames(voices: NamedVoice[]): Map<number, string> {
  const seen = new Map<string, number>();
  const out = new Map<number, string>();
  for (const v of voices) {
    const pools = NAMES[v.language];
    if (!pools) continue;
    const pool = v.gender === 2 ? pools.female : pools.male;
    const key = `${v.language}|${v.gender === 2 ? 2 : 1}`;
    const i = seen.get(key) ?? 0;
    seen.set(key, i + 1);
    const round = Math.floor(i / pool.length);
    out.set(v.id, round === 0 ? pool[i % pool.length]! : `${pool[i % pool.length]!} ${round + 1}`);
  }
  return out;
}
