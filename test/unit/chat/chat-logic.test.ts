import { describe, expect, it } from 'vitest';
import { titleFromMessage } from '../../../src/domain/local/titles.js';
import {
  approvalKeys,
  parseApprovalAnswer,
  parseClarifyAnswer,
  promptReply,
} from '../../../src/surfaces/cli/chat/answers.js';
import {
  classifyArrival,
  planResync,
  submissionAfterSnapshot,
  unseenEvents,
  unseenMessages,
} from '../../../src/surfaces/cli/chat/cursor.js';
import { backoffMs } from '../../../src/surfaces/cli/chat/link.js';
import {
  INITIAL_RENDER,
  banner,
  renderEvent,
  renderHistory,
  toolCallLine,
  userLine,
  type ChatEvent,
  type RenderState,
} from '../../../src/surfaces/cli/chat/render.js';

const ALL = ['once', 'session', 'always', 'deny'];

function renderAll(events: ChatEvent[], start: RenderState = INITIAL_RENDER): string {
  let state = start;
  let out = '';
  for (const e of events) {
    const r = renderEvent(state, e);
    out += r.text;
    state = r.state;
  }
  return out;
}

describe('UX-1 approval and clarify answers typed inline', () => {
  it('maps the keys and words to the offered choices only', () => {
    expect(parseApprovalAnswer('o', ALL)).toBe('once');
    expect(parseApprovalAnswer(' S ', ALL)).toBe('session');
    expect(parseApprovalAnswer('always', ALL)).toBe('always');
    expect(parseApprovalAnswer('d', ALL)).toBe('deny');
    expect(parseApprovalAnswer('n', ALL)).toBe('deny');
    // An edit prompt offers once|deny: "always" must not slip through.
    expect(parseApprovalAnswer('a', ['once', 'deny'])).toBeNull();
  });

  it('never reads an unclear line as a yes', () => {
    for (const line of ['', 'ok', 'sure', 'oo', 'please do'])
      expect(parseApprovalAnswer(line, ALL)).toBeNull();
  });

  it('picks a numbered choice, keeps free text, and skips on empty', () => {
    expect(parseClarifyAnswer('2', ['red', 'blue'])).toBe('blue');
    expect(parseClarifyAnswer('3', ['red', 'blue'])).toBe('3');
    expect(parseClarifyAnswer('green please', ['red', 'blue'])).toBe('green please');
    expect(parseClarifyAnswer('  ', ['red'])).toBe('');
    expect(parseClarifyAnswer('1', null)).toBe('1');
  });
});

describe('UX-1/LOC-9 a typed answer names the exact prompt', () => {
  const approval = {
    type: 'approval.request',
    prompt_id: 'p-7',
    execution_generation: 4,
    choices: ['once', 'session', 'always', 'deny'],
  };
  it('answers an approval with its prompt_id and execution_generation', () => {
    expect(promptReply('s1', approval, 'a')).toEqual({
      kind: 'respond',
      method: 'approval.respond',
      params: { session_id: 's1', prompt_id: 'p-7', execution_generation: 4, choice: 'always' },
    });
  });
  it('asks again on an unclear line instead of calling anything', () => {
    expect(promptReply('s1', approval, 'maybe')).toEqual({
      kind: 'ask_again',
      hint: 'Please answer o, s, a, d: ',
    });
  });
  it('answers a clarify prompt, an empty line skipping it', () => {
    const clarify = { type: 'clarify.request', prompt_id: 'q', execution_generation: 1, choices: ['x', 'y'] };
    expect(promptReply('s1', clarify, '1')).toMatchObject({
      method: 'clarify.respond',
      params: { answer: 'x' },
    });
    expect(promptReply('s1', clarify, '')).toMatchObject({ params: { answer: '' } });
  });
});

