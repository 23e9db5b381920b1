import type { Prosody } from '../../ports/engines.js';
import { EMOTION_NAMES, type EmotionName } from '../../domain/vocabulary.js';

/** Spec emotion ids, in order: 0 auto, 1 happy ... 8 calm. */
export { EMOTION_NAMES, type EmotionName };

export function emotionName(id: number): EmotionName | null {
  return Number.isInteger(id) ? (EMOTION_NAMES[id] ?? null) : null;
}

export function emotionId(name: string): number | null {
  const i = (EMOTION_NAMES as readonly string[]).indexOf(name);
  return i >= 0 ? i : null;
}

export const NEUTRAL: Prosody = { rate: 1, pitch: 1, pitchRange: 1, energy: 1 };

/**
 * Emotion -> prosody multipliers, after the acoustic correlates reported for emotional speech
 * (high-arousal emotions: higher, wider, faster, louder; low-arousal: the opposite). Kept moderate:
 * a formant synthesizer pushed far sounds like a robot, not like a feeling.
 */
export const EMOTION_PROSODY: Record<EmotionName, Prosody> = {
  // Auto resolves to another entry (chooseAutoEmotion); on its own it means "as the voice speaks".
  auto: NEUTRAL,
  // Joy: raised pitch, lively wide intonation, a little faster and brighter.
  happy: { pitch: 1.14, pitchRange: 1.45, rate: 1.06, energy: 1.05 },
  // Hot anger: loud and fast, wide emphatic contours, pitch only slightly up.
  angry: { pitch: 1.05, pitchRange: 1.5, rate: 1.1, energy: 1.25 },
  // Sadness: low, flat, slow and soft.
  sad: { pitch: 0.88, pitchRange: 0.55, rate: 0.84, energy: 0.75 },
  // Fear: high pitch, fast, somewhat unsteady (wider range), not loud.
  afraid: { pitch: 1.12, pitchRange: 1.25, rate: 1.12, energy: 0.85 },
  // Disgust: lowered pitch, slow, drawn-out delivery.
  disgusted: { pitch: 0.93, pitchRange: 0.9, rate: 0.88, energy: 0.95 },
  // Melancholy: a quieter, gentler sadness; low, narrow, slow.
  melancholic: { pitch: 0.93, pitchRange: 0.7, rate: 0.88, energy: 0.8 },
  // Surprise: high pitch and the widest range (large rises), normal tempo.
  surprised: { pitch: 1.16, pitchRange: 1.65, rate: 1.02, energy: 1.1 },
  // Calm: slightly low, narrow, slower, soft.
  calm: { pitch: 0.97, pitchRange: 0.8, rate: 0.92, energy: 0.9 },
};

/** Final prosody: the emotion's contour with the user's speed multiplied into the rate. */
export function prosodyFor(emotion: EmotionName, speed: number): Prosody {
  const p = EMOTION_PROSODY[emotion];
  return { ...p, rate: p.rate * speed };
}

type Scored = Exclude<EmotionName, 'auto'>;

/**
 * Small multilingual cue lists. Latin/Cyrillic/Arabic entries match at word starts (so "happ" covers
 * happy/happiness); CJK entries match anywhere. Precision over recall: a missed cue costs nothing,
 * a wrong one sounds odd.
 */
