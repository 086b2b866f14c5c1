/**
 * `gatehouse acp` when the daemon is SIGKILLed mid-turn, on both stores: the editor's prompt fails
 * with a clear `turn_not_completed` (-32018, `gateway_lost`); after a restart the turn is `unknown`
 * and was not run again, the editor loads the session (the bridge reconnects by itself), and the
 * same prompt retried with the same submission id is refused as `unknown`, not run a second time.
 */
import { methods } from '@agentclientprotocol/sdk';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Editor } from './acp-editor.js';
import { BACKENDS, storeEnv } from './gateway-harness.js';
import { modelConfig, quiet, tempDir, turnStarts, useRecoveryRig } from './recovery-harness.js';

const editors: Editor[] = [];
afterEach(async () => {
  await Promise.all(editors.splice(0).map((e) => e.close()));
});
const rig = useRecoveryRig();

describe.each(BACKENDS)('gatehouse acp across a daemon crash on %s', (store) => {
  beforeAll(() => {
    rig.store = store;
  });

  it(
    'fails the prompt clearly; after restart the turn is unknown and never re-run',
    { timeout: 120_000 },
    async () => {
      const demo = await rig.model();
      const config = modelConfig(demo);
      let d = await rig.daemon({ config });
      const editor = await Editor.start(d.home, storeEnv(d.home));
      editors.push(editor);
      const cwd = tempDir();
      const { sessionId } = await editor.agent.request(methods.agent.session.new, { cwd, mcpServers: [] });

      // The command's first output: the tool is recorded as running, so a crash leaves it in doubt.
      const running = editor.nextUpdate(
        (n) => n.update.sessionUpdate === 'tool_call_update' && n.update.status === 'in_progress',
      );
      const prompt = {
        sessionId,
        prompt: [{ type: 'text' as const, text: 'run: echo begun; sleep 30' }],
        _meta: { 'gatehouse/submission_id': 'editor-msg-1' },
      };
      const answer = editor.agent.request(methods.agent.session.prompt, prompt);
      await running;
      await d.kill();
      await expect(answer).rejects.toMatchObject({
        code: -32018,
        data: { reason: 'turn_not_completed', details: { outcome: 'gateway_lost' } },
      });

      d = await rig.daemon({ home: d.home, config });
      const client = await d.connect();
      const after = await quiet(client, sessionId);
      expect(after.pending_admissions.map((a) => a.state)).toEqual(['unknown']);
      const admissionId = after.pending_admissions[0]!.admission_id;
      expect(turnStarts(demo, admissionId)).toBe(1);

      // The same editor goes on: the bridge reconnects to the new daemon and replays the history.
      await editor.agent.request(methods.agent.session.load, { sessionId, cwd, mcpServers: [] });
      expect(editor.text(sessionId, 'user_message_chunk')).toBe('run: echo begun; sleep 30');
      // A retry of the same prompt (same submission id) is that turn, still unknown: not run again.
      await expect(editor.agent.request(methods.agent.session.prompt, prompt)).rejects.toMatchObject({
        code: -32018,
        data: { reason: 'turn_not_completed', details: { outcome: 'unknown', admission_id: admissionId } },
      });
      expect(turnStarts(demo, admissionId)).toBe(1);
      expect((await quiet(client, sessionId)).pending_admissions.map((a) => a.state)).toEqual(['unknown']);
    },
  );
});
