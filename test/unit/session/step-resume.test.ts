import { describe, expect, it } from 'vitest';
import {
  claimMayBeLazy,
  decideRecovery,
  RECOVERY_DEFAULTS,
  splitAtInput,
  turnBoundary,
} from '../../../src/domain/session/step-resume.js';
import type { TranscriptMessage } from '../../../src/domain/vocabulary.js';

const call = (id: string) => ({
  id,
  type: 'function' as const,
  function: { name: 'terminal', arguments: '{}' },
});
const now = Date.parse('2026-12-01T12:00:00Z');
const fresh = { started_at: '2026-12-01T11:59:00Z', resumes: 0, tool_started: null };

describe('decideRecovery (REC-7)', () => {
  it('resumes a fresh turn at a boundary', () => {
    expect(decideRecovery(fresh, RECOVERY_DEFAULTS, now)).toEqual({ kind: 'resume' });
  });
  it('a running tool is unknown by default, resumed (to be closed) under close', () => {
    const running = { ...fresh, tool_started: 'c1' };
    expect(decideRecovery(running, RECOVERY_DEFAULTS, now)).toMatchObject({
      kind: 'unknown',
      reason: 'tool_running',
    });
    expect(decideRecovery(running, { ...RECOVERY_DEFAULTS, runningTool: 'close' }, now)).toEqual({
      kind: 'resume',
    });
  });
  it('the max_resumes-th consecutive crash is unknown; max_resumes 1 makes every crash unknown', () => {
    expect(decideRecovery({ ...fresh, resumes: 1 }, RECOVERY_DEFAULTS, now)).toEqual({ kind: 'resume' });
    expect(decideRecovery({ ...fresh, resumes: 2 }, RECOVERY_DEFAULTS, now)).toMatchObject({
      reason: 'max_resumes',
    });
    expect(decideRecovery(fresh, { ...RECOVERY_DEFAULTS, maxResumes: 1 }, now)).toMatchObject({
      reason: 'max_resumes',
    });
  });
  it('a turn older than the freshness window is stale', () => {
    const old = { ...fresh, started_at: '2026-12-01T10:59:59Z' };
    expect(decideRecovery(old, RECOVERY_DEFAULTS, now)).toMatchObject({ kind: 'unknown', reason: 'stale' });
  });
});

describe('claimMayBeLazy: a claim left to the next flush only where a crash after it would resume', () => {
  it('by default, where a turn killed right after its claim is resumed', () => {
    expect(decideRecovery(fresh, RECOVERY_DEFAULTS, now)).toEqual({ kind: 'resume' });
    expect(claimMayBeLazy(RECOVERY_DEFAULTS)).toBe(true);
  });
  it('never with max_resumes 1 or no freshness, where every started turn stays started (unknown)', () => {
    for (const settings of [
      { ...RECOVERY_DEFAULTS, maxResumes: 1 },
      { ...RECOVERY_DEFAULTS, freshnessS: 0 },
    ]) {
      expect(decideRecovery(fresh, settings, now)).toMatchObject({ kind: 'unknown' });
      expect(claimMayBeLazy(settings)).toBe(false);
    }
  });
});

describe('turnBoundary (REC-7)', () => {
  const assistant: TranscriptMessage = {
    role: 'assistant',
    content: null,
    tool_calls: [call('c1'), call('c2')],
  };
  const result = (id: string): TranscriptMessage => ({ role: 'tool', tool_call_id: id, content: 'ok' });
  it('nothing stored after the input, or every result stored: a model call', () => {
    expect(turnBoundary([], null)).toEqual({ kind: 'model' });
    expect(turnBoundary([assistant, result('c1'), result('c2')], null)).toEqual({ kind: 'model' });
  });
  it('stored calls not started: the first open one goes on', () => {
    expect(turnBoundary([assistant, result('c1')], null)).toEqual({
      kind: 'tools',
      calls: [call('c2')],
      closed: null,
    });
  });
  it('the call marked started is the one to close; the rest still run', () => {
    expect(turnBoundary([assistant], 'c1')).toEqual({
      kind: 'tools',
      calls: [call('c2')],
      closed: call('c1'),
    });
  });
  it('a mark that names no open call is inconsistent', () => {
    expect(turnBoundary([assistant], 'c2')).toEqual({ kind: 'lost' });
    expect(turnBoundary([], 'c1')).toEqual({ kind: 'lost' });
  });
  it('splitAtInput finds the input of the admission', () => {
    const messages: TranscriptMessage[] = [
      { role: 'user', content: 'a', admission_id: 'x' },
      { role: 'user', content: 'b', admission_id: 'y' },
      assistant,
    ];
    expect(splitAtInput(messages, 'y')).toEqual({ before: 1, turn: [assistant] });
    expect(splitAtInput(messages, 'z')).toBeNull();
  });
});
