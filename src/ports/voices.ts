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
  /** Soundry addition: present (true) on neural voices only. */
  neural?: true;
  /** Soundry addition: present (false) on a neural voice whose model is downloaded by its first task (MODELS_AUTO_PULL). */
  downloaded?: false;
}

export interface VoiceLibrary {
  list(): Promise<VoiceRecord[]>;
  find(id: number): Promise<VoiceRecord | null>;
  /**
   * The catalog models a listed voice needs downloaded before it can speak (MODELS_AUTO_PULL); empty when none (or
   * for an unknown id). Looked up afresh, not from a cached list, so a download that just finished is not repeated.
   */
  modelsToDownload(id: number): Promise<readonly string[]>;
}
