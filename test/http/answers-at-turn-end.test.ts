import type { FastifyBaseLogger, FastifyReply, FastifyRequest, onSendHookHandler } from 'fastify';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { answersAtTurnEnd } from '../../src/http/answers-at-turn-end.js';

const request = {} as FastifyRequest;
const reply = {} as FastifyReply;
type Done = Parameters<onSendHookHandler>[3];
/** A done callback that records what it was given. */
const recorder = (record: (err: unknown, payload: unknown) => void): Done => ((err?: unknown, payload?: unknown) => record(err, payload)) as Done;

describe('answers written at the end of their turn (answers-at-turn-end.ts)', () => {
  it('holds every answer of a turn, then sends them together and in order; the next turn starts a new group', async () => {
    const hook = answersAtTurnEnd(pino({ level: 'silent' }) as FastifyBaseLogger);
    const sent: string[] = [];
    const send = (name: string) => recorder((err, payload) => sent.push(`${name}:${String(payload)}${err ? ':err' : ''}`));
    for (const name of ['a', 'b', 'c']) void hook.call(null as never, request, reply, `${name}-body`, send(name));
    expect(sent).toEqual([]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(sent).toEqual(['a:a-body', 'b:b-body', 'c:c-body']);
    void hook.call(null as never, request, reply, 'd-body', send('d'));
    expect(sent).toHaveLength(3);
    await new Promise((resolve) => setImmediate(resolve));
    expect(sent.at(-1)).toBe('d:d-body');
  });

  it('one answer that throws while being written leaves the others of its turn sent, and is logged', async () => {
    const logged: string[] = [];
    const hook = answersAtTurnEnd({ error: (_o: unknown, msg: string) => logged.push(msg) } as unknown as FastifyBaseLogger);
    const sent: string[] = [];
    void hook.call(null as never, request, reply, 'x', recorder(() => {
      throw new Error('socket gone');
    }));
    void hook.call(null as never, request, reply, 'y', recorder((_err, payload) => sent.push(String(payload))));
    await new Promise((resolve) => setImmediate(resolve));
    expect(sent).toEqual(['y']);
    expect(logged).toEqual(['writing an answer failed']);
  });
});
