import { readFileSync } from 'node:fs';
import { get } from 'node:https';
import { beforeAll, describe, expect, it } from 'vitest';
import { homeLayout } from '../../src/daemon/home.js';
import { selfSigned } from '../shared/self-signed.js';
import { exited, isOneLineError, requireBuild, runCli, spawnCli, tempHome, waitForOutput } from './cli.js';
import { testPortArgs, writeConfig } from './gateway-harness.js';

beforeAll(requireBuild);

function httpsJson(url: string, ca: Buffer): Promise<unknown> {
  return new Promise((resolve, reject) => {
    get(url, { ca }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve(JSON.parse(body)));
    }).on('error', reject);
  });
}

describe('AUTH-6 remote bind', () => {
  it('refuses to start on a non-loopback host without TLS or a trusted proxy, saying what to set', async () => {
    const home = tempHome();
    const file = homeLayout(home).configFile;
    writeConfig(home, 'listener:\n  host: 0.0.0.0\n  allow_remote: true\n');
    const serve = await runCli(home, ['serve']);
    expect(serve.code).not.toBe(0);
    expect(isOneLineError(serve.stderr)).toBe(true);
    expect(serve.stderr).toContain(`${file}: listener.allow_remote: listening on 0.0.0.0`);
    expect(serve.stderr).toContain('set listener.tls.cert and listener.tls.key');
    expect(serve.stderr).toContain('listener.trusted_proxy');
  });

  it('with listener.tls it serves HTTPS with that certificate', async () => {
    const { certFile, keyFile, cert } = selfSigned();
    const home = tempHome();
    writeConfig(
      home,
      `listener:\n  host: 127.0.0.1\n  allow_remote: true\n  tls:\n    cert: ${certFile}\n    key: ${keyFile}\n`,
    );
    const serve = spawnCli(home, ['serve', ...testPortArgs(homeLayout(home))]);
    const ready = await waitForOutput(serve, 'Gatehouse is ready at');
    expect(ready).toMatch(/ready at https:\/\/127\.0\.0\.1:\d+/);
    const url = (JSON.parse(readFileSync(homeLayout(home).gatewayJson, 'utf8')) as { url: string }).url;
    expect(await httpsJson(`${url}/healthz`, cert)).toMatchObject({ ok: true, state: 'ready' });
    serve.kill('SIGTERM');
    expect(await exited(serve)).toBe(0);
  });
});
