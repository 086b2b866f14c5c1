/** What an editor is shown and what it may ask for over ACP (src/surfaces/acp/translate.ts). */
import { describe, expect, it } from 'vitest';
import {
  AcpInputError,
  approvalChoice,
  historyUpdates,
  launchMcpServers,
  liveUpdate,
  permissionOptions,
  promptText,
  serverName,
  stopReason,
} from '../../../src/surfaces/acp/translate.js';

describe('live events as session updates', () => {
  it('maps text, reasoning and a tool call through its progress to its end', () => {
    expect(liveUpdate({ type: 'text.delta', text: 'hi' })).toEqual({
      sessionUpdate: 'agent_message_chunk',
      content: { type: 'text', text: 'hi' },
    });
    expect(liveUpdate({ type: 'reasoning.delta', text: 'hm' })).toMatchObject({
      sessionUpdate: 'agent_thought_chunk',
    });
    expect(
      liveUpdate({
        type: 'tool.start',
        tool_call_id: 'c1',
        name: 'terminal',
        arguments: '{"command":"ls -la"}',
      }),
    ).toEqual({
      sessionUpdate: 'tool_call',
      toolCallId: 'c1',
      title: 'terminal: ls -la',
      kind: 'execute',
      status: 'in_progress',
      rawInput: { command: 'ls -la' },
    });
    expect(
      liveUpdate({ type: 'tool.output', tool_call_id: 'c1', name: 'terminal', last_line: 'x' }),
    ).toMatchObject({ sessionUpdate: 'tool_call_update', toolCallId: 'c1', status: 'in_progress' });
    expect(
      liveUpdate({ type: 'tool.complete', tool_call_id: 'c1', summary: 'boom', is_error: true }),
    ).toMatchObject({
      sessionUpdate: 'tool_call_update',
      status: 'failed',
      content: [{ type: 'content', content: { type: 'text', text: 'boom' } }],
    });
    expect(
      liveUpdate({ type: 'tool.start', tool_call_id: 'c2', name: 'fs__read', arguments: 'not json' }),
    ).toMatchObject({
      kind: 'other',
      title: 'fs__read: not json',
      rawInput: 'not json',
    });
  });

  it('shows admission bookkeeping and stored copies as nothing', () => {
    for (const type of ['admission.queued', 'message.stored', 'turn.start', 'checkpoint.created'])
      expect(liveUpdate({ type })).toBeNull();
  });
});

describe('a stored history replayed', () => {
  it('gives user text, thoughts, answers, tool calls and their results in order', () => {
    const updates = historyUpdates([
      { role: 'user', content: 'run: ls' },
      {
        role: 'assistant',
        content: null,
        reasoning: 'thinking',
        tool_calls: [{ id: 'c1', function: { name: 'terminal', arguments: '{"command":"ls"}' } }],
      },
      { role: 'tool', content: 'a.txt', tool_call_id: 'c1', tool_outcome: { is_error: false } },
      { role: 'assistant', content: 'done' },
    ]);
    expect(updates.map((u) => u.sessionUpdate)).toEqual([
      'user_message_chunk',
      'agent_thought_chunk',
      'tool_call',
      'tool_call_update',
      'agent_message_chunk',
    ]);
    expect(updates[3]).toMatchObject({ toolCallId: 'c1', status: 'completed' });
  });
});

describe('permissions', () => {
  it('offers the approval choices with their ACP kinds, the choice as the option id', () => {
    expect(permissionOptions(['once', 'session', 'always', 'deny']).map((o) => [o.optionId, o.kind])).toEqual(
      [
        ['once', 'allow_once'],
        ['session', 'allow_always'],
        ['always', 'allow_always'],
        ['deny', 'reject_once'],
      ],
    );
  });

  it('approves only an offered allow option; anything else denies', () => {
    const offered = ['once', 'deny'];
    expect(approvalChoice({ outcome: 'selected', optionId: 'once' }, offered)).toBe('once');
    expect(approvalChoice({ outcome: 'selected', optionId: 'always' }, offered)).toBe('deny');
    expect(approvalChoice({ outcome: 'selected', optionId: 'deny' }, offered)).toBe('deny');
    expect(approvalChoice({ outcome: 'cancelled' }, offered)).toBe('deny');
  });
});

describe('stop reasons', () => {
  it('ends a completed turn, calls an interrupted or cancelled one cancelled, and a failed one an error', () => {
    expect(stopReason('completed')).toBe('end_turn');
    expect(stopReason('interrupted')).toBe('cancelled');
    expect(stopReason('cancelled')).toBe('cancelled');
    expect(stopReason('failed')).toBeNull();
  });
});

describe('prompts', () => {
  it('joins text, links and embedded text resources', () => {
    expect(
      promptText([
        { type: 'text', text: 'look at' },
        { type: 'resource_link', name: 'a.ts', uri: 'file:///w/a.ts' },
        { type: 'resource', resource: { uri: 'file:///w/b.ts', text: 'let b = 1;' } },
      ]),
    ).toBe('look at\n[a.ts](file:///w/a.ts)\n<resource uri="file:///w/b.ts">\nlet b = 1;\n</resource>');
  });

  it('refuses images and empty prompts rather than answer a different question', () => {
    expect(() => promptText([{ type: 'image', data: 'AAAA', mimeType: 'image/png' }])).toThrow(AcpInputError);
    expect(() => promptText([{ type: 'text', text: '  ' }])).toThrow('the prompt has no text');
  });
});

describe("the editor's MCP servers", () => {
  it('become launch servers: stdio with env, Streamable HTTP with headers', () => {
    expect(
      launchMcpServers([
        { name: 'My Notes', command: 'notes-mcp', args: ['--x'], env: [{ name: 'TOKEN', value: 't' }] },
        {
          type: 'http',
          name: 'web',
          url: 'https://mcp.example/mcp',
          headers: [{ name: 'Authorization', value: 'B' }],
        },
      ]),
    ).toEqual({
      'my-notes': { command: 'notes-mcp', args: ['--x'], env: { TOKEN: 't' } },
      web: { url: 'https://mcp.example/mcp', headers: { Authorization: 'B' } },
    });
  });

  it('refuses SSE, names that cannot be made valid, and two servers under one name', () => {
    expect(() => launchMcpServers([{ type: 'sse', name: 'old', url: 'http://x/sse', headers: [] }])).toThrow(
      /SSE/,
    );
    expect(() => serverName('123')).toThrow(AcpInputError);
    expect(serverName('a__b')).toBe('a_b');
    expect(() =>
      launchMcpServers([
        { name: 'Notes', command: 'a', args: [], env: [] },
        { name: 'notes', command: 'b', args: [], env: [] },
      ]),
    ).toThrow(/both named "notes"/);
  });
});