describe('UX-1/LOC-8 our own submission across a reconnect', () => {
  const pending = [
    { admission_id: 'a1', submission_id: 'sub-1', state: 'running' },
    { admission_id: 'a2', submission_id: 'sub-2', state: 'unknown' },
  ];
  it('keeps waiting for a pending admission and learns its id', () => {
    expect(submissionAfterSnapshot({ submissionId: 'sub-1', acknowledged: false }, pending)).toEqual({
      kind: 'pending',
      admissionId: 'a1',
    });
  });
  it('stops waiting for one a crash left unknown (it is never replayed)', () => {
    expect(submissionAfterSnapshot({ submissionId: 'sub-2', acknowledged: true }, pending)).toEqual({
      kind: 'unknown',
    });
  });
  it('treats an acknowledged one that is no longer pending as settled, and resubmits an unacknowledged one', () => {
    expect(submissionAfterSnapshot({ submissionId: 'sub-9', acknowledged: true }, pending)).toEqual({
      kind: 'settled',
    });
    expect(submissionAfterSnapshot({ submissionId: 'sub-9', acknowledged: false }, pending)).toEqual({
      kind: 'resubmit',
    });
  });
});

describe('UX-1/LOC-11 catch-up decisions after a reconnect', () => {
  it('applies the next event, drops duplicates, and spots gaps and new epochs', () => {
    const at = { epoch: 3, lastSeq: 10 };
    expect(classifyArrival(at, 3, 11)).toBe('apply');
    expect(classifyArrival(at, 3, 10)).toBe('duplicate');
    expect(classifyArrival(at, 3, 2)).toBe('duplicate');
    expect(classifyArrival(at, 3, 13)).toBe('gap');
    expect(classifyArrival(at, 4, 1)).toBe('new_epoch');
  });

  it('replays within an epoch and rebuilds from the snapshot across a daemon restart', () => {
    expect(planResync({ epoch: 3, lastSeq: 10 }, 3)).toEqual({ kind: 'replay', epoch: 3, afterSeq: 10 });
    expect(planResync({ epoch: 3, lastSeq: 10 }, 4)).toEqual({ kind: 'snapshot' });
    expect(planResync(null, 3)).toEqual({ kind: 'snapshot' });
  });

  it('shows each completed message once: only those past the count already shown', () => {
    const messages = ['u1', 'a1', 'u2', 'a2'];
    expect(unseenMessages(messages, 2)).toEqual(['u2', 'a2']);
    expect(unseenMessages(messages, 4)).toEqual([]);
    expect(unseenMessages(messages, 9)).toEqual([]);
    expect(unseenMessages(messages, 0)).toEqual(messages);
  });

  it('replays only events after the cursor, in order', () => {
    const events = [{ seq: 12 }, { seq: 10 }, { seq: 11 }, { seq: 9 }];
    expect(unseenEvents(events, 10).map((e) => e.seq)).toEqual([11, 12]);
  });

  it('backs off from 100 ms doubling to a 2 s ceiling', () => {
    expect([0, 1, 2, 3, 4, 5, 30].map(backoffMs)).toEqual([100, 200, 400, 800, 1600, 2000, 2000]);
  });
});

