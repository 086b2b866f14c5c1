/**
 * The Slack adapter's inbound against the loopback stand-in, in process: an envelope is
 * acknowledged only once the sink took its event, and one Slack delivers again while the first
 * delivery is still being handed in is handed in once and acknowledged after it.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { MessageEvent } from '../../../src/domain/messaging/adapter.js';
import { SlackAdapter } from '../../../src/surfaces/platforms/slack/adapter.js';
import { startSlackStandIn, type SlackStandIn } from '../../fixtures/slack-standin.js';

const ANN = { id: 'U0ANN', name: 'ann', display_name: 'Ann' };

let standIn: SlackStandIn | null = null;
let adapter: SlackAdapter | null = null;

afterEach(async () => {
  await adapter?.stop();
  await standIn?.close();
  adapter = null;
  standIn = null;
});

describe('Slack inbound', () => {
  it('acknowledges after the sink took the event; a redelivery meanwhile is handed in once', async () => {
    standIn = await startSlackStandIn({ ackTimeoutMs: 100 });
    standIn.user(ANN);
    standIn.conversation({ id: 'D0ANN', kind: 'im' });
    adapter = new SlackAdapter({
      botToken: standIn.botToken,
      appToken: standIn.appToken,
      apiRoot: standIn.apiRoot,
    });
    const handed: MessageEvent[] = [];
    let take!: () => void;
    const taking = new Promise<void>((resolve) => (take = resolve));
    let arrived!: () => void;
    const arrival = new Promise<void>((resolve) => (arrived = resolve));
    await adapter.start((event) => {
      handed.push(event);
      arrived();
      return taking;
    });
    standIn.holdLookups(ANN.id);
    const ts = standIn.say('D0ANN', ANN, 'hello');
    await standIn.waitForHeldLookup(ANN.id);
    const [envelope] = standIn.envelopesOf(ts);
    // Not acknowledged in time: Slack delivers it again (three retries), on the same socket.
    await standIn.waitForDeliveries(envelope!, 4);
    standIn.releaseLookups();
    await arrival;
    expect(standIn.acks).toEqual([]);
    take();
    await standIn.waitForAck(envelope!, 4);
    await adapter.stop();
    expect(handed.map((e) => [e.text, e.source.user_name, e.source.message_id])).toEqual([
      ['hello', 'Ann', ts],
    ]);
  });
});
