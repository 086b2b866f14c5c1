import { describe, expect, it } from 'vitest';
import type { LocalSessions } from '../../../src/domain/local/service.js';
import type { ReplyOptions } from '../../../src/domain/local/whole-transcript.js';
import { Dispatcher } from '../../../src/protocol/dispatcher.js';
import type { RpcContext, ViewerConnection } from '../../../src/surfaces/rpc/connection.js';
import { registerSessionMethods } from '../../../src/surfaces/rpc/session-methods.js';
import { makePrincipal, OPERATOR_CAPABILITIES } from '../../../src/domain/auth/principal.js';
import { recordingLogger } from './harness.js';

/**
 * The RPC surface only writes a whole transcript as JSON, so it asks the service for it serialized
 * (domain/local/whole-transcript.ts): a long one is then read and serialized on the store's thread,
 * off the event loop (issue 32 aim 3). The reply's bytes would be the same either way, so only the
 * request the handler makes shows it.
 */
describe('session.resume and session.history ask for their transcript serialized', () => {
  function setup() {
    const asked: { method: string; options: ReplyOptions | undefined }[] = [];
    const sessions = {
      resume: (_p: unknown, _c: unknown, _id: string, _limit: unknown, options?: ReplyOptions) => {
        asked.push({ method: 'resume', options });
        return Promise.resolve({ messages: [] });
      },
      reads: {
        history: (_p: unknown, _id: string, _view: unknown, options?: ReplyOptions) => {
          asked.push({ method: 'history', options });
          return Promise.resolve({ messages: [] });
        },
      },
    } as unknown as LocalSessions;
    const dispatcher = new Dispatcher<RpcContext>(recordingLogger());
    registerSessionMethods(dispatcher, sessions);
    const context: RpcContext = {
      principal: makePrincipal('native:owner', 'native', 'default', OPERATOR_CAPABILITIES),
      connection: { id: 'c1' } as unknown as ViewerConnection,
    };
    const call = (method: string, params: unknown) =>
      dispatcher.handleFrame(JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }), context);
    return { asked, call };
  }

  it('session.resume', async () => {
    const { asked, call } = setup();
    expect(await call('session.resume', { session_id: 'ses_1' })).toMatchObject({ result: { messages: [] } });
    expect(asked).toEqual([{ method: 'resume', options: { serialized: true } }]);
  });

  it('session.history, both views', async () => {
    const { asked, call } = setup();
    await call('session.history', { session_id: 'ses_1' });
    await call('session.history', { session_id: 'ses_1', view: 'model' });
    expect(asked).toEqual([
      { method: 'history', options: { serialized: true } },
      { method: 'history', options: { serialized: true } },
    ]);
  });
});
