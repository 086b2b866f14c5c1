/**
 * The installed Gatehouse's version, from the package.json it ships with (three folders up from
 * both src/surfaces/cli and dist/surfaces/cli), for `gatehouse --version`.
 */
import { readFileSync } from 'node:fs';

export function packageVersion(): string {
  const file = new URL('../../../package.json', import.meta.url);
  return (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version;
}
