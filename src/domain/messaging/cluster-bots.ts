/**
 * The messaging gateway in a cluster (SCL-1, docs/cluster.md "Chat platforms in a cluster"): it
 * receives and runs turns only on the instance holding its bots' leases (domain/cluster/bots.ts).
 * Every other instance builds it and stands by; the one that takes the leases starts it exactly as
 * a cold start would (adapters connected, recovery, backlog). The ledger's and cursors' writes are
 * fenced by the leases' tokens from the start, so an instance that lost them writes nothing.
 */
import { BotLeases, ConfirmationLatch, botLeaseName, type BotTake } from '../cluster/bots.js';
import type { ClusterMember, MemberLog } from '../cluster/member.js';
import type { PlatformAdapter } from './adapter.js';
import type { ClusterStore } from '../ports/cluster-store.js';
import type { MessagingStores } from '../ports/messaging-stores.js';
import type { MessagingGateway } from './gateway.js';

/** Sent when an instance released its bots' leases (payload: its epoch): the others take them now. */
export const BOTS_RELEASED_CHANNEL = 'gatehouse_bots_released';

export interface ClusteredBotsOptions {
  cluster: { member: ClusterMember; store: ClusterStore };
  adapters: readonly PlatformAdapter[];
  stores: MessagingStores;
  gateway: MessagingGateway;
  log: MemberLog;
  /** The gateway started or halted here (gateway.json is rewritten). */
  changed(): void;
  /** The bots were lost: the daemon must exit (a supervisor restarts it with a new epoch). */
  fatal(reason: string): void;
}

export function clusteredBots(options: ClusteredBotsOptions): BotLeases {
  const { member, store } = options.cluster;
  const { gateway, log } = options;
  const timing = member.leaseTiming;
  const names = options.adapters.map((a) => botLeaseName(a.platform, a.botId ?? a.platform));
  const bots: BotLeases = new BotLeases(
    names,
    {
      holder: store.holder,
      take: async (name): Promise<BotTake> => {
        const result = await store.take('bot', name, timing.lease_s);
        return result.kind === 'held'
          ? { name, kind: 'held' }
          : { name, kind: result.kind, token: result.token };
      },
      release: async (name) => void (await store.release('bot', name)),
      announce: () => store.notify(BOTS_RELEASED_CHANNEL, String(store.holder.epoch)),
      onAnnounced: (listener) => store.subscribe(BOTS_RELEASED_CHANNEL, listener, listener),
      healthy: () => member.renewing(),
    },
    {
      acquired: async () => {
        log.info({ bots: bots.names }, 'bot leases taken: this instance receives for its chat bots now');
        receiving = true;
        await gateway.start();
        options.changed();
      },
      lost: (why) => {
        log.error(
          { bots: bots.names },
          `cluster: ${why}; the chat platforms stop here at once (receiving, turns, sends) and this instance exits, so that another takes its bots over`,
        );
        void gateway.halt().finally(() => {
          options.changed();
          // A failed member has told the daemon already (a second shutdown would cut its drain).
          if (member.state !== 'failed') options.fatal(`bot lease lost: ${why}`);
        });
      },
      warn: (fields, message) => log.warn(fields, message),
    },
    timing,
  );
  if (options.stores.fenceByBots === undefined) {
    throw new Error('chat platforms in a cluster need stores that fence by bot leases (PostgreSQL)');
  }
  let receiving = false;
  const latch = new ConfirmationLatch(
    bots.names,
    (name) => bots.token(name),
    () => receiving,
  );
  options.stores.fenceByBots({ holder: store.holder, names: bots.names, token: (name) => latch.token(name) });
  gateway.guardConfirmations(() => latch.confirmable());
  member.onFailed((why) => bots.memberFailed(why));
  return bots;
}
