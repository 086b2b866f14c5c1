/**
 * The dashboard's static files (SPEC UX-2): the page `npm run build` bundles into dist/dashboard,
 * read and gzipped once, on the first GET or HEAD (a daemon nobody opens the dashboard of never
 * reads them), and served from memory for GET and HEAD only. Nothing is
 * fetched from the network; every response carries a strict Content-Security-Policy (no inline
 * script or style, no framing, connections only back to this listener).
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { extname, join, relative, sep } from 'node:path';
import { gzipSync } from 'node:zlib';
import { packageFile } from '../../runtime/package-files.js';
import type { StaticHandler } from '../rpc/http-routes.js';

/** Where the build puts the page: dist/dashboard, beside the compiled daemon. */
export const DEFAULT_ASSET_DIR = packageFile('dist', 'dashboard');

export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const SECURITY_HEADERS = {
  'content-security-policy': CONTENT_SECURITY_POLICY,
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cross-origin-opener-policy': 'same-origin',
};

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json; charset=utf-8',
};

interface Asset {
  readonly body: Buffer;
  readonly gzipped: Buffer | null;
  readonly contentType: string;
  /** Hashed build outputs never change under their name; the page itself is revalidated. */
  readonly cacheControl: string;
}

function walk(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = join(dir, name);
    return statSync(full).isDirectory() ? walk(full) : [full];
  });
}

function loadAssets(dir: string): Map<string, Asset> {
  const assets = new Map<string, Asset>();
  for (const file of walk(dir)) {
    const type = CONTENT_TYPES[extname(file)];
    if (type === undefined) continue;
    const body = readFileSync(file);
    const urlPath = '/' + relative(dir, file).split(sep).join('/');
    const compressible = !type.startsWith('image/png') && body.length > 512;
    assets.set(urlPath, {
      body,
      gzipped: compressible ? gzipSync(body, { level: 9 }) : null,
      contentType: type,
      cacheControl: urlPath.startsWith('/assets/') ? 'public, max-age=31536000, immutable' : 'no-cache',
    });
  }
  return assets;
}

export interface DashboardAssets {
  readonly handler: StaticHandler;
  /** Whether the build output was found (a source checkout that was never built has none). */
  readonly available: boolean;
  /** The URL paths served, for tests and the benchmark. */
  readonly paths: readonly string[];
  /** Gzipped bytes of every .js and .css file: what a first visit downloads besides the page. */
  readonly gzippedScriptAndStyleBytes: number;
}

/** `/` is the page; the page's own client-side views live under `#…`, so no other path is a route. */
function lookup(assets: Map<string, Asset>, pathname: string): Asset | undefined {
  return assets.get(pathname === '/' ? '/index.html' : pathname);
}

function acceptsGzip(req: IncomingMessage): boolean {
  return /\bgzip\b/.test(String(req.headers['accept-encoding'] ?? ''));
}

function send(req: IncomingMessage, res: ServerResponse, asset: Asset): void {
  const gzip = asset.gzipped !== null && acceptsGzip(req);
  const body = gzip ? asset.gzipped : asset.body;
  res.writeHead(200, {
    ...SECURITY_HEADERS,
    'content-type': asset.contentType,
    'content-length': body.length,
    'cache-control': asset.cacheControl,
    vary: 'accept-encoding',
    ...(gzip ? { 'content-encoding': 'gzip' } : {}),
  });
  res.end(req.method === 'HEAD' ? undefined : body);
}

/**
 * The built page in `dir`, read when first asked for (the handler's first GET or HEAD, or a
 * property); with no build there, the handler serves a one-line hint.
 */
export function dashboardAssets(dir: string = DEFAULT_ASSET_DIR): DashboardAssets {
  let loaded: Map<string, Asset> | null = null;
  const assets = (): Map<string, Asset> => {
    if (loaded === null) {
      try {
        loaded = loadAssets(dir);
      } catch {
        loaded = new Map();
      }
    }
    return loaded;
  };
  const available = () => assets().has('/index.html');
  const handler: StaticHandler = (req, res) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return false;
    const pathname = new URL(req.url ?? '/', 'http://localhost').pathname;
    const asset = lookup(assets(), pathname);
    if (asset) {
      send(req, res, asset);
      return true;
    }
    if (pathname === '/' && !available()) {
      const text = 'The dashboard was not built: run "npm run build" in the gatehouse package.\n';
      res.writeHead(503, { ...SECURITY_HEADERS, 'content-type': 'text/plain; charset=utf-8' });
      res.end(text);
      return true;
    }
    return false;
  };
  return {
    handler,
    get available() {
      return available();
    },
    get paths() {
      return [...assets().keys()];
    },
    get gzippedScriptAndStyleBytes() {
      let gz = 0;
      for (const [path, asset] of assets()) {
        if (path.endsWith('.js') || path.endsWith('.css')) gz += (asset.gzipped ?? asset.body).length;
      }
      return gz;
    },
  };
}
