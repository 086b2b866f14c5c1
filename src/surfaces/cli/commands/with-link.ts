/** One RPC conversation with the running gateway for a CLI command, its refusals as CLI errors. */
import { DaemonError } from '../../../daemon/errors.js';
import { RpcCallError } from '../../client/rpc-client.js';
import { openLink } from '../chat/link.js';
import { loadCliConfig } from '../load-config.js';
import { cliHome } from '../shared.js';

export type LinkClient = Awaited<ReturnType<typeof openLink>>['client'];

/**
 * Runs `call` on a link to the gateway (started when needed) and closes it. A refusal becomes a
 * DaemonError: `explain` may word one reason for the command; invalid_params and not_found are the
 * caller's input (exit 2), anything else the gateway's (not_available).
 */
export async function withLink<T>(
  call: (client: LinkClient) => Promise<T>,
  explain: (error: RpcCallError) => DaemonError | null = () => null,
): Promise<T> {
  const layout = cliHome();
  loadCliConfig(layout);
  const { client } = await openLink(layout);
  try {
    return await call(client);
  } catch (error) {
    if (!(error instanceof RpcCallError)) throw error;
    const explained = explain(error);
    if (explained) throw explained;
    if (error.reason === 'invalid_params' || error.reason === 'not_found')
      throw new DaemonError('invalid_input', error.message);
    throw new DaemonError('not_available', error.message);
  } finally {
    await client.close();
  }
}
