import { createHash } from 'node:crypto';
import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import { principalForTicket, TicketBook, TicketCapacityError } from '../../../src/domain/auth/tickets.js';

const GRANT = { subject: 'native:owner', profile: 'default' };

function clock(start = 1_000_000) {
  let now = start;
  return { now: () => now, advance: (ms: number) => (now += ms) };
}

describe('AUTH-2 bootstrap tickets', () => {
  it('redeems a fresh ticket once, then reports the replay', () => {
    const book = new TicketBook();
    const { ticket } = book.mint('interactive', GRANT);
    expect(book.redeem(ticket, ['interactive'])).toEqual({ ok: true, purpose: 'interactive', grant: GRANT });
    expect(book.redeem(ticket, ['interactive'])).toEqual({ ok: false, reason: 'replayed' });
  });

  it('tells forged, expired and wrong-purpose tickets apart', () => {
    const time = clock();
    const book = new TicketBook({ now: time.now });
    expect(book.redeem('made-up-ticket', ['interactive'])).toEqual({ ok: false, reason: 'forged' });
    const late = book.mint('interactive', GRANT);
    time.advance(30_000);
    expect(late.expiresAt).toBe(time.now());
    expect(book.redeem(late.ticket, ['interactive'])).toEqual({ ok: false, reason: 'expired' });
    const elsewhere = book.mint('dashboard', GRANT);
    expect(book.redeem(elsewhere.ticket, ['interactive', 'worker-adoption'])).toEqual({
      ok: false,
      reason: 'wrong_purpose',
    });
    // Offering it on the wrong path burnt it.
    expect(book.redeem(elsewhere.ticket, ['dashboard'])).toEqual({ ok: false, reason: 'replayed' });
  });

  it('lives 30 seconds by default', () => {
    const time = clock();
    const book = new TicketBook({ now: time.now });
    const { ticket, expiresAt } = book.mint('interactive', GRANT);
    expect(expiresAt - time.now()).toBe(30_000);
    time.advance(29_999);
    expect(book.redeem(ticket, ['interactive']).ok).toBe(true);
  });

  it('keeps only SHA-256 hashes, never the ticket itself', () => {
    const book = new TicketBook();
    const { ticket } = book.mint('interactive', GRANT);
    expect(ticket).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const dump = JSON.stringify(book.debugDump());
    expect(dump).not.toContain(ticket);
    expect(dump).toContain(createHash('sha256').update(ticket).digest('hex'));
    expect(inspect(book, { depth: 10, showHidden: true })).not.toContain(ticket);
  });

  it('refuses to mint past capacity rather than evicting a live ticket; redeemed and expired ones free their slots', () => {
    const time = clock();
    const book = new TicketBook({ now: time.now, capacity: 2 });
    const first = book.mint('interactive', GRANT);
    book.mint('interactive', GRANT);
    expect(() => book.mint('interactive', GRANT)).toThrow(TicketCapacityError);
    // Redeeming frees the slot at once; the spent ticket is still told apart from a forgery.
    expect(book.redeem(first.ticket, ['interactive']).ok).toBe(true);
    const third = book.mint('interactive', GRANT);
    expect(book.redeem(first.ticket, ['interactive'])).toEqual({ ok: false, reason: 'replayed' });
    expect(() => book.mint('interactive', GRANT)).toThrow(TicketCapacityError);
    time.advance(30_000);
    expect(() => book.mint('interactive', GRANT)).not.toThrow();
    expect(book.size).toBe(1);
    expect(book.redeem(third.ticket, ['interactive'])).toEqual({ ok: false, reason: 'forged' });
  });

  it('one principal cannot take the whole book: past its share it is refused, the others still mint', () => {
    const book = new TicketBook({ capacity: 8, perPrincipal: 3 });
    for (let i = 0; i < 3; i++) book.mint('interactive', GRANT);
    let refusal: unknown;
    try {
      book.mint('interactive', GRANT);
    } catch (error) {
      refusal = error;
    }
    expect(refusal).toBeInstanceOf(TicketCapacityError);
    expect(refusal).toMatchObject({ scope: 'principal' });
    expect((refusal as Error).message).toContain('native:owner');
    const dashboard = { subject: 'dashboard:owner', profile: 'default' };
    expect(() => book.mint('dashboard', dashboard)).not.toThrow();
    expect(book.size).toBe(4);
    // The default share is a quarter of the default book.
    expect(new TicketBook().perPrincipal).toBe(256);
  });

  it('a thousand fast connections never lock minting out', () => {
    const book = new TicketBook({ capacity: 8 });
    for (let i = 0; i < 1000; i++) {
      const { ticket } = book.mint('interactive', GRANT);
      expect(book.redeem(ticket, ['interactive']).ok).toBe(true);
    }
    expect(book.size).toBe(0);
  });

  it('AUTH-4 a worker ticket bound to sessions reads, submits and answers those only', () => {
    const bound = principalForTicket('worker-adoption', { ...GRANT, sessions: ['s-1'] });
    expect(bound).toMatchObject({ provider: 'worker', sessions: ['s-1'] });
    expect(bound.capabilities).toEqual(['session:read', 'session:submit', 'session:respond']);
  });

  it('AUTH-4 grants operator to interactive and dashboard tickets, never to worker adoption', () => {
    const interactive = principalForTicket('interactive', GRANT);
    expect(interactive).toMatchObject({ provider: 'native', subject: 'native:owner', profile: 'default' });
    expect(interactive.capabilities).toContain('session:operator');
    expect(interactive.capabilities).toContain('session:create');
    expect(principalForTicket('dashboard', GRANT).capabilities).toContain('session:operator');
    const worker = principalForTicket('worker-adoption', GRANT);
    expect(worker.provider).toBe('worker');
    expect(worker.capabilities).not.toContain('session:operator');
    expect(worker.capabilities).not.toContain('session:create');
    expect(worker.capabilities).toContain('session:submit');
  });
});
