/**
 * The typed registries of task kinds. Each is a record over every TaskKind, so a kind without an API
 * side or a worker is a compile error, and an object literal cannot name a kind twice; the start-up
 * checks below refuse an entry filed under another kind's name and two kinds on one route.
 */
import type { TaskKind } from '../domain/task.js';
import type { TaskHandler } from '../jobs/handler.js';
import type { ApiKind } from './kind.js';

export type ApiKinds = { readonly [K in TaskKind]: ApiKind };
export type WorkerKinds = { readonly [K in TaskKind]: TaskHandler };

export function checkApiKinds(kinds: ApiKinds): ApiKinds {
  const paths = new Set<string>();
  for (const [name, entry] of Object.entries(kinds)) {
    if (entry.route.kind !== name || entry.api.kind !== name) {
      throw new Error(`kind registry: the entry filed under ${name} is for ${entry.route.kind}/${entry.api.kind}`);
    }
    for (const path of [entry.route.create, entry.route.get]) {
      if (paths.has(path)) throw new Error(`kind registry: two kinds claim the route ${path}`);
      paths.add(path);
    }
  }
  return kinds;
}

export function checkWorkerKinds(kinds: WorkerKinds): WorkerKinds {
  for (const [name, handler] of Object.entries(kinds)) {
    if (handler.kind !== name) throw new Error(`kind registry: the handler filed under ${name} is for ${handler.kind}`);
  }
  return kinds;
}
