/**
 * Issue 27, the OpenAI-compatible endpoint, driven by the official `openai` client against the real
 * daemon on both stores: plain and streamed completions, one session across requests (`user`),
 * bearer keys bound to principals (a bad key 401, another key's session 404 like an absent one),
 * an approval that waits answered 409 `approval_pending` and picked up by retrying the same
 * Idempotency-Key, and exactly-once across a SIGKILL right after the admission commits.
 */
import OpenAI from 'openai';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayClient } from '../../src/surfaces/client/rpc-client.js';
import { requireBuild, tempHome } from './cli.js';
import {
  BACKENDS,
  dropTestSchemas,
  startDaemon,
  useSharedDaemon,
  type Backend,
  type RunningDaemon,
} from './gateway-harness.js';

beforeAll(requireBuild);

const running: RunningDaemon[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((d) => d.stop()));
  await dropTestSchemas();
});

const KEYS = {
  GH_TEST_API_KEY_LAPTOP: 'sk-laptop-0123456789abcdef',
  GH_TEST_API_KEY_CI: 'sk-ci-0123456789abcdef0123',
};
const CONFIG = `api_server:
  approval_wait_s: 0
  keys:
    laptop:
      key_env: GH_TEST_API_KEY_LAPTOP
      scopes: [session:create, session:read, session:submit]
    ci:
      key_env: GH_TEST_API_KEY_CI
      scopes: [session:create, session:read, session:submit]
`;
const DEMO = 'Demo model (scripted stand-in)';
/** A case makes several turns (the crash case starts two daemons): generous on a loaded machine. */
const CASE = { timeout: 120_000 };

async function start(store: Backend, options: { home?: string; env?: NodeJS.ProcessEnv } = {}) {
  const d = await startDaemon({ store, config: CONFIG, ...options, env: { ...KEYS, ...options.env } });
  running.push(d);
  return d;
}

function openai(d: RunningDaemon, apiKey = KEYS.GH_TEST_API_KEY_LAPTOP): OpenAI {
  return new OpenAI({ baseURL: `${d.url}/v1`, apiKey, maxRetries: 0 });
}

interface Message {
  role: string;
  content: string | null;
  admission_id?: string;
}

async function transcript(client: GatewayClient, session_id: string): Promise<Message[]> {
  const page = await client.call<{ messages: Message[] }>('session.messages', { session_id, limit: 1000 });
  return page.messages;
}

