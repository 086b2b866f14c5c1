/**
 * Drives the real, built `gatehouse` command (dist/surfaces/cli/main.js; `npm test` builds before
 * vitest runs) as a child process in a temp GATEHOUSE_HOME.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

export const CLI = resolve(import.meta.dirname, '../../dist/surfaces/cli/main.js');

export function requireBuild(): void {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run "npm run build" before these tests`);
}

export function tempHome(): string {
  return join(mkdtempSync(join(tmpdir(), 'gh-e2e-')), 'home');
}

export interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

export function spawnCli(home: string, args: string[], env: NodeJS.ProcessEnv = {}): ChildProcess {
  return spawn(process.execPath, [CLI, ...args], {
    env: { ...process.env, GATEHOUSE_HOME: home, GATEHOUSE_DEBUG: '', ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
}

/** Runs a command to completion, optionally feeding `input` on stdin. */
export function runCli(
  home: string,
  args: string[],
  options: { env?: NodeJS.ProcessEnv; input?: string } = {},
) {
  const child = spawnCli(home, args, options.env);
  child.stdin!.end(options.input ?? '');
  return finished(child);
}

export function finished(child: ChildProcess): Promise<Run> {
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  return new Promise((resolveRun) => child.once('close', (code) => resolveRun({ code, stdout, stderr })));
}

/** Resolves with stdout so far once it contains `text`; rejects if the process ends first. */
export function waitForOutput(child: ChildProcess, text: string): Promise<string> {
  return new Promise((resolveWait, reject) => {
    let seen = '';
    let errors = '';
    child.stderr!.on('data', (chunk: Buffer) => (errors += chunk.toString()));
    child.stdout!.on('data', (chunk: Buffer) => {
      seen += chunk.toString();
      if (seen.includes(text)) resolveWait(seen);
    });
    child.once('exit', (code) => reject(new Error(`exited with ${code} before "${text}": ${errors}`)));
  });
}

export function exited(child: ChildProcess): Promise<number | null> {
  // A child killed by a signal has exitCode null but signalCode set: it has exited all the same.
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolveExit) => child.once('exit', (code) => resolveExit(code)));
}

/** A user-facing failure: one line, prefixed, no stack frames. */
export function isOneLineError(stderr: string): boolean {
  const lines = stderr.trim().split('\n');
  return lines.length === 1 && lines[0]!.startsWith('gatehouse: ') && !/\n\s+at /.test(stderr);
}
