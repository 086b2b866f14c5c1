/**
 * One viewer connection: a WebSocket whose principal was stamped at the upgrade gate (AUTH-1).
 *
 * States: open → closing → closed. Frames are dispatched in arrival order (each handler starts
 * before the next frame is looked at; replies may finish out of order and are matched by id).
 * Outgoing frames go through a bounded buffer: a viewer that stops reading is told once with a
 * final `connection.dropped` notification and closed, so it can never stall the session or other
 * viewers (LOC-11). The decision is the pure `decideSend`; this class only performs it.
 *
 * Frames sent in the same turn of the event loop leave in one write (write-round.ts): a turn's
 * events come in bursts, and on loopback every write costs the sender a trip through the peer's whole
 * TCP receive path. A session event's ready-made frame waits in `pending` until the round ends, then
 * the connection's run of them is written as one buffer (the same buffer for every viewer with the
 * same run); a frame through `ws` corks the socket until then, after writing the events before it,
 * so the peer reads everything in the order it was sent.
 *
 * A reply long enough to hold the event loop while it is serialized (the whole history of a long
 * session) is streamed: written as one message in fragments, serialized slice by slice as the peer
 * takes them (streamed-reply.ts). No other message may begin inside a fragmented one, so whatever
 * the connection sends meanwhile waits in the outbox, in order, its notifications counted against
 * the same backlog bound, and leaves when the streamed reply is complete.
 */
import { randomUUID } from 'node:crypto';
import type { RawData, WebSocket } from 'ws';
import type { Principal } from '../../domain/auth/principal.js';
import type { AuditDraft } from '../../domain/ports/access-store.js';
import type { Dispatcher } from '../../protocol/dispatcher.js';
import { invalidRequest } from '../../protocol/errors.js';
import type { SharedEvent } from '../../domain/local/hub.js';
import { failure, notification, type JsonRpcResponse } from '../../protocol/jsonrpc.js';
import { jsonPieces, releaseJsonTexts, worthSlicing } from './json-slices.js';
import { writeStreamed, type FragmentSink } from './streamed-reply.js';
import { textFrame } from './text-frame.js';
import { writeRound, type RoundMember } from './write-round.js';
import type { Logger } from '../../protocol/logger.js';
import type { CloseCause, RpcSurfaceEvents, TypedEmitter } from './events.js';

export type ConnectionState = 'open' | 'closing' | 'closed';

/** What every method handler receives about its caller. */
export interface RpcContext {
  readonly principal: Principal;
  readonly connection: ViewerConnection;
  /** An audited call's row, committed with its action (surfaces/rpc/audit.ts; issue 30). */
  readonly audit?: AuditDraft;
}

export interface ConnectionLimits {
  /** Bytes queued but not yet taken by the peer before it counts as too slow. */
  maxBufferedBytes: number;
  /** Requests running at once before the connection stops reading (backpressure, not errors). */
  maxInFlight: number;
  /** How long a dropped viewer gets to complete the close handshake before the socket is cut. */
  closeGraceMs: number;
}

export const DEFAULT_CONNECTION_LIMITS: ConnectionLimits = {
  maxBufferedBytes: 4 * 1024 * 1024,
  maxInFlight: 64,
  closeGraceMs: 1_000,
};

/** The notification a dropped viewer receives last; it should resume and ask for events since. */
export const DROPPED_NOTIFICATION = 'connection.dropped';
/** WebSocket close code for a viewer dropped for falling behind (private range 4000–4999). */
export const CLOSE_SLOW_CONSUMER = 4008;

export type SendDecision = 'send' | 'drop_slow_consumer' | 'discard';

/**
 * Pure: what to do with one outgoing frame given the connection state and its backlog, the bytes
 * queued and not yet taken apart from the replies on their way. A notification may not push that
 * backlog past the limit. A reply is what the client asked for and waits on, however large (the
 * history of a long session): it is sent whenever the backlog before it is within the limit, and
 * its own bytes never count against the notifications after it.
 */
export function decideSend(
  state: ConnectionState,
  backlogBytes: number,
  frameBytes: number,
  limit: number,
  kind: 'reply' | 'notification' = 'notification',
): SendDecision {
  if (state !== 'open') return 'discard';
  const after = kind === 'reply' ? backlogBytes : backlogBytes + frameBytes;
  return after > limit ? 'drop_slow_consumer' : 'send';
}

