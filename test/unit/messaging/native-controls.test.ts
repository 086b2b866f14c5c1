/**
 * The approval logic every button platform shares (native-controls.ts): an open prompt is posted
 * with its buttons, or as typed text when none can be rendered; a settled or replaced one is edited
 * where it was posted (its chat and thread), its text saying how it ended, its controls closed.
 */
import { describe, expect, it } from 'vitest';
import type { ApprovalPrompt, ApprovalResult } from '../../../src/domain/messaging/adapter.js';
import { settledBlocks } from '../../../src/surfaces/platforms/slack/blocks.js';
import { buttonApprovals, settledText } from '../../../src/surfaces/platforms/native-controls.js';

const prompt: ApprovalPrompt = {
  prompt_id: 'prm_1',
  execution_generation: 2,
  text: 'Approval needed: x\n\nrm -rf /tmp/x',
};

function recorder(options: { buttons: boolean; limit?: number }) {
  const requests: unknown[][] = [];
  const controls = buttonApprovals<string>({
    limit: options.limit ?? 1000,
    open: (p) => (options.buttons ? `open:${p.execution_generation}` : null),
    closed: (p, result) => `closed:${p.execution_generation}:${result}`,
    post: (...args) => {
      requests.push(['post', ...args]);
      return Promise.resolve('m1');
    },
    edit: (...args) => {
      requests.push(['edit', ...args]);
      return Promise.resolve();
    },
  });
  return { controls, requests };
}

describe('buttonApprovals', () => {
  it('asks with the open buttons in the chat and thread given, and settles the same message there', async () => {
    const { controls, requests } = recorder({ buttons: true });
    expect(await controls.ask('c1', 't1', prompt)).toEqual({ message_id: 'm1' });
    await controls.settle('c1', 't1', 'm1', prompt, 'approved once');
    expect(requests).toEqual([
      ['post', 'c1', 't1', prompt.text, 'open:2'],
      ['edit', 'c1', 't1', 'm1', `${prompt.text}\n\nAnswered: approved once.`, 'closed:2:approved once'],
    ]);
  });

  it('a prompt asked again after a restart replaces the old message: its text says so, its buttons close', async () => {
    const { controls, requests } = recorder({ buttons: true });
    const old = { ...prompt, execution_generation: 1 };
    await controls.settle('c1', null, 'm0', old, 'replaced');
    const text = settledText(old, 'replaced');
    expect(text).toMatch(
      /Replaced: the gateway restarted and asked this again in a newer message; these buttons no longer answer it\.$/,
    );
    expect(requests).toEqual([['edit', 'c1', null, 'm0', text, 'closed:1:replaced']]);
    const blocks = JSON.stringify(settledBlocks(old, 'replaced' satisfies ApprovalResult));
    expect(blocks).toContain('Replaced: the gateway restarted');
    expect(blocks).not.toContain('Answered');
  });

  it('without buttons the prompt is asked as text the typed commands answer; texts are cut to the limit', async () => {
    const { controls, requests } = recorder({ buttons: false, limit: 40 });
    await controls.ask('c1', null, prompt);
    const [, , , text, buttons] = requests[0]!;
    expect(buttons).toBeNull();
    expect(String(text)).toHaveLength(40);
    expect(String(text)).toBe(`${prompt.text}\n\nReply /approve`.slice(0, 40));
  });
});