describe.each(BACKENDS)('the OpenAI-compatible endpoint on %s', (store) => {
  describe('on one daemon (a `user`, and so a session, of their own each)', () => {
    const daemon = useSharedDaemon(() => startDaemon({ store, config: CONFIG, env: KEYS }));

    it('answers plain and streamed completions as turns of one session named by `user`', CASE, async () => {
      const d = await daemon();
      const api = openai(d);

      const models = await api.models.list();
      expect(models.data.map((m) => m.id)).toEqual(['gatehouse']);

      const { data: first, response } = await api.chat.completions
        .create({ model: 'gatehouse', user: 'notes', messages: [{ role: 'user', content: 'hello' }] })
        .withResponse();
      expect(first.object).toBe('chat.completion');
      expect(first.choices[0]!.message).toMatchObject({
        role: 'assistant',
        content: `${DEMO}: you said: hello`,
      });
      expect(first.choices[0]!.finish_reason).toBe('stop');
      expect(first.usage!.total_tokens).toBeGreaterThan(0);
      const sessionId = response.headers.get('x-gatehouse-session')!;
      expect(first.id).toBe(`chatcmpl-${response.headers.get('x-gatehouse-admission')}`);

      // The resent history is the client's copy: only the newest user message is admitted.
      const stream = await api.chat.completions.create({
        model: 'gatehouse',
        user: 'notes',
        stream: true,
        stream_options: { include_usage: true },
        messages: [
          { role: 'user', content: 'hello' },
          { role: 'assistant', content: 'something the session never said' },
          { role: 'user', content: 'run: echo streamed' },
        ],
      });
      let text = '';
      const tools: string[] = [];
      let finish: string | null = null;
      let usage: OpenAI.CompletionUsage | null | undefined;
      for await (const chunk of stream) {
        text += chunk.choices[0]?.delta.content ?? '';
        finish = chunk.choices[0]?.finish_reason ?? finish;
        usage = chunk.usage ?? usage;
        const notice = (chunk as unknown as { gatehouse?: { event: { type: string; name?: string } } })
          .gatehouse;
        if (notice?.event.type === 'tool.start') tools.push(notice.event.name!);
      }
      expect(text).toBe(`${DEMO}: the tool \`terminal\` returned:\nexit code 0\noutput:\nstreamed\n`);
      expect(tools).toEqual(['terminal']);
      expect(finish).toBe('stop');
      expect(usage!.total_tokens).toBeGreaterThan(0);

      // Both requests were turns of one session: its stored transcript is the history.
      const owner = await d.connect();
      const messages = await transcript(owner, sessionId);
      expect(messages.filter((m) => m.role === 'user').map((m) => m.content)).toEqual([
        'hello',
        'run: echo streamed',
      ]);
      expect(messages.some((m) => m.content === 'something the session never said')).toBe(false);
      const info = await owner.call<{ source: string; title: string }>('session.info', {
        session_id: sessionId,
      });
      expect(info).toMatchObject({ source: 'api', title: 'api: notes' });

      // Another `user` is another session.
      const { response: other } = await api.chat.completions
        .create({ model: 'gatehouse', user: 'drafts', messages: [{ role: 'user', content: 'hi' }] })
        .withResponse();
      expect(other.headers.get('x-gatehouse-session')).not.toBe(sessionId);
    });

    it(
      'refuses a bad key (401) and a session the key may not access (404, as an absent one)',
      CASE,
      async () => {
        const d = await daemon();
        await expect(
          openai(d, 'sk-not-a-key-of-this-daemon').chat.completions.create({
            model: 'gatehouse',
            messages: [{ role: 'user', content: 'hello' }],
          }),
        ).rejects.toMatchObject({ status: 401, code: 'invalid_api_key', type: 'invalid_request_error' });

        const { response } = await openai(d)
          .chat.completions.create({
            model: 'gatehouse',
            user: 'mine',
            messages: [{ role: 'user', content: 'hello' }],
          })
          .withResponse();
        const laptops = response.headers.get('x-gatehouse-session')!;
        const ci = openai(d, KEYS.GH_TEST_API_KEY_CI);
        const refusals = [];
        for (const session of [laptops, '20260101_000000_deadbeef']) {
          const refused = await ci.chat.completions
            .create(
              { model: 'gatehouse', messages: [{ role: 'user', content: 'let me in' }] },
              { headers: { 'X-Gatehouse-Session': session } },
            )
            .catch((error: unknown) => error);
          expect(refused).toBeInstanceOf(OpenAI.NotFoundError);
          refusals.push((refused as InstanceType<typeof OpenAI.NotFoundError>).code);
        }
        expect(refusals).toEqual(['session_not_found', 'session_not_found']);
        // Nothing was admitted to the laptop's session by the other key.
        const owner = await d.connect();
        const users = (await transcript(owner, laptops)).filter((m) => m.role === 'user');
        expect(users.map((m) => m.content)).toEqual(['hello']);

        // A field the session would not honour is refused by name, and so is an unknown model.
        await expect(
          openai(d).chat.completions.create({
            model: 'gatehouse',
            temperature: 0.2,
            messages: [{ role: 'user', content: 'hello' }],
          }),
        ).rejects.toMatchObject({ status: 400, code: 'unsupported_parameter', param: 'temperature' });
        await expect(
          openai(d).chat.completions.create({
            model: 'gpt-4o',
            messages: [{ role: 'user', content: 'hello' }],
          }),
        ).rejects.toMatchObject({ status: 404, code: 'model_not_found' });
      },
    );

    it(
      'answers 409 approval_pending while a tool waits for approval; the same key then gets the answer',
      CASE,
      async () => {
        const d = await daemon();
        const api = openai(d);
        const request = {
          model: 'gatehouse',
          user: 'ops',
          messages: [{ role: 'user' as const, content: 'run: setsid -w echo approved' }],
        };
        const key = { headers: { 'Idempotency-Key': 'ops-1' } };
        const pending = await api.chat.completions.create(request, key).catch((error: unknown) => error);
        expect(pending).toBeInstanceOf(OpenAI.ConflictError);
        expect(pending).toMatchObject({ code: 'approval_pending' });
        const headers = (pending as InstanceType<typeof OpenAI.ConflictError>).headers;
        expect(headers.get('x-should-retry')).toBe('true');

        // Answered by a human in another viewer (the owner's chat here), the turn goes on.
        const owner = await d.connect();
        const session_id = headers.get('x-gatehouse-session')!;
        const snapshot = await owner.call<{ prompts: Record<string, unknown>[] }>('session.resume', {
          session_id,
        });
        const prompt = snapshot.prompts[0]!;
        expect(prompt['command']).toBe('setsid -w echo approved');
        await owner.call('approval.respond', {
          session_id,
          prompt_id: prompt['prompt_id'],
          execution_generation: prompt['execution_generation'],
          choice: 'once',
        });
        const answer = await api.chat.completions.create(request, key);
        expect(answer.choices[0]!.message.content).toBe(
          `${DEMO}: the tool \`terminal\` returned:\nexit code 0\noutput:\napproved\n`,
        );
        expect(answer.id).toBe(`chatcmpl-${headers.get('x-gatehouse-admission')}`);
        const users = (await transcript(owner, session_id)).filter((m) => m.role === 'user');
        expect(users).toHaveLength(1);
      },
    );
  });

  it(
    'is exactly-once across a SIGKILL after the admission commits: one turn, the same answer',
    CASE,
    async () => {
      const home = tempHome();
      const d = await start(store, { home, env: { GATEHOUSE_TEST_FAULTS: 'admission.committed' } });
      const request = {
        model: 'gatehouse',
        user: 'ci',
        messages: [{ role: 'user' as const, content: 'deploy notes' }],
      };
      const key = { headers: { 'Idempotency-Key': 'build-4711' } };
      // The daemon kills itself after the commit, before the answer: the response is lost.
      await expect(openai(d).chat.completions.create(request, key)).rejects.toBeInstanceOf(
        OpenAI.APIConnectionError,
      );
      running.splice(running.indexOf(d), 1);
      await d.kill();

      const again = await start(store, { home });
      const api = openai(again);
      const { data: answer, response } = await api.chat.completions.create(request, key).withResponse();
      expect(answer.choices[0]!.message.content).toBe(`${DEMO}: you said: deploy notes`);
      const repeat = await api.chat.completions.create({ ...request, stream: true }, key);
      let streamed = '';
      for await (const chunk of repeat) {
        expect(chunk.id).toBe(answer.id);
        streamed += chunk.choices[0]?.delta.content ?? '';
      }
      expect(streamed).toBe(answer.choices[0]!.message.content);

      const owner = await again.connect();
      const users = (await transcript(owner, response.headers.get('x-gatehouse-session')!)).filter(
        (m) => m.role === 'user',
      );
      expect(users.map((m) => m.content)).toEqual(['deploy notes']);

      // The same key with another request is refused, and nothing is admitted.
      const conflict = await api.chat.completions
        .create({ ...request, messages: [{ role: 'user', content: 'something else' }] }, key)
        .catch((error: unknown) => error);
      expect(conflict).toBeInstanceOf(OpenAI.ConflictError);
      expect(conflict).toMatchObject({ code: 'idempotency_key_reused' });
      // So is the same key for another session (another `user`): the key is bound to its request.
      await expect(
        api.chat.completions.create({ ...request, user: 'someone-else' }, key),
      ).rejects.toMatchObject({
        status: 409,
        code: 'idempotency_key_reused',
      });
      expect((conflict as InstanceType<typeof OpenAI.ConflictError>).headers.get('x-should-retry')).toBe(
        'false',
      );
    },
  );
});
