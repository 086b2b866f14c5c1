/**
 * Intake: how an inbound platform event gets into the gateway, up to its lane.
 *
 * receive (the InboundSink) → authorize → parked while the gateway restores (parking.ts) → the
 * admission chain → redelivery check (inbound ledger) → session key (KEY-1) → a command (the
 * gateway carries it out at once), the answer to a pending clarify question, or an arrival on the
 * key's lane. Inbound events are admitted one at a time, in arrival order (the redelivery check is
 * a store read, and it must not let a later message of a chat overtake an earlier one).
 *
 * Taking: the promise the sink returns resolves once the gateway has made the event durable (a
 * backlog row, its turn's in-flight marker, an inbound-ledger outcome, a parked row) or dropped it
 * on purpose; only then may the platform consider it delivered. A turn that starts at once takes
 * its event when it sets its marker, not when it ends, so a slow chat holds its platform's intake
 * only for a few store writes.
 */
import { inboundRefOf, type InboundRef, type MessageEvent, type PlatformAdapter } from './adapter.js';
import { parseCommand, type ChatCommand } from './commands.js';
import type * as queue from './queue.js';
import type { TypedEmitter } from '../events/typed-emitter.js';
import { buildSessionKey, type SessionKeyOptions } from '../session/key.js';
import type { PromptBroker } from '../../runtime/approvals/broker.js';
import type { DeliveryLedger } from '../../domain/ports/delivery-ledger.js';
import type { InvalidCommand, Lane } from './chat-commands.js';
import type { MessagingEvents } from './events.js';
import type { Lanes } from './lanes.js';
import { Parking } from './parking.js';
import type { Taking } from './taking.js';

/**
 * What an inbound event meets, by the gateway's lifecycle state: nothing once it stops receiving
 * (draining, stopped), parking while it restores, admission while it runs.
 */
export type IntakeMode = 'closed' | 'parking' | 'admitting';

export interface IntakeDeps {
  readonly ledger: DeliveryLedger;
  readonly prompts: PromptBroker;
  readonly events: TypedEmitter<MessagingEvents>;
  readonly lanes: Lanes;
  readonly taking: Taking;
  /** An event's platform message, as its adapter spells the chat (parked events are matched by it). */
  readonly refOf: (event: MessageEvent) => InboundRef | null;
  adapterFor(platform: string): PlatformAdapter | undefined;
  keyOptionsFor(platform: string): SessionKeyOptions;
  mode(): IntakeMode;
  /** Puts the event on the lane's queue (starting it if the lane is idle) and saves what waits. */
  arrive(lane: Lane, item: queue.QueueItem<MessageEvent>): Promise<void>;
  /** Carries out a command on its lane, even while a turn runs there. */
  command(
    lane: Lane,
    adapter: PlatformAdapter,
    event: MessageEvent,
    command: ChatCommand | InvalidCommand,
  ): Promise<void>;
  /** Whether the platform treats messages sent during a turn as steers (`during_turn: steer`). */
  steers(platform: string): boolean;
  /** Why the sender's messages may not start turns (a member's limits, issue 30), or null. */
  refusal(event: MessageEvent): string | null;
  /** Hands work to the gateway, which waits for it when it stops. */
  track(work: Promise<void>): void;
}

export class Intake {
  private readonly parking: Parking;
  /** The tail of the serial admission chain (see admit). */
  private tail: Promise<void> = Promise.resolve();

  constructor(private readonly deps: IntakeDeps) {
    this.parking = new Parking(deps.ledger, deps.refOf);
  }

  /** Reads what a previous process left parked: before the adapters start. */
  loadParked(): Promise<void> {
    return this.parking.load();
  }

  /**
   * Inbound from an adapter (the InboundSink). Resolves once the event is taken: durable, or
   * dropped on purpose (refused, a redelivery, the gateway is stopping). Never rejects: an adapter
   * must not be broken by one bad message.
   */
  receive(adapter: PlatformAdapter, event: MessageEvent): Promise<void> {
    // Stopping: not taken. Whether the platform hands it out again is the adapter's stop() (a
    // Telegram update handled after stop() began is not confirmed).
    if (this.deps.mode() === 'closed') return Promise.resolve();
    if (!adapter.authorize(event.source)) {
      this.deps.events.emit('inbound:refused', { platform: adapter.platform, user_id: event.source.user_id });
      return Promise.resolve();
    }
    if (this.deps.mode() === 'parking') {
      this.deps.events.emit('inbound:deferred', { platform: adapter.platform });
      const ref = inboundRefOf(event, (id) => adapter.normalizeChatId(id));
      return this.parking.park(event).then((parked) => {
        if (!parked && ref !== null) this.deps.events.emit('inbound:duplicate', { ...ref });
      });
    }
    return this.admit(adapter, event);
  }

