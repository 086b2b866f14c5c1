/**
 * An editor for the ACP tests: the SDK's client side driving the real `gatehouse acp` as a child
 * process over its stdin/stdout, as Zed would. It records every session update, answers permission
 * requests with what the test chose, and lets a test wait on an update (armed before the call).
 */
import type { ChildProcess } from 'node:child_process';
import { Readable, Writable } from 'node:stream';
import {
  client,
  methods,
  ndJsonStream,
  type ClientConnection,
  type RequestPermissionRequest,
  type RequestPermissionResponse,
  type SessionNotification,
} from '@agentclientprotocol/sdk';
import { exited, spawnCli } from './cli.js';

type Outcome = RequestPermissionResponse['outcome'];
/** The editor's answer; `signal` aborts when the agent withdraws the request (`$/cancel_request`). */
export type PermissionAnswer = (
  request: RequestPermissionRequest,
  signal: AbortSignal,
) => Outcome | Promise<Outcome>;

export class Editor {
  readonly updates: SessionNotification[] = [];
  readonly permissions: RequestPermissionRequest[] = [];
  stderr = '';
  /** How the editor answers the next permission requests. */
  answer: PermissionAnswer = () => ({ outcome: 'cancelled' });
  private waiters: { match: (n: SessionNotification) => boolean; resolve: () => void }[] = [];
  readonly connection: ClientConnection;

  private constructor(readonly child: ChildProcess) {
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (this.stderr += chunk));
    const app = client({ name: 'test-editor' })
      .onNotification(methods.client.session.update, ({ params }) => {
        this.updates.push(params);
        this.waiters = this.waiters.filter((w) => {
          if (!w.match(params)) return true;
          w.resolve();
          return false;
        });
      })
      .onRequest(methods.client.session.requestPermission, async ({ params, signal }) => {
        this.permissions.push(params);
        return { outcome: await this.answer(params, signal) };
      });
    this.connection = app.connect(
      ndJsonStream(
        Writable.toWeb(child.stdin!) as WritableStream<Uint8Array>,
        Readable.toWeb(child.stdout!) as ReadableStream<Uint8Array>,
      ),
    );
  }

  /** Starts `gatehouse acp` in `home` and initializes it as an editor named `title`. */
  static start(home: string, env: NodeJS.ProcessEnv = {}, title = 'Test Editor'): Promise<Editor> {
    return Editor.over(spawnCli(home, ['acp'], env), title);
  }

  /** Initializes an agent process the test started itself (as an editor's config says). */
  static async over(child: ChildProcess, title = 'Test Editor'): Promise<Editor> {
    const editor = new Editor(child);
    const init = await editor.agent.request(methods.agent.initialize, {
      protocolVersion: 1,
      clientCapabilities: {},
      clientInfo: { name: 'test-editor', title, version: '1.0.0' },
    });
    if (init.agentCapabilities?.loadSession !== true) throw new Error('gatehouse acp does not load sessions');
    return editor;
  }

  get agent(): ClientConnection['agent'] {
    return this.connection.agent;
  }

  /** Resolves at the next update matching `match` (arm it before the call that causes it). */
  nextUpdate(match: (n: SessionNotification) => boolean): Promise<void> {
    return new Promise((resolve) => this.waiters.push({ match, resolve }));
  }

  /** The text of the updates of `kind` for `sessionId`, joined. */
  text(
    sessionId: string,
    kind: 'agent_message_chunk' | 'user_message_chunk' | 'agent_thought_chunk',
  ): string {
    return this.updates
      .filter((n) => n.sessionId === sessionId && n.update.sessionUpdate === kind)
      .map((n) => {
        const u = n.update as { content: { type: string; text?: string } };
        return u.content.type === 'text' ? (u.content.text ?? '') : '';
      })
      .join('');
  }

  /** The editor goes away: stdin closes, and the process ends. */
  async close(): Promise<number | null> {
    this.child.stdin!.end();
    return exited(this.child);
  }
}
