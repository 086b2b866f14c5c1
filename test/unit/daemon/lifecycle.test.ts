import { describe, expect, it } from 'vitest';
import {
  IllegalTransition,
  Lifecycle,
  transition,
  type LifecycleEvent,
  type LifecycleState,
} from '../../../src/daemon/lifecycle.js';

const ready: LifecycleEvent = { type: 'ready' };
const drain: LifecycleEvent = { type: 'drain', reason: 'SIGTERM' };
const stopped: LifecycleEvent = { type: 'stopped' };
const fail: LifecycleEvent = { type: 'fail', error: 'boom' };

describe('daemon lifecycle (issue 4): the pure transition', () => {
  it.each<[LifecycleState, LifecycleEvent, LifecycleState]>([
    ['starting', ready, 'ready'],
    ['starting', drain, 'draining'],
    ['starting', fail, 'failed'],
    ['ready', drain, 'draining'],
    ['ready', fail, 'failed'],
    ['draining', stopped, 'stopped'],
    ['draining', fail, 'failed'],
  ])('%s + %o → %s', (from, event, to) => {
    expect(transition(from, event)).toBe(to);
  });

  it.each<[LifecycleState, LifecycleEvent]>([
    ['starting', stopped],
    ['ready', ready],
    ['ready', stopped],
    ['draining', ready],
    ['draining', drain],
    ['stopped', ready],
    ['stopped', drain],
    ['stopped', fail],
    ['failed', ready],
    ['failed', stopped],
  ])('%s + %o is refused with a typed error', (from, event) => {
    const result = transition(from, event);
    expect(result).toBeInstanceOf(IllegalTransition);
    expect((result as IllegalTransition).from).toBe(from);
    expect((result as IllegalTransition).event).toBe(event.type);
  });
});

describe('daemon lifecycle (issue 4): events and admission', () => {
  it('announces each state and admits input only while ready', async () => {
    const lifecycle = new Lifecycle();
    const seen: string[] = [];
    lifecycle.on('lifecycle:ready', () => seen.push('ready'));
    lifecycle.on('lifecycle:draining', (reason) => seen.push(`draining:${reason}`));
    lifecycle.on('lifecycle:stopped', () => seen.push('stopped'));
    expect(lifecycle.accepting()).toBe(false);

    const readyReached = lifecycle.reached('ready');
    lifecycle.apply(ready);
    await readyReached;
    expect(lifecycle.accepting()).toBe(true);

    lifecycle.apply(drain);
    expect(lifecycle.accepting()).toBe(false);
    lifecycle.apply(stopped);
    await lifecycle.reached('stopped');
    expect(seen).toEqual(['ready', 'draining:SIGTERM', 'stopped']);
  });

  it('throws on an illegal event and keeps its state', () => {
    const lifecycle = new Lifecycle();
    expect(() => lifecycle.apply(stopped)).toThrow(IllegalTransition);
    expect(lifecycle.state).toBe('starting');
  });
});

describe('daemon lifecycle (issue 4): waiters never hang', () => {
  it('a waiter for ready is told when start-up fails instead', async () => {
    const lifecycle = new Lifecycle();
    const waiting = lifecycle.reached('ready');
    lifecycle.apply(fail);
    await expect(waiting).rejects.toThrow(/failed before it was ready/);
    await expect(lifecycle.reached('draining')).rejects.toThrow(/will never be draining/);
  });

  it('a state already passed is refused at once', async () => {
    const lifecycle = new Lifecycle();
    lifecycle.apply(ready);
    lifecycle.apply(drain);
    await expect(lifecycle.reached('ready')).rejects.toThrow(/will never be ready/);
  });
});
