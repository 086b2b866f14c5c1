/**
 * Issue 31 item 1, a turn's flight recorder (`session.turns`) through the real daemon on SQLite and
 * PostgreSQL: a turn whose tool call a human allowed and one whose call was denied read back as
 * their steps — admitted, started after its queue wait, each model step, each tool call with its
 * command, outcome and approval, the outcome — with the turn's tokens; and read the same after a
 * restart, since it comes from the stored records only.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import type { GatewayClient } from '../../src/surfaces/client/rpc-client.js';
import { BACKENDS, nextEvent } from './gateway-harness.js';
import { modelConfig, tempDir, useRecoveryRig, type Snapshot } from './recovery-harness.js';

const rig = useRecoveryRig();

type Turn = {
  admission_id: string;
  state: string;
  tokens: { input: number; output: number } | null;
  events: { kind: string; [k: string]: unknown }[];
};

async function answered(client: GatewayClient, session_id: string, text: string, choice: 'once' | 'deny') {
  const asked = nextEvent(client, 'approval.request', (e) => e.session_id === session_id);
  const settled = nextEvent(client, 'admission.settled', (e) => e.session_id === session_id);
  await client.call('prompt.submit', { session_id, submission_id: text, text });
  const prompt = (await asked).event;
  await client.call('approval.respond', {
    session_id,
    execution_generation: prompt['execution_generation'],
    prompt_id: prompt['prompt_id'],
    choice,
  });
  await settled;
}

describe.each(BACKENDS)('the flight recorder on %s', (store) => {
  beforeAll(() => {
    rig.store = store;
  });

  it(
    'reads a turn back step by step from the stored records, the same after a restart',
    { timeout: 120_000 },
    async () => {
      const demo = await rig.model();
      const d = await rig.daemon({ config: modelConfig(demo) });
      const client = await d.connect();
      const { session_id } = await client.call<Snapshot>('session.create', { cwd: tempDir() });
      await client.call('session.resume', { session_id });
      await answered(client, session_id, 'run: touch allowed-file', 'once');
      await answered(client, session_id, 'run: touch denied-file', 'deny');

      const { turns } = await client.call<{ turns: Turn[] }>('session.turns', { session_id });
      expect(turns.map((t) => t.state)).toEqual(['completed', 'completed']);
      const [denied, allowed] = turns;
      expect(allowed!.events.map((e) => e.kind)).toEqual([
        'admitted',
        'started',
        'model',
        'tool',
        'model',
        'settled',
      ]);
      expect(typeof allowed!.events[1]!['queue_wait_ms']).toBe('number');
      expect(allowed!.events[2]).toMatchObject({ tool_calls: ['terminal'] });
      expect(typeof allowed!.events[2]!['duration_ms']).toBe('number');
      expect(allowed!.events[3]).toMatchObject({
        name: 'terminal',
        command: 'touch allowed-file',
        outcome: 'succeeded',
        approval: 'once',
      });
      expect(allowed!.events[5]).toMatchObject({ outcome: 'completed' });
      expect(allowed!.tokens!.input).toBeGreaterThan(0);
      expect(allowed!.tokens!.output).toBeGreaterThan(0);
      expect(denied!.events.find((e) => e.kind === 'tool')).toMatchObject({
        command: 'touch denied-file',
        outcome: 'denied',
        approval: 'denied',
      });
      expect(await client.call('session.turns', { session_id, limit: 1 })).toMatchObject({
        turns: [{ admission_id: denied!.admission_id }],
      });

      await d.stop();
      const again = await rig.daemon({ home: d.home, config: modelConfig(demo) });
      const c2 = await again.connect();
      expect(await c2.call('session.turns', { session_id })).toEqual({ session_id, turns });
    },
  );
});
