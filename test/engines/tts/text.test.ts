import { describe, expect, it } from 'vitest';
import { chooseAutoEmotion, EMOTION_NAMES, EMOTION_PROSODY, emotionId, emotionName, prosodyFor } from '../../../src/engines/tts/emotions.js';
import { countCodePoints, PAUSES, splitText } from '../../../src/engines/tts/text.js';
import { BUILTIN_VOICE_IDS } from '../../../src/engines/tts/voices.js';

describe('splitText', () => {
  it('splits sentences per script and keeps abbreviations and decimals whole', () => {
    expect(splitText('Dr. Smith paid 3.5 dollars. Then he left! Why?', 'en').map((c) => c.text)).toEqual([
      'Dr. Smith paid 3.5 dollars.',
      'Then he left!',
      'Why?',
    ]);
    // Full-width ！？ come out as ASCII after NFKC normalization; they still split.
    expect(splitText('你好。今天天气很好！你呢？', 'zh').map((c) => c.text)).toEqual(['你好。', '今天天气很好!', '你呢?']);
    expect(splitText('كيف حالك؟ أنا بخير.', 'ar').map((c) => c.text)).toEqual(['كيف حالك؟', 'أنا بخير.']);
  });

  it('turns line breaks into pauses: newline short, blank line long, none at the end', () => {
    const chunks = splitText('One.\nTwo.\n\nThree.\n', 'en');
    expect(chunks.map((c) => c.pauseAfterSeconds)).toEqual([PAUSES.line, PAUSES.paragraph, 0]);
    expect(splitText('Yes. No.', 'en')[0]!.pauseAfterSeconds).toBe(PAUSES.sentence);
  });

  it('cuts overlong sentences at clause marks, then spaces, counting code points', () => {
    const long = Array.from({ length: 30 }, (_, i) => `word${i}`).join(' ') + ', ' + 'tail '.repeat(20);
    const chunks = splitText(long, 'en', { maxChars: 60 });
    expect(chunks.length).toBeGreaterThan(2);
    for (const c of chunks) expect(countCodePoints(c.text)).toBeLessThanOrEqual(60);
    const emoji = '😀'.repeat(10);
    expect(countCodePoints(emoji)).toBe(10);
    const cjk = '这是一个很长的句子，'.repeat(20);
    for (const c of splitText(cjk, 'zh')) expect(countCodePoints(c.text)).toBeLessThanOrEqual(80);
  });

  it('drops chunks with nothing to say and strips emoji', () => {
    expect(splitText('... !!! \n\n 😀', 'en')).toEqual([]);
    expect(splitText('Great 🎉 news.', 'en')[0]!.text).toBe('Great news.');
  });
});

describe('emotions', () => {
  it('maps ids and names both ways and multiplies speed into the rate', () => {
    expect(EMOTION_NAMES).toHaveLength(9);
    expect(emotionName(3)).toBe('sad');
    expect(emotionName(9)).toBeNull();
    expect(emotionId('calm')).toBe(8);
    expect(prosodyFor('happy', 2).rate).toBeCloseTo(EMOTION_PROSODY.happy.rate * 2);
    expect(EMOTION_PROSODY.happy.pitch).toBeGreaterThan(EMOTION_PROSODY.sad.pitch);
  });

  it('chooses an emotion from cues, emoji and punctuation, neutral otherwise', () => {
    expect(emotionName(chooseAutoEmotion('I am so happy today, this is wonderful!', 'en'))).toBe('happy');
    expect(emotionName(chooseAutoEmotion('我好伤心，一直在哭。', 'zh'))).toBe('sad');
    expect(emotionName(chooseAutoEmotion('Je suis en colère, je déteste ça !', 'fr'))).toBe('angry');
    expect(emotionName(chooseAutoEmotion('What?! No way!', 'en'))).toBe('surprised');
    expect(emotionName(chooseAutoEmotion('今日は 😢', 'ja'))).toBe('sad');
    expect(chooseAutoEmotion('The rainbow is a meteorological phenomenon.', 'en')).toBe(0);
    // "радуга" (rainbow) must not count as "рад" (glad).
    expect(chooseAutoEmotion('Радуга — атмосферное явление.', 'ru')).toBe(0);
  });
});

describe('voice ids', () => {
  it('are unique numbers', () => {
    const ids = Object.values(BUILTIN_VOICE_IDS);
    expect(new Set(ids).size).toBe(ids.length);
  });
});

describe('links', () => {
  it('drops the scheme and www. of a link, keeping the host and path', async () => {
    const { normalizeText } = await import('../../../src/engines/tts/text.js');
    expect(normalizeText('See https://www.example.com/docs or HTTP://test.org.')).toBe('See example.com/docs or test.org.');
    expect(normalizeText('the http protocol')).toBe('the http protocol');
  });
});
