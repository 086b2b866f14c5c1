/**
 * `session.list` and `session.messages` (SPEC UX-2). Scope `live` lists the sessions held in memory,
 * `stored` the stored ones the caller may access, newest first, a page at a time; scope `all` lists every session a caller may see — local
 * sessions of every source and, for operators, chat-platform sessions — by recent activity, a page
 * at a time, each with its source, model, state, last activity and token counts; and a transcript
 * is read one page at a time. The routing map is walked by its recency index, so the cost follows
 * the page, not the number of sessions.
 */
import type { LocalListPosition, LocalSessionRow, LocalSessionStore } from '../ports/local-store.js';
import type { SessionStore } from '../ports/session-store.js';
import type { SessionEntry } from '../vocabulary.js';
import { isOperator, type Principal } from '../auth/principal.js';
import { GatewayError } from '../errors.js';
import { isOwner, mayAccess } from './access.js';
import { localSessionKey } from './receipt.js';
import { publicMessage } from '../ports/session-store.js';

const LOCAL_KEY_PREFIX = localSessionKey('');

/** A listed session's state: the snapshot's states, plus `queued` (input waiting, none running). */
export type ListedState = 'idle' | 'running' | 'queued' | 'unknown' | 'paused';

export interface ListingFacts {
  sessions: SessionStore;
  store: LocalSessionStore;
  /** Sessions with a hub or an agent in memory now (scope `live`; may repeat an id). */
  liveIds(): Iterable<string>;
  /** info + state (idle, running, unknown, paused) of a local session the caller may see. */
  local(row: LocalSessionRow): Promise<{ info: Record<string, unknown>; state: ListedState }>;
  /**
   * The current physical transcript of a local session the caller may access (or a not_found
   * refusal); null while its receipt is invalid (the session is paused).
   */
  currentTranscript(principal: Principal, logicalId: string): Promise<string | null>;
  /** The open approvals and questions of a chat-platform session's running turn. */
  platformPrompts(sessionId: string): unknown[];
  /** The sessions an operator shared with this member (empty for anyone else). */
  sharedWith(principal: Principal): Promise<ReadonlySet<string>>;
  /** The principal a chat-platform conversation belongs to (its one person, mapped), or null. */
  chatOwner(entry: SessionEntry): string | null;
}

/**
 * Chat-platform sessions belong to the gateway's operators, and a conversation of one person mapped
 * to a principal (`platforms.<name>.members`) to that principal too; nobody else learns they exist.
 */
function mayReadChat(facts: ListingFacts, principal: Principal, entry: SessionEntry): boolean {
  return (
    isOperator(principal) ||
    (principal.sessions === undefined && facts.chatOwner(entry) === principal.subject)
  );
}

function tokens(entry: SessionEntry) {
  return {
    input: entry.input_tokens,
    output: entry.output_tokens,
    cache_read: entry.cache_read_tokens,
    total: entry.total_tokens,
  };
}

/** What the session has cost so far (docs/cost.md). */
function cost(entry: SessionEntry) {
  return { estimated_usd: entry.estimated_cost_usd, status: entry.cost_status };
}

/** The lists show archived sessions only when asked for them, and then only those (issue 31). */
function inArchiveView(row: LocalSessionRow, archived: boolean): boolean {
  return (row.archived_at !== null) === archived;
}

/** Worker-owned rows stay with their worker (as in search); hidden rows never reach a picker. */
function visibleLocal(
  principal: Principal,
  row: LocalSessionRow | null,
  shared: ReadonlySet<string>,
  archived: boolean,
): row is LocalSessionRow {
  return (
    row !== null &&
    !row.hidden &&
    inArchiveView(row, archived) &&
    mayAccess(principal, row, shared) &&
    (isOwner(principal, row) || row.owner.provider !== 'worker')
  );
}

function platformState(entry: SessionEntry): ListedState {
  if (entry.suspended) return 'paused';
  return entry.resume_pending ? 'queued' : 'idle';
}

