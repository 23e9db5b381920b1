/** A TTS voice as the spec's voice library lists it (plus the engine that renders it). */
export interface VoiceRecord {
  id: number;
  /** 1 male, 2 female (docs/api.md). */
  gender: number;
  language: string;
  /** 1 child, 2 young, 3 adult, 4 senior (docs/api.md). */
  age: number;
  emotion: string[];
  name: string;
  display_name: string;
}

export interface VoiceLibrary {
  list(): Promise<VoiceRecord[]>;
  find(id: number): Promise<VoiceRecord | null>;
  /** Ids of installed neural voices, best first: the defaults where Soundry picks voices itself (podcast hosts). */
  preferred?(): Promise<number[]>;
}
