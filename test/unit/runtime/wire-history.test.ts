/**
 * The agent cache hands the runner the history's wire form (`wireHistory`): the first request is
 * built from it, and a compression inside the turn rebuilds the request from the compressed view,
 * never from the cached wire.
 */
import { describe, expect, it } from 'vitest';
import type { TranscriptMessage } from '../../../src/domain/vocabulary.js';
import type { ChatModel } from '../../../src/runtime/model/client.js';
import { ModelError } from '../../../src/runtime/model/errors.js';
import { ZERO_USAGE, type WireMessage } from '../../../src/runtime/model/wire.js';
import { runTurn, type RunTurnOptions } from '../../../src/runtime/runner.js';
import { ScriptedPrompts } from './helpers.js';

const history: TranscriptMessage[] = [
  { role: 'user', content: 'old question' },
  { role: 'assistant', content: 'old answer' },
];
// Marked so a test can tell the cached wire from one mapped again from `history`.
const cachedWire: WireMessage[] = [
  { role: 'user', content: 'old question (cached)' },
  { role: 'assistant', content: 'old answer (cached)' },
];
const input: TranscriptMessage = { role: 'user', content: 'new question', admission_id: 'adm-1' };

function options(model: ChatModel, extra: Partial<RunTurnOptions> = {}): RunTurnOptions {
  return {
    sessionId: 's1',
    admissionId: 'adm-1',
    executionGeneration: 1,
    model,
    systemPrompt: 'system',
    tools: [],
    cwd: '/tmp',
    yolo: true,
    maxTurns: 3,
    history,
    wireHistory: cachedWire,
    input,
    inputStored: true,
    transcript: { append: () => undefined },
    prompts: new ScriptedPrompts(),
    signal: new AbortController().signal,
    emit: () => undefined,
    ...extra,
  };
}

const answer = (text: string) => ({
  text,
  reasoning: null,
  toolCalls: [],
  finishReason: 'stop',
  usage: { ...ZERO_USAGE },
  model: null,
  attempts: 1,
});

describe('runTurn with a cached wire history', () => {
  it('builds the first request from wireHistory', async () => {
    const seen: WireMessage[][] = [];
    const model: ChatModel = {
      complete: (request) => {
        seen.push([...request.messages]);
        return Promise.resolve(answer('ok'));
      },
    };
    const result = await runTurn(options(model));
    expect(result.outcome).toBe('completed');
    expect(seen[0]!.map((m) => m.content)).toEqual([
      'system',
      'old question (cached)',
      'old answer (cached)',
      'new question',
    ]);
  });

  it('after a compression in the turn, the request is the compressed view, not the cached wire', async () => {
    const seen: WireMessage[][] = [];
    let calls = 0;
    const model: ChatModel = {
      complete: (request) => {
        seen.push([...request.messages]);
        if (calls++ === 0) return Promise.reject(new ModelError('context_overflow', 'too long', 400));
        return Promise.resolve(answer('ok'));
      },
    };
    const compressed: TranscriptMessage[] = [
      { role: 'user', content: 'summary of the old part' },
      { role: 'user', content: 'new question' },
    ];
    const result = await runTurn(
      options(model, {
        context: {
          settings: { window: 1_000_000, threshold: 0.75 },
          compress: () => Promise.resolve({ kind: 'compressed', messages: compressed }),
        },
      }),
    );
    expect(result.outcome).toBe('completed');
    expect(seen).toHaveLength(2);
    expect(seen[1]!.map((m) => m.content)).toEqual(['system', 'summary of the old part', 'new question']);
    expect(JSON.stringify(seen[1])).not.toContain('(cached)');
  });
});
