/**
 * `gatehouse acp`: the Agent Client Protocol on stdin/stdout for an editor that starts it as its
 * agent (docs/integrations.md). stdout carries ACP messages only; notes go to stderr. It ends when
 * the editor closes stdin; the sessions it opened live on in the gateway.
 */
import { Readable, Writable } from 'node:stream';
import { ndJsonStream } from '@agentclientprotocol/sdk';
import { AcpBridge } from '../../acp/bridge.js';
import { loadCliConfig } from '../load-config.js';
import { cliHome } from '../shared.js';

export async function acp(): Promise<void> {
  const layout = cliHome();
  loadCliConfig(layout); // a bad config is reported here, before the editor is answered
  const bridge = new AcpBridge(layout);
  const stream = ndJsonStream(
    Writable.toWeb(process.stdout) as WritableStream<Uint8Array>,
    Readable.toWeb(process.stdin) as ReadableStream<Uint8Array>,
  );
  const connection = bridge.app().connect(stream);
  await connection.closed;
  await bridge.close();
}
