/**
 * The installed Gatehouse's version, from the package.json it ships with (at the package root,
 * wherever the bundle put this code), for `gatehouse --version`.
 */
import { readFileSync } from 'node:fs';
import { packageFile } from '../../runtime/package-files.js';

export function packageVersion(): string {
  const file = packageFile('package.json');
  return (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version;
}