async function listedRow(
  facts: ListingFacts,
  principal: Principal,
  entry: SessionEntry,
  shared: ReadonlySet<string>,
  archived: boolean,
): Promise<Record<string, unknown> | null> {
  if (entry.session_key.startsWith(LOCAL_KEY_PREFIX)) {
    const row = await facts.store.getLocalSession(entry.session_key.slice(LOCAL_KEY_PREFIX.length));
    if (!visibleLocal(principal, row, shared, archived)) return null;
    const { info, state: current } = await facts.local(row);
    const queued = (await facts.store.unsettled(row.logical_id)).some((a) => a.state === 'queued');
    const state = current === 'idle' && queued ? 'queued' : current;
    return {
      ...info,
      kind: 'local',
      state,
      last_activity: entry.updated_at,
      tokens: tokens(entry),
      cost: cost(entry),
    };
  }
  // Chat-platform sessions are not archived (archiving is a local session's).
  if (archived || !mayReadChat(facts, principal, entry)) return null;
  return {
    session_id: entry.session_id,
    kind: 'platform',
    source: 'platform',
    platform: entry.platform,
    model: null,
    title: entry.display_name,
    state: platformState(entry),
    created_at: entry.created_at,
    last_activity: entry.updated_at,
    tokens: tokens(entry),
    cost: cost(entry),
  };
}

/** session.list with scope `live`: the caller's local sessions held in memory, each with its state. */
export async function listLocal(
  facts: ListingFacts,
  principal: Principal,
  options: { limit: number; archived: boolean },
): Promise<{ scope: 'live'; sessions: Record<string, unknown>[] }> {
  // Hidden rows (tool and oneshot sources, or hidden: true) never reach a human picker.
  const rows = (
    await Promise.all([...new Set(facts.liveIds())].map((id) => facts.store.getLocalSession(id)))
  ).filter(
    (row): row is LocalSessionRow => row !== null && !row.hidden && inArchiveView(row, options.archived),
  );
  const shared = await facts.sharedWith(principal);
  const visible = rows.filter((row) => mayAccess(principal, row, shared)).slice(0, options.limit);
  return { scope: 'live', sessions: await withStates(facts, principal, visible) };
}

/** Each row with its state and its spend so far (from the route of its current transcript: docs/cost.md). */
async function withStates(
  facts: ListingFacts,
  principal: Principal,
  rows: LocalSessionRow[],
): Promise<Record<string, unknown>[]> {
  return Promise.all(
    rows.map(async (row) => {
      const { info, state } = await facts.local(row);
      const physicalId = await facts.currentTranscript(principal, row.logical_id);
      const entry = physicalId === null ? null : await facts.sessions.lookupBySessionId(physicalId);
      return { ...info, state, ...(entry ? { cost: cost(entry) } : {}) };
    }),
  );
}

/**
 * session.list with scope `stored`: the stored local sessions the caller may access, newest first,
 * a page at a time. The page is filled by access, not cut from the newest rows of everyone: a
 * principal bound to named sessions reads exactly those; any other walks the rows (a keyset walk,
 * so sessions created meanwhile do not shift it) until the page is full or the rows run out.
 */
export async function listStored(
  facts: ListingFacts,
  principal: Principal,
  options: { limit: number; cursor: string | null; archived: boolean },
): Promise<{ scope: 'stored'; sessions: Record<string, unknown>[]; next_cursor: string | null }> {
  const after = options.cursor === null ? undefined : decodePosition(options.cursor);
  const shared = await facts.sharedWith(principal);
  const shown = (row: LocalSessionRow) =>
    mayAccess(principal, row, shared) && inArchiveView(row, options.archived);
  const { rows, more } =
    principal.sessions !== undefined
      ? await namedPage(facts, shown, principal.sessions, options.limit, after)
      : await walkedPage(facts, shown, options.limit, after);
  const last = rows.at(-1);
  return {
    scope: 'stored',
    sessions: await withStates(facts, principal, rows),
    next_cursor: more && last ? encodePosition(last) : null,
  };
}

const newestFirst = (a: LocalListPosition, b: LocalListPosition): number =>
  a.created_at === b.created_at
    ? compareBytes(b.logical_id, a.logical_id)
    : compareBytes(b.created_at, a.created_at);

