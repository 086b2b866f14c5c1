/**
 * Issue 26 item 6 through the real daemon: a session created on provider `alpha` fails every turn
 * with `provider_unavailable` once alpha is removed from config.yaml and the daemon restarted;
 * `session.model` (and `/model` in `gatehouse chat`) moves it to `beta`, checked against what
 * runtime.describe lists, and the next turn completes there. A `model` that the provider's list does
 * not name is refused at creation too.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startDemoModel, type DemoModelServer } from '../../src/runtime/demo/server.js';
import { RpcCallError, type GatewayClient } from '../../src/surfaces/client/rpc-client.js';
import { requireBuild, runCli, tempHome } from './cli.js';
import {
  BACKENDS,
  dropTestSchemas,
  nextEvent,
  startDaemon,
  useSharedDaemon,
  type RunningDaemon,
} from './gateway-harness.js';
import { chatRequests, createAttached, runTurn, tempDir } from './seed-fixture.js';

const OWN_KEY = 'session-own-key-0003';

let alpha: DemoModelServer;
let beta: DemoModelServer;

function config(withAlpha: boolean): string {
  return [
    'providers:',
    ...(withAlpha ? ['  alpha:', `    base_url: ${alpha.baseUrl}`, '    models: [alpha-model]'] : []),
    '  beta:',
    `    base_url: ${beta.baseUrl}`,
    '    models: [beta-model, beta-other]',
    `default_provider: ${withAlpha ? 'alpha' : 'beta'}`,
  ].join('\n');
}

async function refusal(client: GatewayClient, method: string, params: object): Promise<RpcCallError> {
  const error = await client.call(method, params).catch((e: unknown) => e);
  expect(error).toBeInstanceOf(RpcCallError);
  return error as RpcCallError;
}

/**
 * Two sessions on alpha with a completed turn each; then alpha leaves the config and the daemon
 * restarts. The two cases that need it share it, one session each (`rpc` and `chat`).
 */
async function strandedOnAlpha(store: (typeof BACKENDS)[number]): Promise<{
  daemon: RunningDaemon;
  client: GatewayClient;
  sessions: string[];
}> {
  const home = tempHome();
  const first = await startDaemon({ home, store, config: config(true) });
  let client = await first.connect();
  const sessions: string[] = [];
  for (const name of ['rpc', 'chat']) {
    const session = await createAttached(client, { cwd: tempDir(), toolsets: [], title: name });
    const done = await runTurn(client, session, `${name}-1`, 'hello');
    expect(done.event['outcome']).toBe('completed');
    sessions.push(session);
  }
  await first.stop();
  const daemon = await startDaemon({ home, store, config: config(false) });
  client = await daemon.connect();
  for (const session of sessions) await client.call('session.resume', { session_id: session });
  return { daemon, client, sessions };
}

