/**
 * Issue 12 item 1 against the real daemon: concurrent guesses over real HTTP, from distinct
 * loopback addresses (Linux routes all of 127/8 to the loopback device, so a client can bind
 * 127.0.0.2 as its source and the daemon sees a different peer).
 */
import { request } from 'node:http';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { hashPassword } from '../../src/domain/auth/password.js';
import { requireBuild } from './cli.js';
import { nextEvent, startDaemon, type RunningDaemon } from './gateway-harness.js';
import { createAttached } from './seed-fixture.js';

beforeAll(requireBuild);

const PASSWORD = 'the owner knows this one';

interface Reply {
  status: number;
  retryAfter: string | undefined;
}

function login(url: string, password: string, localAddress: string): Promise<Reply> {
  const body = JSON.stringify({ password });
  return new Promise((resolve, reject) => {
    const req = request(
      `${url}/auth/login`,
      {
        method: 'POST',
        localAddress,
        agent: false,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        res.resume();
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            retryAfter: res.headers['retry-after'],
          }),
        );
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

let daemon: RunningDaemon | undefined;
afterEach(async () => {
  await daemon?.stop();
  daemon = undefined;
});

async function daemonWithPassword(): Promise<RunningDaemon> {
  // The real scrypt cost, so each verification really occupies a pool thread.
  const hash = await hashPassword(PASSWORD);
  return startDaemon({ config: `dashboard:\n  password_hash: ${JSON.stringify(hash)}\n` });
}

describe('dashboard login under a flood (issue 12 item 1)', () => {
  it('evaluates at most the free attempts of 60 concurrent guesses, answers the rest 429 at once, and the owner still gets in', async () => {
    daemon = await daemonWithPassword();
    const { url } = daemon;
    const replies = await Promise.all(
      Array.from({ length: 60 }, (_, i) => login(url, `guess number ${i}`, '127.0.0.2')),
    );
    const evaluated = replies.filter((r) => r.status === 401 || r.status === 200);
    const limited = replies.filter((r) => r.status === 429);
    expect(evaluated.length).toBeGreaterThanOrEqual(1);
    expect(evaluated.length).toBeLessThanOrEqual(5);
    expect(evaluated.every((r) => r.status === 401)).toBe(true);
    expect(limited.length).toBe(60 - evaluated.length);
    expect(limited.every((r) => Number(r.retryAfter) >= 1)).toBe(true);

    // Guessing on from that address: it gets the rest of its free attempts, then backs off.
    let more = 0;
    while ((await login(url, `more ${more}`, '127.0.0.2')).status === 401) more += 1;
    expect(evaluated.length + more).toBe(5);
    // The owner's own address is not held back by it.
    expect((await login(url, PASSWORD, '127.0.0.1')).status).toBe(200);
  });

  it('a run: echo hi turn completes while a flood of guesses from many addresses goes on', async () => {
    daemon = await daemonWithPassword();
    const { url } = daemon;
    let flooding = true;
    const statuses = new Map<number, number>();
    const flood = (async () => {
      while (flooding) {
        const batch = await Promise.all(
          Array.from({ length: 40 }, (_, i) => login(url, `guess ${i}`, `127.0.0.${i + 3}`)),
        );
        for (const reply of batch) statuses.set(reply.status, (statuses.get(reply.status) ?? 0) + 1);
      }
    })();
    try {
      const client = await daemon.connect();
      const session_id = await createAttached(client, {});
      const done = nextEvent(client, 'turn.complete', (e) => e.session_id === session_id, 120_000);
      await client.call('prompt.submit', { session_id, submission_id: 'during-flood', text: 'run: echo hi' });
      expect((await done).event).toMatchObject({ outcome: 'completed' });
    } finally {
      flooding = false;
      await flood;
    }
    expect(statuses.get(429)).toBeGreaterThan(0);
    expect(statuses.get(200)).toBeUndefined();
  });
});
