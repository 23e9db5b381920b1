import type { TaskMetrics } from '../ports/metrics.js';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { JobQueue } from '../ports/queue.js';
import { TASK_KINDS } from '../domain/task.js';

/** Prometheus metrics on a registry of our own (no global default registry). */
export class Metrics implements TaskMetrics {
  readonly registry = new Registry();
  readonly httpDuration: Histogram<'method' | 'route' | 'status'>;
  readonly taskDuration: Histogram<'kind' | 'status'>;
  readonly realTimeFactor: Histogram<'engine'>;
  readonly tasksFinished: Counter<'kind' | 'status'>;

  constructor(queue: JobQueue) {
    collectDefaultMetrics({ register: this.registry, prefix: 'soundry_' });
    this.httpDuration = new Histogram({
      name: 'soundry_http_request_duration_seconds',
      help: 'HTTP request latency',
      labelNames: ['method', 'route', 'status'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers: [this.registry],
    });
    this.taskDuration = new Histogram({
      name: 'soundry_task_duration_seconds',
      help: 'Processing time of a task, from start of processing to its end',
      labelNames: ['kind', 'status'],
      buckets: [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 900, 3600],
      registers: [this.registry],
    });
    this.realTimeFactor = new Histogram({
      name: 'soundry_engine_real_time_factor',
      help: 'Processing seconds per second of audio, per engine (lower is faster)',
      labelNames: ['engine'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5],
      registers: [this.registry],
    });
    this.tasksFinished = new Counter({
      name: 'soundry_tasks_finished_total',
      help: 'Tasks finished, by kind and final status',
      labelNames: ['kind', 'status'],
      registers: [this.registry],
    });
    new Gauge({
      name: 'soundry_queue_depth',
      help: 'Tasks waiting in the queue, per kind',
      labelNames: ['kind'],
      registers: [this.registry],
      async collect() {
        const depth = await queue.depth();
        for (const kind of TASK_KINDS) this.set({ kind }, depth[kind] ?? 0);
      },
    });
  }
}
