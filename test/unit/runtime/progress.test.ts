import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  lastLineOf,
  LAST_LINE_CHARS,
  PROGRESS_INTERVAL_MS,
  ProgressReporter,
  TAIL_BYTES,
  type ToolProgress,
} from '../../../src/runtime/tools/progress.js';

describe('ProgressReporter (tool.output throttle)', () => {
  beforeEach(() => vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] }));
  afterEach(() => vi.useRealTimers());

  it('reports the first chunk at once, then at most once per interval, only when something new came', () => {
    const sent: ToolProgress[] = [];
    const reporter = new ProgressReporter((p) => sent.push(p));
    reporter.push(Buffer.from('one\n'));
    expect(sent.map((p) => p.last_line)).toEqual(['one']);
    reporter.push(Buffer.from('two\n'));
    reporter.push(Buffer.from('three\n'));
    expect(sent).toHaveLength(1);
    vi.advanceTimersByTime(PROGRESS_INTERVAL_MS);
    expect(sent.map((p) => p.last_line)).toEqual(['one', 'three']);
    vi.advanceTimersByTime(PROGRESS_INTERVAL_MS * 4); // nothing new: nothing sent
    expect(sent).toHaveLength(2);
    expect(sent[1]!.bytes).toBe(14);
    reporter.push(Buffer.from('four\n'));
    reporter.stop();
    vi.advanceTimersByTime(PROGRESS_INTERVAL_MS * 2);
    expect(sent.at(-1)!.last_line).toBe('four');
    reporter.push(Buffer.from('after stop\n'));
    vi.advanceTimersByTime(PROGRESS_INTERVAL_MS * 2);
    expect(sent.at(-1)!.last_line).toBe('four');
  });

  it('keeps a bounded tail however much is printed, and however long a line is', () => {
    const sent: ToolProgress[] = [];
    const reporter = new ProgressReporter((p) => sent.push(p));
    const chunk = Buffer.alloc(64 * 1024, 'x');
    for (let i = 0; i < 1600; i++) reporter.push(chunk); // 100 MiB without a newline
    vi.advanceTimersByTime(PROGRESS_INTERVAL_MS);
    const tail = (reporter as unknown as { tail: Buffer }).tail;
    expect(tail.length).toBeLessThanOrEqual(TAIL_BYTES);
    expect(sent.at(-1)!.last_line.length).toBe(LAST_LINE_CHARS);
    expect(sent.at(-1)!.bytes).toBe(1600 * 64 * 1024);
    expect(sent).toHaveLength(2);
  });

  it('the last line is the last non-empty one, without escapes or control characters', () => {
    expect(lastLineOf('a\nb\n\n')).toBe('b');
    expect(lastLineOf('progress 10%\rprogress 20%\r')).toBe('progress 20%');
    expect(lastLineOf('\u001b[32mgreen\u001b[0m\tdone\n')).toBe('green done');
    expect(lastLineOf('')).toBe('');
  });
});
