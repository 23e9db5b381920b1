/** Phrase tables by spec language key. */
import { ja, ko, zh, zh_yue } from './cjk.js';
import { en } from './en.js';
import { ar, de, es, fr, pt, ru } from './european.js';
import type { Phrases } from './types.js';

export const PHRASES: Record<string, Phrases> = { en, es, fr, pt, de, ru, ar, zh, zh_yue, ja, ko };