/**
 * The raw stream under the WebSocket: corked to gather a round's frames into one write, and written
 * to directly with session events' ready-made frames (`ws` sends each frame whole and, with no
 * compression, at once, so a frame written here never splits one of its own).
 */
export interface Transport {
  cork(): void;
  uncork(): void;
  write(frame: Buffer, done?: (error?: Error | null) => void): boolean;
  readonly writableLength: number;
  once(event: 'drain' | 'close', listener: () => void): unknown;
  off(event: 'drain' | 'close', listener: () => void): unknown;
}

/** A frame sent while a streamed reply is on the wire, written once that reply is complete. */
interface HeldFrame {
  /** Bytes it adds to the backlog (0 for a reply: replies never count against it). */
  backlog: number;
  write(): void | Promise<void>;
}

const encodeNotification = (method: string, params: unknown): string =>
  JSON.stringify(notification(method, params));

/** A session event's JSON and its whole WebSocket frame, made once for every viewer. */
interface EventFrame {
  json: string;
  frame: Buffer;
}

const joinFrames = (frames: readonly Buffer[]): Buffer =>
  frames.length === 1 ? frames[0]! : Buffer.concat(frames);

const encodeEventFrame = (method: string, params: unknown): EventFrame => {
  const json = encodeNotification(method, params);
  return { json, frame: textFrame(Buffer.from(json, 'utf8')) };
};

export class ViewerConnection implements RoundMember {
  readonly id = randomUUID();
  private current: ConnectionState = 'open';
  /** Joined the write round in progress: flushRound will run once this turn of the loop ends. */
  private inRound = false;
  private corked = false;
  /** Event frames accepted this round and not yet written, and their bytes (part of the backlog). */
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private closeCause: CloseCause = 'client';
  private inFlight = 0;
  private graceTimer: NodeJS.Timeout | undefined;
  /** Bytes of replies handed to the socket and not yet written out: no part of the backlog. */
  private replyBytes = 0;
  /** Frames waiting for the streamed reply on the wire to end; null while none is. */
  private outbox: HeldFrame[] | null = null;
  private outboxBytes = 0;

  constructor(
    private readonly socket: WebSocket,
    readonly principal: Principal,
    private readonly dispatcher: Dispatcher<RpcContext>,
    private readonly events: TypedEmitter<RpcSurfaceEvents>,
    private readonly logger: Logger,
    private readonly limits: ConnectionLimits = DEFAULT_CONNECTION_LIMITS,
    private readonly transport: Transport | null = null,
  ) {
    socket.on('message', (data, isBinary) => this.receive(data, isBinary));
    socket.on('close', () => this.closed());
    socket.on('error', (error) => {
      this.logger.warn({ connection: this.id, err: error.message }, 'viewer socket error');
      // An error while we are already closing does not change why we closed.
      if (this.current === 'open') this.closeCause = 'error';
    });
  }

  get state(): ConnectionState {
    return this.current;
  }

  /** Sends a notification; false when the connection is not open or was just dropped for it. */
  notify(method: string, params: unknown): boolean {
    return this.send(encodeNotification(method, params), 'notification');
  }

  /** Sends a session event every viewer gets; the first connection's frame serves them all. */
  deliver(note: SharedEvent): boolean {
    const encoded = note.encoded(encodeEventFrame);
    if (!this.transport) return this.send(encoded.json, 'notification');
    return this.gather(encoded.frame);
  }

  /** Starts an orderly close. Idempotent. */
  close(cause: CloseCause = 'server_shutdown', code = 1001, reason = 'server closing'): void {
    if (this.current !== 'open') return;
    // Events accepted before the close go out before the close frame.
    this.writePending();
    this.toClosing(cause);
    this.socket.close(code, reason);
  }

  /** The end of the write round: the gathered events in one write, then whatever `ws` corked. */
  flushRound(joined: (frames: readonly Buffer[]) => Buffer): void {
    this.inRound = false;
    this.writePending(joined);
    this.uncorkNow();
  }

