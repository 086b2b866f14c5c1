/**
 * `gatehouse sessions rename|archive|unarchive|delete`: managing stored sessions through the same
 * RPC methods the dashboard calls (`session.title`, `session.archive`, `session.delete`).
 */
import { createInterface } from 'node:readline/promises';
import { DaemonError } from '../../../daemon/errors.js';
import { say } from '../shared.js';
import { visible } from '../visible.js';
import { withLink } from './with-link.js';

const busy = (error: { reason: string; message: string }) =>
  error.reason === 'session_busy' ? new DaemonError('not_available', error.message) : null;

export async function renameSession(id: string, title: string): Promise<void> {
  const r = await withLink((c) => c.call<{ title: string }>('session.title', { session_id: id, title }));
  say(`Renamed ${id}: ${visible(r.title)}`);
}

export async function archiveSession(id: string, archived: boolean): Promise<void> {
  await withLink((c) => c.call('session.archive', { session_id: id, archived }));
  say(
    archived
      ? `Archived ${id}: "gatehouse sessions --archived" lists it; it is still searchable.`
      : `Unarchived ${id}: it is listed again.`,
  );
}

/** Asks on the terminal; false unless the answer is yes. */
async function confirmed(question: string): Promise<boolean> {
  const rl = createInterface({ input: process.stdin, output: process.stdout });
  try {
    return /^y(es)?$/i.test((await rl.question(question)).trim());
  } finally {
    rl.close();
  }
}

export async function deleteSession(id: string, flags: { yes?: boolean }): Promise<void> {
  await withLink(async (c) => {
    if (!flags.yes) {
      if (!process.stdin.isTTY) {
        throw new DaemonError(
          'invalid_input',
          `deleting a session cannot be undone: run it on a terminal to confirm, or pass --yes`,
        );
      }
      const info = await c.call<{ title: string | null }>('session.info', { session_id: id });
      const named = info.title ? ` "${visible(info.title)}"` : '';
      if (!(await confirmed(`Delete session ${id}${named} and everything stored for it? [y/N] `))) {
        say('Nothing deleted.');
        return;
      }
    }
    const r = await c.call<{ messages: number }>('session.delete', { session_id: id });
    say(`Deleted ${id} (${r.messages} messages).`);
  }, busy);
}
