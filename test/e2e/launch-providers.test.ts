/**
 * Providers and the launch fields that follow them (issue 15, SPEC LOC-5; issue 11's per-model
 * windows), through the real daemon: two demo-model instances on their own loopback ports stand for
 * two providers. `provider` picks one at creation (unknown: invalid_params), `reasoning` reaches it
 * in the form it takes and is recorded in session.info, each model's context window feeds the
 * compression budget, `editor` is recorded for acp sessions, and runtime.describe shows provider
 * names without their URLs or keys.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SUMMARY_REQUEST_MARKER } from '../../src/runtime/context/summary-prompt.js';
import { startDemoModel, type DemoModelServer } from '../../src/runtime/demo/server.js';
import { RpcCallError, type GatewayClient } from '../../src/surfaces/client/rpc-client.js';
import { requireBuild, tempHome } from './cli.js';
import { BACKENDS, dropTestSchemas, startDaemon, type RunningDaemon } from './gateway-harness.js';
import {
  chatRequests,
  createAttached,
  runTurn,
  tempDir,
  type ChatBody,
  type Snapshot,
} from './seed-fixture.js';

const ALPHA_KEY = 'alpha-secret-key-0001';
const BETA_KEY = 'beta-secret-key-0002';

let alpha: DemoModelServer;
let beta: DemoModelServer;
let daemon: RunningDaemon;
let client: GatewayClient;
let turnCount = 0;

type Body = ChatBody & Record<string, unknown>;

/** Runs one turn of `session` and returns the request each provider received for it (or undefined). */
async function turn(session: string, text = 'hello'): Promise<{ alpha?: Body; beta?: Body }> {
  const a = chatRequests(alpha).length;
  const b = chatRequests(beta).length;
  const done = await runTurn(client, session, `s-${++turnCount}`, text);
  expect(done.event['outcome']).toBe('completed');
  return {
    alpha: chatRequests(alpha)[a] as Body | undefined,
    beta: chatRequests(beta)[b] as Body | undefined,
  };
}

async function refusal(params: Record<string, unknown>): Promise<RpcCallError> {
  const error = await client.call('session.create', { cwd: tempDir(), ...params }).catch((e: unknown) => e);
  expect(error).toBeInstanceOf(RpcCallError);
  return error as RpcCallError;
}

async function info(session: string): Promise<Record<string, unknown>> {
  return client.call<Record<string, unknown>>('session.info', { session_id: session });
}

