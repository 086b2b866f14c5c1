/**
 * Issue 12 item 19 through the real daemon and real bash: a running terminal command streams its
 * progress to viewers as `tool.output` events (last line, elapsed time, bytes so far), at most two
 * a second, in process and from a safe-mode worker alike, and bounded whatever the command prints.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayClient } from '../../src/surfaces/client/rpc-client.js';
import { startDemoModel, type DemoModelServer } from '../../src/runtime/demo/server.js';
import { BACKENDS, sessionEvent, startDaemon, useSharedDaemon } from './gateway-harness.js';
import { requireBuild } from './cli.js';
import { createAttached, tempDir } from './seed-fixture.js';

beforeAll(requireBuild);
const E2E_TIMEOUT_MS = 120_000;

type Event = { type: string; [k: string]: unknown };

/** Every event of the session from submitting `run: command` until its turn.complete. */
async function eventsOf(
  client: GatewayClient,
  sessionId: string,
  id: string,
  command: string,
): Promise<Event[]> {
  const events: Event[] = [];
  let resolve: () => void = () => undefined;
  const done = new Promise<void>((r) => (resolve = r));
  const off = client.onNotification((n) => {
    const e = sessionEvent(n);
    if (e?.session_id !== sessionId) return;
    events.push(e.event);
    if (e.event.type === 'turn.complete') resolve();
  });
  await client.call('prompt.submit', { session_id: sessionId, submission_id: id, text: `run: ${command}` });
  await done;
  off();
  return events;
}

function toolEvents(events: Event[]): Event[] {
  return events.filter((e) => e.type.startsWith('tool.'));
}

const TICKS = 'for i in 1 2 3 4 5 6; do echo tick $i; sleep 0.4; done';

describe.each(BACKENDS)('tool progress on %s', (store) => {
  describe('tool.output: live progress of a running command', () => {
    // One daemon for the three cases, a session of their own each.
    let demo: DemoModelServer | null = null;
    afterAll(() => demo?.close());
    const daemon = useSharedDaemon(async () => {
      demo = await startDemoModel();
      return startDaemon({ store, config: `model: {base_url: ${demo.baseUrl}, model: gatehouse-demo}` });
    });

    for (const safe of [false, true]) {
      it(
        `a command that prints over a few seconds: tool.start, throttled tool.output events, tool.complete${safe ? ' (safe-mode worker)' : ''}`,
        async () => {
          const d = await daemon();
          const client = await d.connect();
          const session = await createAttached(client, { cwd: tempDir(), yolo: true, safe_mode: safe });
          const tools = toolEvents(await eventsOf(client, session, 'ticks', TICKS));

          expect(tools[0]!.type).toBe('tool.start');
          expect(tools.at(-1)!.type).toBe('tool.complete');
          const outputs = tools.slice(1, -1);
          expect(outputs.every((e) => e.type === 'tool.output')).toBe(true);
          expect(outputs.length).toBeGreaterThanOrEqual(3);
          for (const e of outputs) {
            expect(e).toMatchObject({ tool_call_id: tools[0]!['tool_call_id'], name: 'terminal' });
            expect(e['last_line']).toMatch(/^tick [1-6]$/);
          }
          const ticks = outputs.map((e) => Number(String(e['last_line']).slice(5)));
          expect(ticks).toEqual([...ticks].sort((a, b) => a - b));
          expect(ticks[0]).toBe(1); // the first line is shown at once
          // At most one event per 500 ms of the command's own clock.
          const elapsed = outputs.map((e) => Number(e['elapsed_ms']));
          for (let i = 1; i < elapsed.length; i++)
            expect(elapsed[i]! - elapsed[i - 1]!).toBeGreaterThanOrEqual(450);
          const bytes = outputs.map((e) => Number(e['bytes']));
          expect(bytes).toEqual([...bytes].sort((a, b) => a - b));
        },
        E2E_TIMEOUT_MS,
      );
    }

    it(
      'a command that prints 40 MB as fast as it can: few small events, the last line capped, the result capped',
      async () => {
        const d = await daemon();
        const client = await d.connect();
        const session = await createAttached(client, { cwd: tempDir(), yolo: true });
        const tools = toolEvents(
          await eventsOf(
            client,
            session,
            'flood',
            "yes 'flooding the terminal tool' | head -c 40000000; printf '%0300d' 7",
          ),
        );
        const complete = tools.at(-1)!;
        const outputs = tools.filter((e) => e.type === 'tool.output');
        expect(outputs.length).toBeGreaterThan(0);
        expect(outputs.length).toBeLessThanOrEqual(Number(complete['duration_ms']) / 500 + 2);
        for (const e of outputs) {
          expect(JSON.stringify(e).length).toBeLessThan(600);
          expect(String(e['last_line']).length).toBeLessThanOrEqual(200);
        }
        expect(Math.max(...outputs.map((e) => Number(e['bytes'])))).toBeLessThanOrEqual(40_000_300);
        const messages = await client.call<{ messages: { role: string; content: string }[] }>(
          'session.resume',
          {
            session_id: session,
          },
        );
        const result = messages.messages.filter((m) => m.role === 'tool').at(-1)!;
        expect(result.content.length).toBeLessThan(70 * 1024);
        expect(result.content).toMatch(/output truncated: \d+ bytes dropped/);
      },
      E2E_TIMEOUT_MS,
    );
  });
});
