/**
 * The runtime both session engines share (src/daemon/services/runtime.ts): one set of providers,
 * one demo model, and the two prompt brokers, built in one place. Chat turns run on the default
 * provider's default model through the same client local sessions use; with no provider that is the
 * demo model on loopback. A chat's `always` answer stays in memory, a local one is persisted
 * (docs/decisions.md).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/daemon/config.js';
import { startRuntime, type Runtime } from '../../../src/daemon/services/runtime.js';
import type { PromptBroker } from '../../../src/runtime/approvals/broker.js';
import { startDemoModel, type DemoModelServer } from '../../../src/runtime/demo/server.js';
import type { ApprovalOutcome, TurnEvent } from '../../../src/runtime/types.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function runtimeOf(yaml: string, profileDir?: string): Promise<{ runtime: Runtime; dir: string }> {
  const dir = profileDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'gatehouse-runtime-'));
  if (profileDir === undefined) cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
  const { config } = parseConfig(yaml, path.join(dir, 'config.yaml'));
  const runtime = await startRuntime({ config, env: {}, profileDir: dir });
  cleanups.push(() => runtime.close());
  return { runtime, dir };
}

async function demoServer(): Promise<DemoModelServer> {
  const server = await startDemoModel();
  cleanups.push(() => server.close());
  return server;
}

/**
 * Asks `broker` to approve a recursive delete and, if it asks a human, answers `choice`; a
 * remembered pattern is approved without asking.
 */
function approve(broker: PromptBroker, sessionId: string, choice: string): Promise<ApprovalOutcome> {
  return broker.requestApproval(
    {
      sessionId,
      admissionId: undefined,
      executionGeneration: 1,
      signal: new AbortController().signal,
      emit: (event: TurnEvent) => {
        if (event.type !== 'approval.request') return;
        broker.respondApproval({
          session_id: sessionId,
          execution_generation: 1,
          prompt_id: event.prompt_id,
          choice,
        });
      },
    },
    { kind: 'command', command: 'rm -rf build', reason: 'recursive delete', cwd: '/srv/project' },
  );
}

describe('the runtime both engines share', () => {
  it('with no provider: starts the demo model on loopback, and chat turns reach it through the default client', async () => {
    const { runtime } = await runtimeOf('demo_model:\n  context_window: 9000\n');
    expect(runtime.demo).not.toBeNull();
    // The client a local session on the defaults gets is the very one chat turns use.
    expect(runtime.chat.model).toBe(runtime.providers.model(runtime.providers.defaultChoice(), undefined));
    expect(runtime.chat.window).toBe(9000);
    const result = await runtime.chat.model.complete({ messages: [{ role: 'user', content: 'ping' }] });
    expect(result.text).toMatch(/you said: ping/);
  });

  it("with providers: starts no demo model; chat turns run on the default provider's first model and window", async () => {
    const other = await demoServer();
    const chosen = await demoServer();
    const { runtime } = await runtimeOf(
      [
        'providers:',
        '  other:',
        `    base_url: ${other.baseUrl}`,
        '    models: [other-model]',
        '  chosen:',
        `    base_url: ${chosen.baseUrl}`,
        '    models:',
        '      first-model: { context_window: 12345 }',
        '      second-model: {}',
        'default_provider: chosen',
      ].join('\n'),
    );
    expect(runtime.demo).toBeNull();
    expect(runtime.chat.window).toBe(12345);
    await runtime.chat.model.complete({ messages: [{ role: 'user', content: 'ping' }] });
    expect(other.requests).toEqual([]);
    expect(chosen.requests.map((r) => (r.body as { model?: string } | null)?.model)).toEqual(['first-model']);
  });

  it("keeps a chat's `always` in memory and persists a local one, as two brokers", async () => {
    const { runtime, dir } = await runtimeOf('');
    const file = path.join(dir, 'always-allow.json');
    expect(runtime.chatPrompts).not.toBe(runtime.prompts);
    expect(await approve(runtime.chatPrompts, 'chat-session', 'always')).toEqual({
      kind: 'approved',
      choice: 'always',
    });
    // Remembered for the chats of this run, not written to disk.
    expect(await approve(runtime.chatPrompts, 'another-chat', 'deny')).toEqual({
      kind: 'approved',
      choice: 'remembered',
    });
    expect(fs.existsSync(file)).toBe(false);
    // The chat's answer applies to no local session: it is asked.
    expect(await approve(runtime.prompts, 'local-session', 'always')).toEqual({
      kind: 'approved',
      choice: 'always',
    });
    expect(JSON.parse(fs.readFileSync(file, 'utf8'))).toMatchObject({
      version: 2,
      rules: [{ kind: 'command', cwd: '/srv/project', shown: 'rm -rf build' }],
    });
    // A later runtime on the same profile remembers the local answer without asking.
    const again = await runtimeOf('', dir);
    expect(await approve(again.runtime.prompts, 'another', 'deny')).toEqual({
      kind: 'approved',
      choice: 'remembered',
    });
    // …and the chats of that run are asked again.
    expect(await approve(again.runtime.chatPrompts, 'chat-session', 'deny')).toEqual({ kind: 'denied' });
  });
});
