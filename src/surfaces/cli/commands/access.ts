/**
 * `gatehouse share|unshare|shares` and `gatehouse audit` (issue 30, docs/identity.md): sharing a
 * session with a member and reading the audit trail of the running gateway, through the same
 * operator RPC methods the dashboard calls (`session.share`, `session.unshare`, `session.shares`,
 * `audit.list`).
 */
import type { AuditRow } from '../../../protocol/results.js';
import { DaemonError } from '../../../daemon/errors.js';
import { RpcCallError } from '../../client/rpc-client.js';
import { openLink } from '../chat/link.js';
import { loadCliConfig } from '../load-config.js';
import { cliHome, say } from '../shared.js';
import { visible } from '../visible.js';

async function operatorCall<T>(method: string, params: Record<string, unknown>): Promise<T> {
  const layout = cliHome();
  loadCliConfig(layout);
  const { client } = await openLink(layout);
  try {
    return await client.call<T>(method, params);
  } catch (error) {
    if (error instanceof RpcCallError && (error.reason === 'invalid_params' || error.reason === 'not_found'))
      throw new DaemonError('invalid_input', error.message);
    if (error instanceof RpcCallError) throw new DaemonError('not_available', error.message);
    throw error;
  } finally {
    await client.close();
  }
}

/** `member:alice` from `alice` or `member:alice`; other subjects (`oidc:…`) as given. */
function subjectOf(member: string): string {
  return member.includes(':') ? member : `member:${member}`;
}

export async function share(sessionId: string, member: string, flags: { level: string }): Promise<void> {
  const granted = await operatorCall<{ member: string; level: string }>('session.share', {
    session_id: sessionId,
    member: subjectOf(member),
    level: flags.level,
  });
  say(`Shared ${sessionId} with ${granted.member} (${granted.level}).`);
}

export async function unshare(sessionId: string, member: string): Promise<void> {
  const result = await operatorCall<{ member: string; revoked: boolean; viewers_detached: number }>(
    'session.unshare',
    { session_id: sessionId, member: subjectOf(member) },
  );
  say(
    result.revoked
      ? `Revoked ${result.member}'s access to ${sessionId} (${result.viewers_detached} live viewer(s) detached).`
      : `${result.member} had no share of ${sessionId}.`,
  );
}

export async function shares(sessionId: string, flags: { json?: boolean }): Promise<void> {
  const result = await operatorCall<{ shares: { member: string; level: string; granted_by: string }[] }>(
    'session.shares',
    { session_id: sessionId },
  );
  if (flags.json) return say(JSON.stringify(result, null, 2));
  if (result.shares.length === 0) return say(`${sessionId} is shared with nobody.`);
  for (const s of result.shares) say(`${s.member}  ${s.level}  (granted by ${s.granted_by})`);
}

export async function audit(flags: {
  limit: string;
  session?: string;
  principal?: string;
  json?: boolean;
}): Promise<void> {
  const limit = Number(flags.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > 500)
    throw new DaemonError('invalid_input', '--limit must be a whole number from 1 to 500');
  const { rows } = await operatorCall<{ rows: AuditRow[] }>('audit.list', {
    limit,
    ...(flags.session !== undefined ? { session_id: flags.session } : {}),
    ...(flags.principal !== undefined ? { actor: flags.principal } : {}),
  });
  if (flags.json) return say(JSON.stringify({ rows }, null, 2));
  if (rows.length === 0) return say('No audit rows.');
  // Oldest first, as a log reads.
  for (const r of [...rows].reverse()) {
    const detail = r.detail === null ? '' : `  ${visible(JSON.stringify(r.detail))}`;
    say(
      `${r.at}  ${visible(r.principal)}  ${r.path}  ${r.action}  ${r.session_id ?? '-'}  ${r.outcome}${detail}`,
    );
  }
}