  /**
   * Admits the events parked during recovery (and any a crashed process left parked), in order;
   * each one's row goes once its admission took it. One whose platform has no adapter now stays
   * parked until a start that has it.
   */
  admitParked(): void {
    const admitted = this.parking.list().flatMap((item) => {
      const adapter = this.deps.adapterFor(item.event.source.platform);
      return adapter === undefined ? [] : [{ item, taken: this.admit(adapter, item.event) }];
    });
    if (admitted.length === 0) return;
    this.deps.track(
      Promise.all(admitted.map((a) => a.taken)).then(() => this.parking.release(admitted.map((a) => a.item))),
    );
  }

  /**
   * Queues the event on the admission chain: each is accepted after the one before it. Resolves
   * once the event is taken (accept, or later for a turn launched for it or a /queue command).
   */
  private admit(adapter: PlatformAdapter, event: MessageEvent): Promise<void> {
    const taking = this.deps.taking;
    const taken = taking.expect(event);
    const step = this.tail.then(() => this.accept(adapter, event));
    this.tail = step.then(
      () => undefined,
      () => undefined,
    );
    this.deps.track(
      step.then(
        (done) => {
          if (done) taking.taken(event);
        },
        (error: unknown) => {
          taking.taken(event);
          throw error;
        },
      ),
    );
    return taken;
  }

  /**
   * Admits one event. Returns whether it is taken when this resolves: false when a turn launched
   * for it, or the /queue command it is, takes it later (Taking).
   */
  private async accept(adapter: PlatformAdapter, event: MessageEvent): Promise<boolean> {
    const ref = inboundRefOf(event, (id) => adapter.normalizeChatId(id));
    if (ref !== null && (await this.wasTaken(ref))) {
      this.deps.events.emit('inbound:duplicate', { ...ref });
      return true;
    }
    const key = buildSessionKey(event.source, this.deps.keyOptionsFor(event.source.platform));
    this.deps.events.emit('inbound:accepted', {
      session_key: key,
      text: event.text,
      internal: event.internal,
    });
    const lane = this.deps.lanes.open(key);
    if (!event.internal) {
      const command = parseCommand(event.text);
      if (command !== null) {
        // Held from here, across the awaits before the command runs, so the lane is not freed under it.
        lane.commands++;
        // A command acts now, so it is taken now, before it acts: a crash in between loses the
        // command rather than repeating it (a second /undo would undo one exchange too many).
        // A /queue item is taken by its backlog row or by the turn it becomes.
        if (ref !== null && command.name !== 'queue') await this.take(ref, key, 'command');
        this.deps.track(this.deps.command(lane, adapter, event, command));
        return command.name !== 'queue';
      }
      // A pending clarify question takes the next plain message as its answer.
      const clarify = lane.running?.clarify;
      const clarifyingSession = lane.running?.sessionId;
      if (clarify != null && clarifyingSession != null) {
        this.deps.prompts.respondClarify({
          session_id: clarifyingSession,
          ...clarify,
          answer: event.text,
        });
        if (ref !== null) await this.take(ref, key, 'answer');
        return true;
      }
    }
    const refusal = event.internal ? null : this.deps.refusal(event);
    if (refusal !== null) {
      // Answered at once and never run: taken like a command, before the answer.
      if (ref !== null) await this.take(ref, key, 'command');
      this.deps.track(
        adapter
          .send(event.source.chat_id, refusal, { thread_id: event.source.thread_id, reply_to: null })
          .then(() => undefined),
      );
      return true;
    }
    if (!event.internal && lane.running !== null && this.deps.steers(event.source.platform)) {
      // Issue 28: a steer of the running turn. It waits as its own queued item (never collapsed),
      // durably on the backlog, taken with its row; the turn applies it at its next boundary.
      this.deps.events.emit('steer:queued', { session_key: key, text: event.text });
      await this.deps.arrive(lane, { kind: 'queued', payload: { ...event, steer: true } });
      return true;
    }
    // A turn takes its message when it starts (executeTurn), with its in-flight marker; a message

    // that has to wait is taken with its backlog row, before the next event is admitted.
    await this.deps.arrive(lane, { kind: event.internal ? 'internal' : 'message', payload: event });
    return !this.deps.taking.awaitingTurn(event);
  }

  /**
   * The redelivery check fails open: when the store cannot answer, a possible duplicate turn is
   * better than a lost message (and the turn itself will report the store's failure).
   */
  private wasTaken(ref: InboundRef): Promise<boolean> {
    return this.deps.ledger.isInboundTaken(ref).catch(() => false);
  }

  private take(ref: InboundRef, key: string, outcome: 'command' | 'answer'): Promise<void> {
    return this.deps.ledger.takeInbound(ref, key, { outcome }).catch(() => undefined);
  }
}
