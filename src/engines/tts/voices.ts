import type { EngineVoice } from '../../ports/engines.js';
import type { VoiceRecord } from '../../ports/voices.js';
import { EMOTION_NAMES } from './emotions.js';

export type { VoiceRecord } from '../../ports/voices.js';

/**
 * Numeric API ids of the built-in voices, written out once and never renumbered: clients store
 * them. A new voice gets the next free number; a removed voice's number is never reused.
 * 1001-1999 espeak, 2001-2099 flite.
 */
export const BUILTIN_VOICE_IDS: Readonly<Record<string, number>> = {
  'espeak:en-us:m1': 1001,
  'espeak:en-us:m3': 1002,
  'espeak:en-us:m7': 1003,
  'espeak:en-us:grandpa': 1004,
  'espeak:en-us:f1': 1005,
  'espeak:en-us:f4': 1006,
  'espeak:en-us:f3': 1007,
  'espeak:en-us:grandma': 1008,
  'espeak:en-gb:m1': 1009,
  'espeak:en-gb:f1': 1010,
  'espeak:cmn:m1': 1011,
  'espeak:cmn:m3': 1012,
  'espeak:cmn:m7': 1013,
  'espeak:cmn:grandpa': 1014,
  'espeak:cmn:f1': 1015,
  'espeak:cmn:f4': 1016,
  'espeak:cmn:f3': 1017,
  'espeak:cmn:grandma': 1018,
  'espeak:yue:m1': 1019,
  'espeak:yue:m3': 1020,
  'espeak:yue:m7': 1021,
  'espeak:yue:grandpa': 1022,
  'espeak:yue:f1': 1023,
  'espeak:yue:f4': 1024,
  'espeak:yue:f3': 1025,
  'espeak:yue:grandma': 1026,
  'espeak:ar:m1': 1027,
  'espeak:ar:m3': 1028,
  'espeak:ar:m7': 1029,
  'espeak:ar:grandpa': 1030,
  'espeak:ar:f1': 1031,
  'espeak:ar:f4': 1032,
  'espeak:ar:f3': 1033,
  'espeak:ar:grandma': 1034,
  'espeak:ru:m1': 1035,
  'espeak:ru:m3': 1036,
  'espeak:ru:m7': 1037,
  'espeak:ru:grandpa': 1038,
  'espeak:ru:f1': 1039,
  'espeak:ru:f4': 1040,
  'espeak:ru:f3': 1041,
  'espeak:ru:grandma': 1042,
  'espeak:es:m1': 1043,
  'espeak:es:m3': 1044,
  'espeak:es:m7': 1045,
  'espeak:es:grandpa': 1046,
  'espeak:es:f1': 1047,
  'espeak:es:f4': 1048,
  'espeak:es:f3': 1049,
  'espeak:es:grandma': 1050,
  'espeak:es-419:m1': 1051,
  'espeak:es-419:f1': 1052,
  'espeak:fr:m1': 1053,
  'espeak:fr:m3': 1054,
  'espeak:fr:m7': 1055,
  'espeak:fr:grandpa': 1056,
  'espeak:fr:f1': 1057,
  'espeak:fr:f4': 1058,
  'espeak:fr:f3': 1059,
  'espeak:fr:grandma': 1060,
  'espeak:pt-br:m1': 1061,
  'espeak:pt-br:m3': 1062,
  'espeak:pt-br:m7': 1063,
  'espeak:pt-br:grandpa': 1064,
  'espeak:pt-br:f1': 1065,
  'espeak:pt-br:f4': 1066,
  'espeak:pt-br:f3': 1067,
  'espeak:pt-br:grandma': 1068,
  'espeak:pt:m1': 1069,
  'espeak:pt:f1': 1070,
  'espeak:de:m1': 1071,
  'espeak:de:m3': 1072,
  'espeak:de:m7': 1073,
  'espeak:de:grandpa': 1074,
  'espeak:de:f1': 1075,
  'espeak:de:f4': 1076,
  'espeak:de:f3': 1077,
  'espeak:de:grandma': 1078,
  'espeak:ko:m1': 1079,
  'espeak:ko:m3': 1080,
  'espeak:ko:m7': 1081,
  'espeak:ko:grandpa': 1082,
  'espeak:ko:f1': 1083,
  'espeak:ko:f4': 1084,
  'espeak:ko:f3': 1085,
  'espeak:ko:grandma': 1086,
  'espeak:ja:m1': 1087,
  'espeak:ja:m3': 1088,
  'espeak:ja:m7': 1089,
  'espeak:ja:grandpa': 1090,
  'espeak:ja:f1': 1091,
  'espeak:ja:f4': 1092,
  'espeak:ja:f3': 1093,
  'espeak:ja:grandma': 1094,
  'flite:slt': 2001,
  'flite:kal16': 2002,
  'flite:awb': 2003,
  'flite:rms': 2004,
};

/** Enum values (docs/api.md): gender 1 male, 2 female; age 1 child, 2 young, 3 adult, 4 senior. */
export const GENDER_CODES = { male: 1, female: 2 } as const;
export const AGE_CODES = { child: 1, young: 2, adult: 3, senior: 4 } as const;

/** Every built-in voice takes every emotion: prosody is applied by the pipeline, not by the voice. */
export const ALL_EMOTIONS: readonly string[] = EMOTION_NAMES;

/** The API id of a voice: the built-in table first, then the id an extra engine assigned itself. */
export function apiIdOf(voice: EngineVoice): number | null {
  return BUILTIN_VOICE_IDS[voice.key] ?? voice.apiId ?? null;
}

export function toVoiceRecord(voice: EngineVoice, id: number): VoiceRecord {
  return {
    id,
    gender: GENDER_CODES[voice.gender],
    language: voice.language,
    age: AGE_CODES[voice.age],
    emotion: [...ALL_EMOTIONS],
    name: voice.key,
    display_name: voice.displayName,
    ...(voice.neural ? { neural: true as const } : {}),
    ...(voice.pullModels?.length ? { downloaded: false as const } : {}),
  };
}

/** Language filter: 'all' (or nothing) keeps every voice. */
export function filterByLanguage(records: VoiceRecord[], language?: string): VoiceRecord[] {
  return !language || language === 'all' ? records : records.filter((r) => r.language === language);
}

export function filterByGender(records: VoiceRecord[], gender?: number | 'male' | 'female'): VoiceRecord[] {
  if (gender === undefined) return records;
  const code = typeof gender === 'number' ? gender : GENDER_CODES[gender];
  return records.filter((r) => r.gender === code);
}