const CUES: Record<Scored, string[]> = {
  happy: [
    'happ', 'glad', 'wonderful', 'love', 'awesome', 'fantastic', 'hooray', 'yay', 'congratulat', 'delight',
    'feliz', 'alegr', 'genial', 'heureu', 'joie', 'génial', 'glücklich', 'freude', 'wunderbar', 'ótimo',
    'счастлив', 'радост', 'отлично', 'سعيد', 'فرح', 'رائع',
    '开心', '高兴', '快乐', '太好了', '哈哈', '幸福', '開心', '嬉しい', 'うれしい', '楽しい', 'やった', '행복', '기뻐', '기쁘', '좋아',
  ],
  angry: [
    'angry', 'furious', 'hate', 'damn', 'outrage', 'stop it', 'how dare', 'enfad', 'odio', 'furios', 'colère', 'fâché',
    'déteste', 'wütend', 'hasse', 'sauer', 'zorn', 'raiva', 'злю', 'злой', 'ненавиж', 'бесит', 'غاضب', 'أكره',
    '生气', '愤怒', '可恶', '滚', '嬲', '怒', 'ムカつく', 'ふざけるな', '화가', '화나', '짜증',
  ],
  sad: [
    'sad', 'sorrow', 'crying', 'cried', 'tears', 'heartbroken', 'unfortunately', 'miss you', 'triste', 'llor', 'pleur', 'malheureu',
    'traurig', 'weinen', 'leider', 'chorar', 'грустн', 'печаль', 'плач', 'жаль', 'حزين', 'أبكي',
    '伤心', '难过', '悲伤', '哭', '遗憾', '傷心', '悲しい', '泣', '残念', '슬프', '슬퍼', '울고',
  ],
  afraid: [
    'afraid', 'scared', 'fear', 'terrif', 'help me', 'frighten', 'miedo', 'asustad', 'peur', 'effray', 'angst', 'furcht',
    'medo', 'страшно', 'боюсь', 'страх', 'خائف', 'خوف',
    '害怕', '恐惧', '救命', '可怕', '好驚', '怖い', 'こわい', '助けて', '무서', '두려', '살려',
  ],
  disgusted: [
    'disgust', 'gross', 'yuck', 'eww', 'nasty', 'repuls', 'asco', 'asqueros', 'dégoût', 'beurk', 'ekel', 'igitt', 'nojo',
    'отвратительн', 'мерзк', 'مقرف', 'مقزز', '恶心', '噁心', '作呕', '気持ち悪い', 'キモい', '역겨', '징그',
  ],
  melancholic: [
    'nostalgi', 'long ago', 'memories', 'remember when', 'lonely', 'once upon', 'recuerdo', 'souvenir', 'autrefois',
    'erinnerung', 'damals', 'saudade', 'lembran', 'когда-то', 'воспоминан', 'тоск', 'ذكريات', 'حنين',
    '回忆', '怀念', '往事', '孤独', '懐かしい', '思い出', '寂しい', '그리움', '그립', '추억', '외로',
  ],
  surprised: [
    'wow', 'no way', 'unbelievable', 'really?', 'oh my', 'what?!', 'increíble', 'sorpresa', 'incroyable', 'quoi ?',
    'unglaublich', 'überrasch', 'nossa', 'неужели', 'вот это да', 'ничего себе', 'ماذا؟', 'مفاجأة',
    '哇', '真的吗', '竟然', '居然', '天哪', '真係', 'えっ', '本当に？', 'まさか', 'びっくり', '진짜?', '정말?', '세상에', '헐',
  ],
  calm: [
    'relax', 'calm', 'breathe', 'gently', 'peaceful', 'quiet', 'slowly', 'tranquil', 'sereno', 'calme', 'paisible',
    'ruhig', 'entspann', 'sanft', 'calma', 'спокойн', 'тихо', 'расслаб', 'هادئ', 'استرخ',
    '放松', '平静', '安静', '慢慢', '静か', 'ゆっくり', '落ち着', '편안', '차분', '천천히',
  ],
};

const EMOJI_CUES: Record<Scored, RegExp> = {
  happy: /[😀😃😄😁😆😊🙂😍🥰😘🥳🎉❤💕👍☺]/gu,
  angry: /[😠😡🤬💢👿]/gu,
  sad: /[😢😭😞😔☹🙁💔😿]/gu,
  afraid: /[😨😰😱😟🙀]/gu,
  disgusted: /[🤢🤮😖😣]/gu,
  melancholic: /[🥀🌧😪]/gu,
  surprised: /[😮😯😲🤯😳❗]/gu,
  calm: /[😌🧘🍃🌿🕊]/gu,
};

const CJK = /[\u3040-\u30FF\u3400-\u9FFF\uAC00-\uD7AF]/u;

function cueCount(text: string, cue: string): number {
  if (CJK.test(cue)) return text.split(cue).length - 1;
  const escaped = cue.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  // Word start: not preceded by a letter ("rad" must not match "comrade").
  return (text.match(new RegExp(`(?<!\\p{L})${escaped}`, 'gu')) ?? []).length;
}

/**
 * Picks an emotion for emotion id 0 (auto) from cue words, emoji and punctuation. Returns the
 * winning id (1..8), or 0 when nothing stands out: the voice then speaks neutrally, which is the
 * right default for plain informative text (calm would slow every plain text down).
 */
export function chooseAutoEmotion(text: string, _language: string): number {
  const lower = text.toLowerCase();
  const scores = new Map<Scored, number>();
  for (const name of Object.keys(CUES) as Scored[]) {
    let score = 0;
    for (const cue of CUES[name]) score += cueCount(lower, cue);
    score += 1.5 * (text.match(EMOJI_CUES[name]) ?? []).length;
    scores.set(name, score);
  }
  const sentences = Math.max(1, (text.match(/[.!?。！？؟…]+/gu) ?? []).length);
  const exclaims = (text.match(/[!！]/gu) ?? []).length;
  const interrobangs = (text.match(/[!?！？]{2,}|[?？][!！]|[!！][?？]/gu) ?? []).length;
  // "?!" is surprise; many "!" amplify whatever else is there, or on their own read as excitement.
  scores.set('surprised', scores.get('surprised')! + 1.5 * interrobangs);
  const exclaimDensity = exclaims / sentences;
  let best: Scored | null = null;
  let bestScore = 0;
  for (const [name, score] of scores) {
    if (score > bestScore) {
      best = name;
      bestScore = score;
    }
  }
  if (best && (best === 'happy' || best === 'angry' || best === 'surprised')) bestScore += exclaimDensity;
  if (best && bestScore >= 1) return EMOTION_NAMES.indexOf(best);
  if (exclaimDensity >= 0.5) return EMOTION_NAMES.indexOf('happy');
  return 0;
}
