import type { FastifyBaseLogger, onSendHookHandler } from 'fastify';

/**
 * A route's onSend hook that writes the answers one turn of the event loop produced together, at the end of that
 * turn (setImmediate), instead of each as soon as it is ready. One per server: every route given it shares the turn.
 *
 * Why: a write to a socket whose reader sleeps pays, in the writer's own system call, for waking that reader. On
 * one host (a client beside the server, a proxy, a load generator), and above all in a VM, where the wake-up is an
 * inter-processor interrupt, that was a third of a poll's CPU (bench/results/http.md G: `sock_def_readable`, 25%
 * of the API process's samples under Linux perf). Node answers each request before it reads the next socket, so
 * every answer found its client asleep again. Written back to back, the first answer wakes the client and the
 * others find it running: polls went from 60 to 39 us of CPU each. An answer waits at most for the rest of the
 * turn it was made in.
 *
 * For routes that answer from their request's own callback (queries). Not for creates on SQLite: their answers
 * already leave together, after the group commit (src/adapters/sql/write-batch.ts), which runs at the end of a
 * turn itself; deferring them one more turn made the next commits smaller (7.6 creates each, then 5.0) and each
 * create 20% dearer.
 */
export function answersAtTurnEnd(log: FastifyBaseLogger): onSendHookHandler {
  let waiting: Array<() => void> = [];
  const flush = () => {
    const ready = waiting;
    waiting = [];
    for (const send of ready) {
      // One answer's failure must not leave the others of its turn unsent.
      try {
        send();
      } catch (err) {
        log.error({ err }, 'writing an answer failed');
      }
    }
  };
  return (_request, _reply, payload, done) => {
    if (waiting.length === 0) setImmediate(flush);
    waiting.push(() => done(null, payload));
  };
}
