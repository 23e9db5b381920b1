import type { TaskKind } from '../domain/task.js';

type TaskLabels = { kind: TaskKind; status: 'success' | 'failed' };

/** What the worker side records about tasks; the process's Prometheus registry (services/metrics.ts) implements it. */
export interface TaskMetrics {
  readonly taskDuration: { observe(labels: TaskLabels, seconds: number): void };
  readonly tasksFinished: { inc(labels: TaskLabels): void };
  readonly realTimeFactor: { observe(labels: { engine: string }, value: number): void };
}