describe('UX-1 rendering of live events', () => {
  it('streams deltas on one line and ends it when the turn completes, without repeating the answer', () => {
    const out = renderAll([
      { type: 'turn.start', execution_generation: 1 },
      { type: 'text.delta', text: 'Hel' },
      { type: 'text.delta', text: 'lo' },
      { type: 'turn.complete', outcome: 'completed', final_text: 'Hello', error: null },
    ]);
    expect(out).toBe('Hello\n');
  });

  it('prints the final text when no delta arrived', () => {
    const out = renderAll([
      { type: 'turn.start', execution_generation: 1 },
      { type: 'turn.complete', outcome: 'completed', final_text: 'Done.', error: null },
    ]);
    expect(out).toBe('Done.\n');
  });

  it('puts reasoning and text on separate lines, and tool calls with a one-line result', () => {
    const out = renderAll([
      { type: 'reasoning.delta', text: 'thinking' },
      { type: 'text.delta', text: 'answer' },
      { type: 'tool.start', name: 'terminal', arguments: '{"command":"ls -la"}', tool_call_id: 'c' },
      { type: 'tool.complete', name: 'terminal', summary: 'exit code 0\nfile a\nfile b', is_error: false },
    ]);
    expect(out).toBe('thinking\nanswer\n⚙ terminal ls -la\n  ↳ exit code 0 file a file b\n');
  });

  it('asks approvals with exactly the offered keys and reports failures in one line', () => {
    const ask = renderAll([
      {
        type: 'approval.request',
        prompt_id: 'p1',
        execution_generation: 2,
        command: 'rm -rf /tmp/x',
        reason: 'deletes files recursively',
        choices: ['once', 'deny'],
      },
    ]);
    expect(ask).toBe('Allow `rm -rf /tmp/x`? (deletes files recursively) [o]nce [d]eny ');
    const failed = renderAll([
      {
        type: 'turn.complete',
        outcome: 'failed',
        final_text: null,
        error: { reason: 'model_unreachable', message: 'the model did not answer' },
      },
    ]);
    expect(failed).toBe('✗ the turn failed: the model did not answer (model_unreachable)\n');
    expect(
      renderAll([{ type: 'turn.complete', outcome: 'interrupted', final_text: null, error: null }]),
    ).toBe('(turn interrupted)\n');
  });

  it('numbers clarify choices', () => {
    const out = renderAll([
      {
        type: 'clarify.request',
        prompt_id: 'p',
        execution_generation: 1,
        question: 'Which?',
        choices: ['a', 'b'],
      },
    ]);
    expect(out).toContain('? Which?\n  1. a\n  2. b\n');
  });

  it('issue 26 item 3: a full history draws a line where each compression and reset happened', () => {
    const out = renderHistory(
      [
        { role: 'user', content: 'one' },
        { role: 'user', content: '[Context summary] …' },
        { role: 'user', content: 'two' },
      ],
      undefined,
      [
        {
          index: 1,
          kind: 'compression',
          at: '2026-01-02T03:04:05.000Z',
          messages_before: 42,
          messages_after: 9,
          method: 'summary',
        },
        { index: 3, kind: 'reset', at: '2026-01-02T04:00:00.000Z' },
      ],
    );
    expect(out).toBe(
      '> one\n' +
        '──── compressed at 2026-01-02 03:04:05: earlier messages summarized: 42 → 9 ────\n' +
        '> [Context summary] …\n> two\n' +
        '──── reset at 2026-01-02 04:00:00: the conversation started over; the model sees nothing above this line ────\n',
    );
  });

  it('renders stored history: user lines, answers, tool calls and results', () => {
    const out = renderHistory([
      { role: 'user', content: 'run: pwd' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ function: { name: 'terminal', arguments: '{"command":"pwd"}' } }],
      },
      { role: 'tool', content: '/tmp/w\n' },
      { role: 'assistant', content: 'It is /tmp/w.' },
    ]);
    expect(out).toBe('> run: pwd\n⚙ terminal pwd\n  ↳ /tmp/w\nIt is /tmp/w.\n');
    expect(toolCallLine('x', 'not json')).toBe('⚙ x not json');
  });

  it('issue 12 item 19: history shows approvals, denials and interruptions as they were shown live', () => {
    const call = (command: string) => ({
      role: 'assistant',
      content: null,
      tool_calls: [{ function: { name: 'terminal', arguments: JSON.stringify({ command }) } }],
    });
    const out = renderHistory([
      { role: 'user', content: 'run: rm -rf a' },
      call('rm -rf a'),
      {
        role: 'tool',
        content: 'exit code 0\n(no output)',
        tool_outcome: { is_error: false, approval: 'once' },
      },
      { role: 'assistant', content: 'done' },
      { role: 'user', content: 'run: rm -rf b' },
      call('rm -rf b'),
      {
        role: 'tool',
        content: 'The user denied this command. It was not run.',
        tool_outcome: { is_error: true, approval: 'denied' },
      },
      { role: 'assistant', content: 'not run' },
      { role: 'user', content: 'run: sleep 60' },
      call('sleep 60'),
      {
        role: 'tool',
        content: '[interrupted before completion] stopped',
        tool_outcome: { is_error: true },
        interrupted: true,
      },
      { role: 'user', content: 'think: long' },
      { role: 'assistant', content: 'half an ans', interrupted: true },
    ]);
    expect(out).toBe(
      [
        '> run: rm -rf a',
        '⚙ terminal rm -rf a',
        '  approved (once)',
        '  ↳ exit code 0 (no output)',
        'done',
        '> run: rm -rf b',
        '⚙ terminal rm -rf b',
        '  denied',
        '  ✗ The user denied this command. It was not run.',
        'not run',
        '> run: sleep 60',
        '⚙ terminal sleep 60',
        '  ✗ [interrupted before completion] stopped',
        '(turn interrupted)',
        '> think: long',
        'half an ans',
        '(turn interrupted)',
        '',
      ].join('\n'),
    );
    // The live rendering of the same answers says the same words.
    const live = (event: Record<string, unknown>) =>
      renderEvent(INITIAL_RENDER, { type: 'x', ...event }).text;
    expect(live({ type: 'approval.settled', outcome: { kind: 'denied' } })).toBe('  denied\n');
    expect(live({ type: 'turn.complete', outcome: 'interrupted' })).toBe('(turn interrupted)\n');
    expect(userLine('hi')).toBe('> hi\n');
  });

  it('says plainly when the built-in demo model answers', () => {
    const text = banner({
      sessionId: 's1',
      cwd: '/w',
      model: 'gatehouse-demo',
      gatewayModel: 'built-in demo model (scripted stand-in, no account needed)',
      demo: true,
      resumed: false,
      instructions: null,
    });
    expect(text).toContain('model: built-in demo model (scripted stand-in, no account needed)');
    expect(text).toContain('session s1');
    // A session created before its instruction files were kept: the banner claims nothing.
    expect(text).not.toContain('rules:');
  });

  it('names the rules files and the personal instructions the session loaded, or says there are none', () => {
    const facts = {
      sessionId: 's1',
      cwd: '/w',
      model: 'm',
      gatewayModel: 'm',
      demo: false,
      resumed: false,
    };
    expect(
      banner({
        ...facts,
        instructions: { rules: ['/repo/AGENTS.md', '/repo/w/CLAUDE.md'], personal: '/h/AGENTS.md' },
      }).split('\n')[3],
    ).toBe('rules: /repo/AGENTS.md, /repo/w/CLAUDE.md · personal instructions: /h/AGENTS.md');
    expect(banner({ ...facts, instructions: { rules: [], personal: null } }).split('\n')[3]).toBe(
      'rules: none · personal instructions: none',
    );
  });
});

describe('issue 12 item 19: a session is titled from its first message', () => {
  it('takes the first line, collapses whitespace and cuts long lines at a word', () => {
    expect(titleFromMessage('  hello   there \nmore')).toBe('hello there');
    expect(titleFromMessage('\n\n  run: ls  ')).toBe('run: ls');
    expect(titleFromMessage('   \n ')).toBeNull();
    const long = titleFromMessage(`please ${'refactor the module '.repeat(10)}`)!;
    expect(long.length).toBeLessThanOrEqual(60);
    expect(long).toMatch(/^please refactor the module .*[a-z]…$/);
    expect(titleFromMessage('x'.repeat(100))).toBe(`${'x'.repeat(59)}…`);
  });
});

describe('issue 12 item 19: an approval is answered by one key on a terminal', () => {
  it('offers exactly the single keys of the offered choices', () => {
    expect(approvalKeys(['once', 'session', 'always', 'deny']).sort()).toEqual([
      'a',
      'd',
      'n',
      'o',
      's',
      'y',
    ]);
    expect(approvalKeys(['once', 'deny']).sort()).toEqual(['d', 'n', 'o', 'y']);
  });
});
