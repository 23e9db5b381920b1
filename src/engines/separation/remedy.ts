import { MODEL_CATALOG, type ModelEntry } from '../../models/catalog.js';
import { STEMS_BY_MODEL_TYPE } from './engine.js';
import { NEURAL_PRESETS, presetEntry, type NeuralPreset } from './onnx/presets.js';
import { routeFor } from './onnx/routes.js';

/**
 * What a user is told when the built-in engine found a stem nowhere in the input (docs/api.md, "Separation"): such a
 * stem is silence, not a result, so the task fails uncharged and says what would serve it. The models named are
 * derived from the catalog and the engines' routes at run time, so a model catalogued later is named without a
 * change here.
 */

/** Why the built-in engine ran, and not a neural model, for a model type. */
export type RemedyCause =
  /** No catalogued model has a route for the model type. */
  | 'none'
  /** A catalogued model would serve it, but it is not installed (MODELS_AUTO_PULL off, or a forced other model). */
  | 'not-installed'
  /** MODELS_AUTO_PULL tried to download it and could not (the task's engine note says why: operator detail). */
  | 'download-failed'
  /** It is installed but would not load. */
  | 'load-failed'
  /** SEPARATION_ENGINE=builtin: no model is ever loaded. */
  | 'builtin-only';

export interface SeparationRemedy {
  cause: RemedyCause;
  /** Catalog names that together give the model type a neural route (empty for `none`). */
  models: string[];
  /** Operator detail (download URLs, checksums, retry timing, file paths): for the server log, never the user. */
  detail?: string;
}

/**
 * The catalog models whose installation gives `modelType` a neural route: among every preset the catalog provides,
 * the route the auto-pull would take (models that are never pulled on their own only when nothing else serves).
 */
export function servingModels(modelType: number, catalog: readonly ModelEntry[] = MODEL_CATALOG, presets: readonly NeuralPreset[] = NEURAL_PRESETS): string[] {
  const catalogued = presets.filter((p) => presetEntry(p, catalog) !== undefined);
  const stems = (t: number) => STEMS_BY_MODEL_TYPE[t] ?? [];
  const pulledOnTheirOwn = catalogued.filter((p) => !('autoPull' in p) || p.autoPull !== false);
  const route = routeFor(modelType, pulledOnTheirOwn, stems) ?? routeFor(modelType, catalogued, stems);
  return route ? route.presets.map((p) => presetEntry(p, catalog)!.name) : [];
}

const stemWord = (s: string) => s.replace(/_/g, ' ');

function list(words: readonly string[]): string {
  if (words.length <= 1) return words.join('');
  return `${words.slice(0, -1).join(', ')} and ${words[words.length - 1]}`;
}

/** `soundry models pull A` (and `soundry models pull B`): the CLI pulls one model per command. */
function pullCommands(models: readonly string[]): string {
  return list(models.map((m) => `\`soundry models pull ${m}\``));
}

/**
 * The failed task's message: which stems were not found, what would have served them and how an operator gets it,
 * and that nothing was charged. Names no URL, path or retry timing (those go to the log).
 */
export function unfoundStemsMessage(modelType: number, unfound: readonly string[], remedy: SeparationRemedy | undefined): string {
  const what = list(unfound.map(stemWord));
  const found = `The built-in engine could not find ${what} in this input`;
  const models = remedy?.models ?? [];
  const named = models.length ? ` (${models.join(' with ')})` : '';
  let why: string;
  let how = '';
  switch (remedy?.cause) {
    case 'download-failed':
      why = `the model that separates ${what}${named} could not be downloaded`;
      how = models.length ? ` Try again later, or an operator can install it with ${pullCommands(models)}.` : ' Try again later.';
      break;
    case 'load-failed':
      why = `the installed model that separates ${what}${named} could not be loaded`;
      how = ' An operator can check it with `soundry models list --kind separation` and pull it again.';
      break;
    case 'builtin-only':
      why = 'this server is set to use only its built-in separation engine';
      if (models.length) how = ` An operator can set SEPARATION_ENGINE=auto and install a model that separates ${what} with ${pullCommands(models)}.`;
      break;
    case 'none':
    case undefined:
      why = `no model this server knows can separate ${what}`;
      break;
    default:
      why = `no installed model can separate ${what}`;
      if (models.length) how = ` An operator can install one with ${pullCommands(models)}.`;
  }
  return `${found}, and ${why}; nothing was charged.${how}${narrowerType(modelType, unfound)}`;
}

/** Another model type whose stems are exactly the ones that were found (320 without piano and guitar is 501). */
function narrowerType(modelType: number, unfound: readonly string[]): string {
  const named = (t: number) => (STEMS_BY_MODEL_TYPE[t] ?? []).filter((s) => s !== 'other');
  const found = named(modelType).filter((s) => !unfound.includes(s));
  if (found.length === 0) return '';
  const same = Object.keys(STEMS_BY_MODEL_TYPE)
    .map(Number)
    .find((t) => t !== modelType && named(t).length === found.length && named(t).every((s) => found.includes(s)));
  return same === undefined ? '' : ` Model type ${same} separates ${list([...(STEMS_BY_MODEL_TYPE[same] ?? [])].map(stemWord))}.`;
}
