// Builds the dashboard page into dist/dashboard (served by src/surfaces/dashboard/assets.ts).
import { fileURLToPath } from 'node:url';

export default {
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/',
  logLevel: 'warn',
  publicDir: false,
  build: {
    outDir: fileURLToPath(new URL('../../../../dist/dashboard', import.meta.url)),
    emptyOutDir: true,
    target: 'es2022',
    // No inline script or style anywhere: the CSP forbids both.
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    sourcemap: false,
  },
};
