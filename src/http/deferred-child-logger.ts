import type { FastifyBaseLogger, FastifyServerOptions } from 'fastify';
import type { Bindings, ChildLoggerOptions, LevelWithSilent } from 'pino';

/** pino's standard levels, the only ones LOG_LEVEL allows (src/config). */
const LEVEL_VALUES: ReadonlyMap<string, number> = new Map<LevelWithSilent, number>([
  ['trace', 10],
  ['debug', 20],
  ['info', 30],
  ['warn', 40],
  ['error', 50],
  ['fatal', 60],
  ['silent', Infinity],
]);
type Method = Exclude<LevelWithSilent, 'silent'>;

const valueOf = (level: string): number => LEVEL_VALUES.get(level) ?? 30;

/**
 * A request's logger (`request.log`), made into pino's child only when something is logged at a level it
 * writes. Fastify makes a child for every request, with the request id and the route's level; pino's `child`
 * with a level cost about 5 us, a tenth of a poll's CPU, for a logger that nearly every poll and create never
 * writes to (bench/results/http.md G). Lines it does write are the child's own, with the same bindings.
 */
class DeferredChild implements FastifyBaseLogger {
  private made: FastifyBaseLogger | null = null;

  constructor(
    private readonly parent: FastifyBaseLogger,
    private readonly bindings: Bindings,
    private readonly options: ChildLoggerOptions,
  ) {}

  get level(): string {
    return this.made?.level ?? this.options.level ?? this.parent.level;
  }

  set level(level: string) {
    this.child$().level = level;
  }

  trace(...args: unknown[]): void {
    this.write('trace', args);
  }
  debug(...args: unknown[]): void {
    this.write('debug', args);
  }
  info(...args: unknown[]): void {
    this.write('info', args);
  }
  warn(...args: unknown[]): void {
    this.write('warn', args);
  }
  error(...args: unknown[]): void {
    this.write('error', args);
  }
  fatal(...args: unknown[]): void {
    this.write('fatal', args);
  }
  silent(): void {}

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.child$().child(bindings, options);
  }

  private write(method: Method, args: unknown[]): void {
    if (valueOf(method) < valueOf(this.level)) return;
    const logger = this.child$();
    Reflect.apply(logger[method], logger, args);
  }

  private child$(): FastifyBaseLogger {
    this.made ??= this.parent.child(this.bindings, this.options);
    return this.made;
  }
}

/** Fastify's `childLoggerFactory`: see DeferredChild. */
export const deferredChildLogger: NonNullable<FastifyServerOptions['childLoggerFactory']> = (logger, bindings, options) => new DeferredChild(logger, bindings, options);