  private receive(data: RawData, isBinary: boolean): void {
    if (this.current !== 'open') return;
    if (isBinary) {
      void this.reply(failure(null, invalidRequest('frames must be text, one JSON object each')));
      return;
    }
    const text = Array.isArray(data)
      ? Buffer.concat(data).toString('utf8')
      : data instanceof ArrayBuffer
        ? Buffer.from(data).toString('utf8')
        : data.toString('utf8');
    this.inFlight += 1;
    if (this.inFlight >= this.limits.maxInFlight) this.socket.pause();
    // handleFrame runs synchronously up to the handler's first await, so handlers start in order.
    void this.dispatcher
      .handleFrame(text, { principal: this.principal, connection: this })
      .then((response) => (response ? this.reply(response) : undefined))
      .finally(() => {
        this.inFlight -= 1;
        if (this.current === 'open' && this.inFlight < this.limits.maxInFlight) this.socket.resume();
      });
  }

  private reply(response: JsonRpcResponse | JsonRpcResponse[]): void | Promise<void> {
    if (!worthSlicing(response)) return void this.send(JSON.stringify(response), 'reply');
    // A whole transcript serialized off the loop is handed back once written, or dropped unwritten.
    const release = () => releaseJsonTexts(response);
    if (this.transport) return this.streamReply(response, this.transport).finally(release);
    try {
      this.send(JSON.stringify(response), 'reply');
    } finally {
      release();
    }
  }

  /** Sends a long reply as it is serialized; resolves once it is written (or the connection closed). */
  private streamReply(response: unknown, transport: Transport): Promise<void> {
    if (this.current !== 'open') return Promise.resolve();
    // A streamed reply never waits on the backlog bound: as any reply, it is what the client asked for.
    const stream = () => this.writeStream(response, transport);
    if (this.outbox) {
      return new Promise<void>((resolve) => {
        this.outbox!.push({ backlog: 0, write: () => stream().then(resolve) });
      });
    }
    // The events gathered before the reply leave before its first fragment.
    this.writePending();
    this.outbox = [];
    return stream().then(() => this.drainOutbox());
  }

  private async writeStream(response: unknown, transport: Transport): Promise<void> {
    const sink: FragmentSink = {
      open: () => this.current === 'open' && this.socket.readyState === this.socket.OPEN,
      write: (frame) => {
        this.replyBytes += frame.length;
        transport.write(frame, () => (this.replyBytes -= frame.length));
        // Room while the stream holds less than the backlog bound: a wait for 'drain' after every
        // fragment (the stream's own mark is 16 KiB) made the reply wait a loop turn per fragment.
        return transport.writableLength < this.limits.maxBufferedBytes;
      },
      drained: () => untilDrained(transport),
    };
    try {
      await writeStreamed(jsonPieces(response), sink);
    } catch (error) {
      // Half a message is on the wire: nothing else can be sent on this connection but a close.
      this.logger.error(
        { connection: this.id, err: error instanceof Error ? error.message : String(error) },
        'a streamed reply could not be serialized',
      );
      this.close('error', 1011, 'internal error');
    }
  }

  /** Writes what waited for a streamed reply, in order; a streamed reply among it waits its turn. */
  private async drainOutbox(): Promise<void> {
    const outbox = this.outbox!;
    while (outbox.length > 0 && this.current === 'open') {
      const held = outbox.shift()!;
      this.outboxBytes -= held.backlog;
      this.corkForRound();
      await held.write();
    }
    this.outbox = null;
    this.outboxBytes = 0;
  }

  /** Bytes queued and not yet taken, apart from the replies on their way (decideSend's backlog). */
  private backlog(): number {
    return Math.max(0, this.socket.bufferedAmount - this.replyBytes) + this.pendingBytes + this.outboxBytes;
  }

  /** Whether a frame of `bytes` may go out now (decideSend); a viewer past the bound is dropped here. */
  private admits(bytes: number, kind: 'reply' | 'notification'): boolean {
    const decision = decideSend(this.current, this.backlog(), bytes, this.limits.maxBufferedBytes, kind);
    if (decision === 'drop_slow_consumer') this.dropSlowConsumer();
    return decision === 'send';
  }

  /** Sends JSON text through `ws`, after the events gathered before it. */
  private send(frame: string, kind: 'reply' | 'notification'): boolean {
    const bytes = Buffer.byteLength(frame);
    if (!this.admits(bytes, kind)) return false;
    if (this.outbox) return this.hold(kind === 'reply' ? 0 : bytes, () => this.sendNow(frame, kind, bytes));
    return this.sendNow(frame, kind, bytes);
  }