describe.each(BACKENDS)('providers and launch fields on %s', (store) => {
  beforeAll(async () => {
    requireBuild();
    alpha = await startDemoModel();
    beta = await startDemoModel();
    const home = tempHome();
    // A skill in the home: without skills.offer_available it is not listed for the model.
    mkdirSync(join(home, 'skills', 'review'), { recursive: true });
    writeFileSync(
      join(home, 'skills', 'review', 'SKILL.md'),
      '---\nname: review\ndescription: Reviews\n---\nBody\n',
    );
    daemon = await startDaemon({
      home,
      store,
      env: { GH_TEST_ALPHA_KEY: ALPHA_KEY, GH_TEST_BETA_KEY: BETA_KEY },
      config: [
        'providers:',
        '  alpha:',
        `    base_url: ${alpha.baseUrl}`,
        '    api_key_env: GH_TEST_ALPHA_KEY',
        '    models: [alpha-model]',
        '  beta:',
        `    base_url: ${beta.baseUrl}`,
        '    api_key_env: GH_TEST_BETA_KEY',
        '    reasoning_format: reasoning_object',
        '    context_window: 2048',
        '    models:',
        '      beta-large: {context_window: 200000}',
        '      beta-small: {}',
        '  plain:',
        `    base_url: ${beta.baseUrl}`,
        '    models: [plain-model]',
        '    reasoning_format: none',
        'default_provider: alpha',
        'compression:',
        '  threshold: 0.75',
        '  tail_tokens: 100',
      ].join('\n'),
    });
    client = await daemon.connect();
  });

  afterAll(async () => {
    await daemon?.stop();
    await alpha?.close();
    await beta?.close();
    await dropTestSchemas();
  });

  describe('provider', () => {
    /** A session created with `params` reaches only `on`, with `on`'s key and `model`. */
    async function reaches(
      params: Record<string, unknown>,
      expected: { on: 'alpha' | 'beta'; key: string; model: string },
    ): Promise<void> {
      const session = await createAttached(client, { cwd: tempDir(), toolsets: [], ...params });
      const sent = await turn(session);
      const other = expected.on === 'alpha' ? 'beta' : 'alpha';
      expect(sent[other]).toBeUndefined();
      expect(sent[expected.on]?.model).toBe(expected.model);
      const server = expected.on === 'alpha' ? alpha : beta;
      const header = server.requests.filter((r) => r.path === '/v1/chat/completions').at(-1)!.headers;
      expect(header.authorization).toBe(`Bearer ${expected.key}`);
      expect(await info(session)).toMatchObject({ provider: expected.on, model: expected.model });
    }

    it('a session on the second provider reaches its own endpoint with its key and default model', async () => {
      await reaches({ provider: 'beta' }, { on: 'beta', key: BETA_KEY, model: 'beta-large' });
    });

    it('without provider a session gets the default provider, frozen by name', async () => {
      await reaches({}, { on: 'alpha', key: ALPHA_KEY, model: 'alpha-model' });
    });

    it('an unknown provider is invalid_params naming the configured ones', async () => {
      const error = await refusal({ provider: 'gamma' });
      expect(error.reason).toBe('invalid_params');
      expect(error.message).toBe('unknown provider "gamma"; configured: alpha, beta, plain');
    });

    it('runtime.describe lists the providers by name and model, never a URL or a key', async () => {
      const described = await client.call<{ session_create: { providers: unknown; defaults: unknown } }>(
        'runtime.describe',
        {},
      );
      expect(described.session_create.providers).toEqual([
        { name: 'alpha', default: true, models: ['alpha-model'], any_model: false, demo: false },
        { name: 'beta', default: false, models: ['beta-large', 'beta-small'], any_model: false, demo: false },
        { name: 'plain', default: false, models: ['plain-model'], any_model: false, demo: false },
      ]);
      expect(described.session_create.defaults).toMatchObject({ provider: 'alpha', model: 'alpha-model' });
      const text = JSON.stringify(described);
      for (const secret of [alpha.url, beta.url, new URL(alpha.url).port, ALPHA_KEY, BETA_KEY, 'GH_TEST_'])
        expect(text).not.toContain(secret);
    });
  });

  describe('reasoning', () => {
    it('reaches an OpenAI-style provider as reasoning_effort and is recorded in session.info', async () => {
      const session = await createAttached(client, { cwd: tempDir(), toolsets: [], reasoning: 'high' });
      const sent = await turn(session);
      expect(sent.alpha?.['reasoning_effort']).toBe('high');
      expect(sent.alpha?.['reasoning']).toBeUndefined();
      expect(await info(session)).toMatchObject({ reasoning: 'high' });
    });

    it('reaches a provider with reasoning_format reasoning_object as {reasoning: {effort}}', async () => {
      const session = await createAttached(client, {
        cwd: tempDir(),
        toolsets: [],
        provider: 'beta',
        reasoning: 'low',
      });
      const sent = await turn(session);
      expect(sent.beta?.['reasoning']).toEqual({ effort: 'low' });
      expect(sent.beta?.['reasoning_effort']).toBeUndefined();
    });

    it('without reasoning nothing is sent and session.info says null', async () => {
      const session = await createAttached(client, { cwd: tempDir(), toolsets: [] });
      const sent = await turn(session);
      expect(sent.alpha).not.toHaveProperty('reasoning_effort');
      expect(sent.alpha).not.toHaveProperty('reasoning');
      expect(await info(session)).toMatchObject({ reasoning: null });
    });

    it('a provider that takes no reasoning effort refuses one at creation', async () => {
      const error = await refusal({ provider: 'plain', reasoning: 'low' });
      expect(error.reason).toBe('invalid_params');
      expect(error.message).toContain('provider "plain" takes no reasoning effort');
    });
  });

  describe('context windows per provider and model', () => {
    const padding = 'lorem ipsum dolor sit amet '.repeat(40);

    async function summaryCalls(model: string): Promise<number> {
      const session = await createAttached(client, { cwd: tempDir(), toolsets: [], provider: 'beta', model });
      const from = chatRequests(beta).length;
      for (let n = 0; n < 6; n++) await turn(session, `${n} ${padding}`);
      return chatRequests(beta)
        .slice(from)
        .filter((b) => String(b.messages[0]?.content).startsWith(SUMMARY_REQUEST_MARKER)).length;
    }

    // beta's window is 2048 tokens; beta-large names its own 200,000. Without either the family
    // table's default (128,000) would apply to both, and neither would compress.
    it("a model without its own window gets the provider's (small): the conversation compresses", async () => {
      expect(await summaryCalls('beta-small')).toBeGreaterThan(0);
    });

    it("a model's own (large) window wins over the provider's: no compression", async () => {
      expect(await summaryCalls('beta-large')).toBe(0);
    });
  });

  describe('editor (acp only)', () => {
    it('is recorded and shown in session.info of an acp session', async () => {
      const session = await createAttached(client, { cwd: tempDir(), source: 'acp', editor: 'zed' });
      expect(await info(session)).toMatchObject({ source: 'acp', editor: 'zed' });
      const snapshot = await client.call<Snapshot>('session.resume', { session_id: session });
      expect(snapshot.info['editor']).toBe('zed');
    });

    it('is null without it, and refused for another source', async () => {
      const session = await createAttached(client, { cwd: tempDir(), source: 'acp' });
      expect(await info(session)).toMatchObject({ editor: null });
      const error = await refusal({ source: 'cli', editor: 'zed' });
      expect(error.reason).toBe('invalid_params');
      expect(error.message).toContain('editor is only accepted with source "acp"');
    });
  });

  describe('the available-skills list is off by default', () => {
    it('a home skill is not offered without skills.offer_available', async () => {
      const session = await createAttached(client, { cwd: tempDir(), toolsets: [] });
      const sent = await turn(session);
      expect(String(sent.alpha?.messages[0]?.content)).not.toContain('## Available skills');
    });
  });
});