function compareBytes(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

async function namedPage(
  facts: ListingFacts,
  shown: (row: LocalSessionRow) => boolean,
  ids: readonly string[],
  limit: number,
  after: LocalListPosition | undefined,
): Promise<{ rows: LocalSessionRow[]; more: boolean }> {
  const rows = (await Promise.all([...new Set(ids)].map((id) => facts.store.getLocalSession(id))))
    .filter((row): row is LocalSessionRow => row !== null && !row.hidden && shown(row))
    .filter((row) => after === undefined || newestFirst(after, row) < 0)
    .sort(newestFirst);
  return { rows: rows.slice(0, limit), more: rows.length > limit };
}

async function walkedPage(
  facts: ListingFacts,
  shown: (row: LocalSessionRow) => boolean,
  limit: number,
  after: LocalListPosition | undefined,
): Promise<{ rows: LocalSessionRow[]; more: boolean }> {
  const chunk = Math.min(500, limit * 4);
  const rows: LocalSessionRow[] = [];
  let before = after;
  for (;;) {
    const read = await facts.store.listLocalSessions({ limit: chunk, ...(before ? { before } : {}) });
    for (const [index, row] of read.entries()) {
      before = row;
      if (!shown(row)) continue;
      rows.push(row);
      // Full: there may be more unless this was the very last row there is.
      if (rows.length === limit) return { rows, more: read.length === chunk || index < read.length - 1 };
    }
    if (read.length < chunk) return { rows, more: false };
  }
}

function encodePosition(row: LocalListPosition): string {
  return Buffer.from(JSON.stringify([row.created_at, row.logical_id])).toString('base64url');
}

function decodePosition(cursor: string): LocalListPosition {
  try {
    const [created_at, logical_id] = JSON.parse(
      Buffer.from(cursor, 'base64url').toString('utf8'),
    ) as unknown[];
    if (typeof created_at === 'string' && typeof logical_id === 'string') return { created_at, logical_id };
  } catch {
    // refused below
  }
  throw new GatewayError('invalid_params', 'that cursor is not one session.list returned', { cursor });
}

export async function listAll(
  facts: ListingFacts,
  principal: Principal,
  options: { limit: number; cursor: string | null; archived: boolean },
): Promise<{ scope: 'all'; sessions: Record<string, unknown>[]; next_cursor: string | null }> {
  const sessions: Record<string, unknown>[] = [];
  const shared = await facts.sharedWith(principal);
  let cursor = options.cursor;
  // Ask only for as many routes as are still missing, so a page never ends inside a store page and
  // the store's own cursor stays exact.
  do {
    let page;
    try {
      page = await facts.sessions.listSessions({ limit: options.limit - sessions.length, cursor });
    } catch {
      throw new GatewayError('invalid_params', 'that cursor is not one session.list returned', {
        cursor: options.cursor,
      });
    }
    for (const entry of page.entries) {
      const row = await listedRow(facts, principal, entry, shared, options.archived);
      if (row) sessions.push(row);
    }
    cursor = page.nextCursor;
  } while (cursor !== null && sessions.length < options.limit);
  return { scope: 'all', sessions, next_cursor: cursor };
}

/**
 * One page of a transcript the caller may read: a local session's current one, or a chat-platform
 * session's by its physical id (operators, and its one mapped person). Anything else is `not_found`.
 */
export async function sessionMessages(
  facts: ListingFacts,
  principal: Principal,
  options: { session_id: string; before_id: number | null; limit: number },
) {
  const id = options.session_id;
  let physicalId: string | null;
  let prompts: unknown[] | undefined;
  if ((await facts.store.getLocalSession(id)) !== null) {
    physicalId = await facts.currentTranscript(principal, id);
    if (physicalId === null)
      throw new GatewayError('permission_denied', `session ${id} is paused`, { session_id: id });
  } else {
    const entry = await facts.sessions.lookupBySessionId(id);
    if (!entry || entry.session_key.startsWith(LOCAL_KEY_PREFIX) || !mayReadChat(facts, principal, entry)) {
      throw new GatewayError('not_found', `no session ${id} that you may access`, { session_id: id });
    }
    physicalId = entry.session_id;
    prompts = facts.platformPrompts(physicalId);
  }
  const page = await facts.sessions.loadTranscriptPage(physicalId, {
    beforeId: options.before_id,
    limit: options.limit,
  });
  return {
    session_id: id,
    messages: page.messages.map(publicMessage),
    has_more: page.hasMore,
    // A chat-platform session publishes no live events: its open prompts come with its messages.
    ...(prompts === undefined ? {} : { prompts }),
  };
}
