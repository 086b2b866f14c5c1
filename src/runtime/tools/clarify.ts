/**
 * The `clarify` tool (SPEC RUN-2): the model asks the user a question, optionally with choices, and
 * waits. An empty answer means the user chose to skip; the model is told so in plain words.
 */
import type { ClarifyRequest, ToolDefinition, ToolResult } from '../types.js';

function fail(content: string): ToolResult {
  return { content, isError: true };
}

/** Validates the model's arguments into a request, or says what is wrong. */
function toRequest(args: Record<string, unknown>): ClarifyRequest | string {
  const { question, choices, multi_select: multiSelect } = args;
  if (typeof question !== 'string' || question.trim() === '') return '`question` must be a non-empty string.';
  if (choices !== undefined && (!Array.isArray(choices) || !choices.every((c) => typeof c === 'string'))) {
    return '`choices` must be an array of strings.';
  }
  if (multiSelect !== undefined && typeof multiSelect !== 'boolean')
    return '`multi_select` must be a boolean.';
  const request: ClarifyRequest = { question };
  if (choices !== undefined && choices.length > 0) request.choices = choices;
  if (multiSelect === true) request.multi_select = true;
  return request;
}

export const clarifyTool: ToolDefinition = {
  name: 'clarify',
  toolset: 'clarify',
  description:
    'Ask the user a question and wait for the answer. Offer `choices` when the answer is one of a few ' +
    'options (the user may still answer in their own words); set `multi_select` to allow several. ' +
    'The user may skip the question.',
  parameters: {
    type: 'object',
    properties: {
      question: { type: 'string', description: 'The question, in one or two sentences.' },
      choices: { type: 'array', items: { type: 'string' }, description: 'Suggested answers.' },
      multi_select: { type: 'boolean', description: 'The user may pick several choices.' },
    },
    required: ['question'],
    additionalProperties: false,
  },
  // Asking has no side effect: never marked started, so a crash while it waits recreates the question.
  marksOwnStart: true,
  async run(args, context) {
    const request = toRequest(args);
    if (typeof request === 'string') return fail(request);
    const outcome = await context.askClarify(request);
    switch (outcome.kind) {
      case 'answered': {
        const answer = Array.isArray(outcome.answer) ? outcome.answer.join(', ') : outcome.answer;
        return { content: `The user answered: ${answer}` };
      }
      case 'skipped':
        return {
          content: 'The user skipped this question without answering. Proceed with your best judgement.',
        };
      case 'timeout':
        return fail(
          'Nobody answered the question in time. Proceed with your best judgement or ask again later.',
        );
      case 'cancelled':
        return fail('Interrupted while waiting for an answer.');
    }
  },
};
