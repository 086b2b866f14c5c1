import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { connect, OWNER, startHarness, ticketProtocols } from './harness.js';

/** A throwaway self-signed certificate for localhost, made with the machine's openssl. */
function selfSigned(): { cert: Buffer; key: Buffer } {
  const dir = mkdtempSync(join(tmpdir(), 'gh-tls-'));
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-days',
      '1',
      '-subj',
      '/CN=localhost',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
      '-keyout',
      join(dir, 'key.pem'),
      '-out',
      join(dir, 'cert.pem'),
    ],
    { stdio: 'ignore' },
  );
  return { cert: readFileSync(join(dir, 'cert.pem')), key: readFileSync(join(dir, 'key.pem')) };
}

describe('AUTH-6 TLS listener', () => {
  it('serves HTTPS and WSS with the configured certificate, and ticket auth works over it', async () => {
    const tls = selfSigned();
    const h = await startHarness({ tls });
    try {
      expect(h.server.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
      const { ticket } = h.tickets.mint('interactive', OWNER);
      const client = await connect(h.wsUrl, ticketProtocols(ticket), { ca: tls.cert });
      expect((await client.call('ping', {})).result).toEqual({ pong: true });
      client.close();
      await expect(
        connect(h.wsUrl, ticketProtocols(h.tickets.mint('interactive', OWNER).ticket)),
      ).rejects.toThrow(/self.signed|certificate/i);
    } finally {
      await h.server.close();
    }
  });
});