describe.each(BACKENDS)('moving a session to another provider on %s', (store) => {
  beforeAll(async () => {
    requireBuild();
    alpha = await startDemoModel();
    beta = await startDemoModel();
  });

  afterEach(() => dropTestSchemas());

  afterAll(async () => {
    await alpha?.close();
    await beta?.close();
  });

  let stranded: { client: GatewayClient; sessions: string[] } | null = null;
  const strandedDaemon = useSharedDaemon(async () => {
    const started = await strandedOnAlpha(store);
    stranded = started;
    return started.daemon;
  });
  const sharedStranded = async () => ({ daemon: await strandedDaemon(), ...stranded! });
  // The cases on a daemon that keeps alpha: a session of their own each.
  const withAlpha = useSharedDaemon(() => startDaemon({ store, config: config(true) }));

  it(
    'session.model moves a session whose provider left the config, and its next turn completes',
    { timeout: 120_000 },
    async () => {
      const { client, sessions } = await sharedStranded();
      const session = sessions[0]!;

      const failed = await runTurn(client, session, 'rpc-2', 'hello again');
      expect(failed.event['outcome']).toBe('failed');
      expect(JSON.stringify(failed.event)).toContain('provider_unavailable');
      // It says the way out.
      expect(JSON.stringify(failed.event)).toContain('/model in the chat, session.model over RPC');

      // Checked against runtime.describe: an unknown provider, an unlisted model, no provider.
      const unknown = await refusal(client, 'session.model', {
        session_id: session,
        provider: 'gamma',
        model: 'x',
      });
      expect(unknown.reason).toBe('invalid_params');
      expect(unknown.details).toMatchObject({ field: 'provider' });
      expect(unknown.message).toBe('unknown provider "gamma"; configured: beta');
      const unlisted = await refusal(client, 'session.model', {
        session_id: session,
        provider: 'beta',
        model: 'nope',
      });
      expect(unlisted.reason).toBe('invalid_params');
      expect(unlisted.details).toMatchObject({ field: 'model' });
      expect(unlisted.message).toBe(
        'provider "beta" lists no model "nope"; its models: beta-model, beta-other',
      );
      const gone = await refusal(client, 'session.model', { session_id: session, model: 'beta-model' });
      expect(gone.details).toMatchObject({ field: 'provider' });
      expect(gone.message).toContain('provider "alpha" is not configured');

      const announced = nextEvent(client, 'session.model', (e) => e.session_id === session);
      const moved = await client.call('session.model', {
        session_id: session,
        provider: 'beta',
        model: 'beta-other',
      });
      expect(moved).toEqual({
        session_id: session,
        provider: 'beta',
        model: 'beta-other',
        previous: { provider: 'alpha', model: 'alpha-model' },
        changed: true,
      });
      expect((await announced).event).toMatchObject({ provider: 'beta', model: 'beta-other' });
      expect(await client.call('session.info', { session_id: session })).toMatchObject({
        provider: 'beta',
        model: 'beta-other',
      });

      const before = chatRequests(beta).length;
      const done = await runTurn(client, session, 'rpc-3', 'hello on beta');
      expect(done.event['outcome']).toBe('completed');
      const sent = chatRequests(beta).slice(before);
      expect(sent.map((body) => body.model)).toContain('beta-other');
      // The conversation came along: the first exchange, held on alpha, reaches beta.
      expect(JSON.stringify(sent.at(-1)!.messages)).toContain('hello again');

      // Recorded: the history lists the change; a repeat changes nothing.
      const history = await client.call<{ model_changes: unknown[] }>('session.history', {
        session_id: session,
      });
      expect(history.model_changes).toEqual([
        expect.objectContaining({
          from: { provider: 'alpha', model: 'alpha-model' },
          to: { provider: 'beta', model: 'beta-other' },
        }),
      ]);
      const again = await client.call('session.model', { session_id: session, model: 'beta-other' });
      expect(again).toMatchObject({ changed: false });
    },
  );

  it('/model in gatehouse chat shows the choices and moves the session', { timeout: 120_000 }, async () => {
    const { daemon, client, sessions } = await sharedStranded();
    const session = sessions[1]!;
    const run = await runCli(daemon.home, ['chat', '--resume', session], {
      input: '/model\n/model gamma/x\n/model beta/beta-model\nhello from the chat\n',
    });
    // A refused choice says why, once, and the chat goes on.
    expect(run.stderr.trim()).toBe('gatehouse: /model failed: unknown provider "gamma"; configured: beta');
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('(model: alpha/alpha-model)');
    expect(run.stdout).toContain('beta (default): beta-model, beta-other');
    expect(run.stdout).toContain('(model: now beta/beta-model)');
    expect(run.stdout).toContain('you said: hello from the chat');
    expect(await client.call('session.info', { session_id: session })).toMatchObject({
      provider: 'beta',
      model: 'beta-model',
    });
    const shown = await runCli(daemon.home, ['sessions', '--show', session]);
    expect(shown.stderr).toBe('');
    expect(shown.stdout).toMatch(/^model changed \S+: alpha\/alpha-model → beta\/beta-model$/m);
  });

  it('a session with its own endpoint and key gives both up when moved', { timeout: 60_000 }, async () => {
    const daemon = await withAlpha();
    const client = await daemon.connect();
    const params = {
      request_id: 'own',
      cwd: tempDir(),
      toolsets: [],
      base_url: alpha.baseUrl,
      api_key: OWN_KEY,
    };
    const session = await createAttached(client, params);
    await client.call('session.model', { session_id: session, provider: 'beta', model: 'beta-model' });
    // A repeated creation brings the key back only to a session still on its own endpoint.
    await client.call('session.create', params);
    const before = beta.requests.length;
    const done = await runTurn(client, session, 'own-1', 'hello');
    expect(done.event['outcome']).toBe('completed');
    const sent = beta.requests.slice(before).filter((r) => r.path === '/v1/chat/completions');
    expect(sent.length).toBeGreaterThan(0);
    for (const request of sent) expect(JSON.stringify(request.headers)).not.toContain(OWN_KEY);
    expect(await client.call('session.info', { session_id: session })).toMatchObject({
      provider: 'beta',
      model: 'beta-model',
    });
  });

  it('a model the provider does not list is refused at creation', { timeout: 60_000 }, async () => {
    const daemon = await withAlpha();
    const client = await daemon.connect();
    const error = await refusal(client, 'session.create', {
      cwd: tempDir(),
      provider: 'beta',
      model: 'nope',
    });
    expect(error.reason).toBe('invalid_params');
    expect(error.details).toMatchObject({ field: 'model' });
  });
});