  /** Holds a frame until the streamed reply on the wire is complete. */
  private hold(backlog: number, write: () => void): boolean {
    this.outbox!.push({ backlog, write });
    this.outboxBytes += backlog;
    return true;
  }

  private sendNow(frame: string, kind: 'reply' | 'notification', bytes: number): boolean {
    this.corkForRound();
    this.writePending();
    if (kind === 'notification') {
      this.socket.send(frame);
      return true;
    }
    // The callback runs once the frame is written out (or the socket failed): it is no longer queued.
    this.replyBytes += bytes;
    this.socket.send(frame, () => (this.replyBytes -= bytes));
    // A reply leaves now, with what was corked before it, not at the end of the round: the work its
    // call set going (a turn claimed and started, say) must not run ahead of the answer.
    this.uncorkNow();
    return true;
  }

  private uncorkNow(): void {
    if (!this.corked) return;
    this.corked = false;
    this.transport?.uncork();
  }

  /** Takes a session event's ready-made frame for the end of the round, counted in the backlog. */
  private gather(frame: Buffer): boolean {
    if (!this.admits(frame.length, 'notification')) return false;
    // The peer may have begun the closing handshake: no data frame may follow a close frame.
    if (this.socket.readyState !== this.socket.OPEN) return false;
    if (this.outbox) return this.hold(frame.length, () => void this.transport?.write(frame));
    this.pending.push(frame);
    this.pendingBytes += frame.length;
    this.joinRound(false);
    return true;
  }

  /** Writes the gathered event frames now, as one buffer (before a frame through `ws` or a close). */
  private writePending(joined: (frames: readonly Buffer[]) => Buffer = joinFrames): void {
    if (this.pending.length === 0) return;
    const frames = this.pending;
    this.pending = [];
    this.pendingBytes = 0;
    // The peer began the closing handshake since: `ws` answered it, and nothing may follow a close.
    if (this.socket.readyState !== this.socket.OPEN) return;
    this.transport?.write(joined(frames));
  }

  private corkForRound(): void {
    if (this.corked || !this.transport) return;
    this.corked = true;
    this.transport.cork();
    this.joinRound();
  }

  /** Joins the write round; a frame through `ws` (a reply above all) hurries it (write-round.ts). */
  private joinRound(urgent = true): void {
    if (!this.inRound) {
      this.inRound = true;
      writeRound.join(this);
    }
    if (urgent) writeRound.hurry();
  }

  private dropSlowConsumer(): void {
    this.logger.warn({ connection: this.id, subject: this.principal.subject }, 'dropping slow viewer');
    // What was accepted before the bound was reached keeps its place before the last notification.
    this.writePending();
    this.toClosing('slow_consumer');
    // Best effort: the peer is behind, so it may only read this after everything already queued.
    // Inside a streamed reply no message may begin: the close code alone says why.
    if (!this.outbox) this.socket.send(encodeNotification(DROPPED_NOTIFICATION, { reason: 'slow_consumer' }));
    this.socket.close(CLOSE_SLOW_CONSUMER, 'slow_consumer');
  }

  private toClosing(cause: CloseCause): void {
    if (this.current !== 'open') throw new Error(`connection ${this.id} is already ${this.current}`);
    this.current = 'closing';
    this.closeCause = cause;
    // A peer that does not read will never finish the close handshake; do not wait on it forever.
    this.graceTimer = setTimeout(() => this.socket.terminate(), this.limits.closeGraceMs);
    this.graceTimer.unref();
  }

  private closed(): void {
    if (this.current === 'closed') return;
    clearTimeout(this.graceTimer);
    this.current = 'closed';
    this.pending = [];
    this.pendingBytes = 0;
    this.events.emit('connection:close', this, this.closeCause);
  }
}

/** Resolves when the stream can take more, or closed (then nothing more is written to it). */
function untilDrained(transport: Transport): Promise<void> {
  return new Promise<void>((resolve) => {
    const done = () => {
      transport.off('drain', done);
      transport.off('close', done);
      resolve();
    };
    transport.once('drain', done);
    transport.once('close', done);
  });
}
