import { describe, expect, it } from 'vitest';
import { TicketBook } from '../../../src/domain/auth/tickets.js';
import { checkTransport, type GateConfig, type RequestFacts } from '../../../src/surfaces/rpc/gate.js';
import { RemoteBindRefusedError, startRpcServer } from '../../../src/surfaces/rpc/server.js';
import { recordingLogger, testDispatcher } from './harness.js';

const facts = (remoteAddress: string): RequestFacts => ({
  remoteAddress,
  host: 'gatehouse.example:8443',
  origin: undefined,
  subprotocols: [],
  query: new URLSearchParams(),
  cookies: new Map(),
});

const remote = (trustedProxies: string[]): GateConfig => ({
  allowRemote: true,
  trustedProxies,
  allowedOrigins: [],
  profile: 'default',
  legacyToken: null,
  internalCredential: null,
});

describe('AUTH-6 remote bind', () => {
  it('refuses a non-loopback bind with allowRemote but neither TLS nor a trusted proxy', async () => {
    const attempt = startRpcServer({
      host: '0.0.0.0',
      port: 0,
      allowRemote: true,
      dispatcher: testDispatcher(recordingLogger()),
      tickets: new TicketBook(),
    });
    await expect(attempt).rejects.toThrow(RemoteBindRefusedError);
    await expect(attempt).rejects.toThrow(/without TLS or an authenticating proxy.*listener\.tls\.cert/);
  });

  it('behind a trusted proxy, only the proxy (and loopback) may connect', () => {
    const config = remote(['10.0.0.5']);
    expect(checkTransport(facts('10.0.0.5'), config)).toBeNull();
    expect(checkTransport(facts('::ffff:10.0.0.5'), config)).toBeNull();
    expect(checkTransport(facts('127.0.0.1'), config)).toBeNull();
    expect(checkTransport(facts('10.0.0.6'), config)?.reason).toBe('remote_denied');
    // With TLS and no proxy named, any peer may try (the credentials are the gate).
    expect(checkTransport(facts('10.0.0.6'), remote([]))).toBeNull();
  });
});
