import { describe, expect, it } from 'vitest';
import { selfSigned } from '../../shared/self-signed.js';
import { connect, OWNER, startHarness, ticketProtocols } from './harness.js';

describe('AUTH-6 TLS listener', () => {
  it('serves HTTPS and WSS with the configured certificate, and ticket auth works over it', async () => {
    const { cert, key } = selfSigned();
    const tls = { cert, key };
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
