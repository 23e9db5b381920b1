import type { z } from 'zod';
import type { QueriedTask, TaskKind } from '../domain/task.js';
import type { Caller } from '../services/auth.js';

export interface PreparedTask {
  /** What the worker needs, stored with the task (the kind's versioned params schema). */
  params: { v: number };
  /** The price when it is known at create time (TTS); null when it depends on the input's duration. */
  knownPrice: number | null;
  /**
   * Where the price is not known but has a floor whose shortfall the spec lets the balance pay in part (podcast
   * audio: at least 10, "the balance is set to zero" when lower): held from the create as far as what is
   * available goes (NewTask.holdUpTo).
   */
  holdUpTo?: number;
}

export interface PresentTools {
  /** An expiring URL for a stored result file (never outliving the task). */
  fileUrl(key: string): Promise<string>;
  /** Queue position of a waiting task (see JobQueue.position). */
  position(taskId: string): Promise<number | null>;
  /** The task's stored params, read only when asked (a query does not read them otherwise: QueriedTask). */
  params(): Promise<Record<string, unknown>>;
}

/** The API side of one task kind: checks at create, the query's data at get. */
export interface KindApi<Body> {
  readonly kind: TaskKind;
  prepare(body: Body, caller: Caller): Promise<PreparedTask>;
  present(task: QueriedTask, tools: PresentTools): Promise<Record<string, unknown>>;
}

/** How one kind appears in the spec: its two operations, its body, and the names the spec gives its id. */
export interface KindRoute<S extends z.ZodType = z.ZodType> {
  kind: TaskKind;
  tag: string;
  create: string;
  get: string;
  body: S;
  createdIdField: 'job_id' | 'global_id';
  queryIdField: 'job_id' | 'global_id';
  /** Extra fields the spec shows in the create answer. */
  createdExtra?: Record<string, number | string>;
  /** What the query answers in data (the OpenAPI document and the SDK read it). */
  queryData: z.ZodType;
  /** A create body the route accepts, shown in the OpenAPI document (a test parses it with `body`). */
  example: z.input<S>;
}

/** A kind's API side with the route whose validated body it receives. */
export interface ApiKind<S extends z.ZodType = z.ZodType> {
  route: KindRoute<S>;
  api: KindApi<z.output<S>>;
}

/** A waiting task's progress as the queries show it. */
export function roundedProgress(task: QueriedTask): number {
  return Math.round(task.progress * 100) / 100;
}
