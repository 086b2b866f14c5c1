/** The dashboard's static files (assets.ts) on a real HTTP server, and logins kept across restarts. */
import { mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { fileLoginStore } from '../../../src/daemon/login-file.js';
import { DashboardLogins } from '../../../src/domain/auth/logins.js';
import { CONTENT_SECURITY_POLICY, dashboardAssets } from '../../../src/surfaces/dashboard/assets.js';

let server: Server | undefined;
afterEach(() => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())));

function built(): string {
  const dir = mkdtempSync(join(tmpdir(), 'gh-assets-'));
  mkdirSync(join(dir, 'assets'));
  writeFileSync(
    join(dir, 'index.html'),
    '<!doctype html><script type="module" src="/assets/a-1.js"></script>',
  );
  writeFileSync(join(dir, 'assets', 'a-1.js'), `console.log(${JSON.stringify('x'.repeat(2000))});`);
  return dir;
}

async function serve(dir: string): Promise<string> {
  const assets = dashboardAssets(dir);
  server = createServer((req, res) => {
    if (!assets.handler(req, res)) {
      res.writeHead(404);
      res.end();
    }
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function get(url: string, method = 'GET', headers: Record<string, string> = {}) {
  return new Promise<{ status: number; headers: Record<string, unknown>; body: Buffer }>(
    (resolve, reject) => {
      const req = request(url, { method, headers }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }),
        );
      });
      req.on('error', reject);
      req.end();
    },
  );
}

describe('dashboard assets', () => {
  it('serves / and hashed assets with their types, CSP, cache headers and gzip; HEAD has no body', async () => {
    const url = await serve(built());
    const page = await get(`${url}/`);
    expect(page.status).toBe(200);
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(page.headers['content-security-policy']).toBe(CONTENT_SECURITY_POLICY);
    expect(page.headers['x-frame-options']).toBe('DENY');
    expect(page.headers['cache-control']).toBe('no-cache');
    const script = await get(`${url}/assets/a-1.js`, 'GET', { 'accept-encoding': 'gzip, br' });
    expect(script.headers['content-encoding']).toBe('gzip');
    expect(script.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect(gunzipSync(script.body).toString()).toContain('console.log');
    const head = await get(`${url}/assets/a-1.js`, 'HEAD');
    expect([head.status, head.body.length]).toEqual([200, 0]);
  });

  it('leaves other methods and unknown paths to the router (404); an unbuilt package says to build', async () => {
    const url = await serve(built());
    expect((await get(`${url}/`, 'POST')).status).toBe(404);
    expect((await get(`${url}/assets/../index.html.bak`)).status).toBe(404);
    expect((await get(`${url}/etc/passwd`)).status).toBe(404);
    server!.close();
    const bare = await serve(join(tmpdir(), 'gh-no-such-build'));
    const hint = await get(`${bare}/`);
    expect(hint.status).toBe(503);
    expect(hint.body.toString()).toContain('npm run build');
  });

  it('reads the build on the first request, not when the handler is made (issue 33)', async () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'gh-assets-late-')), 'dashboard');
    // Made before there is anything to read: a daemon that starts reads nothing yet.
    const url = await serve(dir);
    const page = built();
    renameSync(page, dir);
    const first = await get(`${url}/`);
    expect(first.status).toBe(200);
    expect(first.body.toString()).toContain('/assets/a-1.js');
    // Read once: what changes on disk afterwards is not read again.
    rmSync(dir, { recursive: true });
    expect((await get(`${url}/assets/a-1.js`)).status).toBe(200);
  });
});

describe('dashboard logins across restarts', () => {
  it('a login opened before a restart is still valid after it; the file holds only hashes, owner-only', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'gh-logins-')), 'dashboard-logins.json');
    const before = new DashboardLogins(
      Date.now,
      60_000,
      fileLoginStore(file, () => undefined),
    );
    const token = before.open();
    const ended = before.open();
    before.end(ended);
    const text = readFileSync(file, 'utf8');
    expect(text).not.toContain(token);
    expect(statSync(file).mode & 0o777).toBe(0o600);

    const after = new DashboardLogins(
      Date.now,
      60_000,
      fileLoginStore(file, () => undefined),
    );
    expect(after.lookup(token)).toBe('ok');
    expect(after.lookup(ended)).toBe('forged');
    // Expired entries are dropped on load.
    const later = new DashboardLogins(
      () => Date.now() + 120_000,
      60_000,
      fileLoginStore(file, () => undefined),
    );
    expect(later.lookup(token)).toBe('forged');
  });
});
