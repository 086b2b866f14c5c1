/**
 * Is the process at the other end of a local connection one the daemon spawned? (issue 25 item 2,
 * docs/tool-reach.md) A tool that drives the gateway's own CLI could otherwise answer its own
 * approval prompt. The control socket and the listener ask this once per connection and refuse a
 * spawned peer (`spawned_by_gateway`).
 *
 * How: the peer's socket inode (TCP: the entry of /proc/net/tcp{,6} whose local port is the peer's
 * port and whose remote port is ours; Unix: the peer inode `ss -x` reports for our end, from the
 * kernel's sock_diag), then the processes that may be ours — the daemon's descendants by the PPid
 * chain, and every process in a session a tool command was started in (an orphan re-parented to
 * init stays in its session), and the members of the safe-mode workers' pids cgroups — and whether
 * one of them holds that inode in /proc/<pid>/fd.
 *
 * Limits (docs/tool-reach.md): a process that both leaves its session (`setsid`) and is re-parented
 * (a double fork) is no longer recognised; nor is anything when /proc or `ss` is unavailable.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import type { Socket } from 'node:net';

/** At most this many processes are looked into per connection (the daemon's own are few). */
const MAX_CANDIDATES = 2048;
const SS_TIMEOUT_MS = 2000;

interface ProcEntry {
  pid: number;
  ppid: number;
  sid: number;
}

export interface SpawnedPeerOptions {
  /** The daemon's pid: its descendants are spawned processes. */
  daemonPid: number;
  /** Sessions tool commands were started in (each command leads a session of its own). */
  toolSessions: () => ReadonlySet<number>;
  /** Members of the safe-mode workers' pids cgroups, whatever their parent or session. */
  isolatedProcesses?: () => readonly number[];
}

export type SpawnedPeerCheck = (socket: Socket) => Promise<boolean>;

export function spawnedPeerCheck(options: SpawnedPeerOptions): SpawnedPeerCheck {
  return async (socket) => {
    try {
      // Nothing the daemon started is alive (no child, no tool session, no isolated process): no
      // peer can be one of ours, and neither the process table nor the socket tables are read.
      if (nothingSpawned(options)) return false;
      const inode = await peerInode(socket);
      if (inode === null) return false;
      return holdsInode(candidates(options), inode);
    } catch {
      return false;
    }
  };
}

/**
 * True when the daemon has no child process (the kernel's children lists of its threads are all
 * empty), has never started a tool command (whose session an orphan could still be in), and holds
 * no isolated worker process: the candidates would be none. A kernel without those lists
 * (CONFIG_PROC_CHILDREN) answers false, and the full look-up runs.
 */
function nothingSpawned(options: SpawnedPeerOptions): boolean {
  if (options.toolSessions().size > 0 || (options.isolatedProcesses?.() ?? []).length > 0) return false;
  const tasks = `/proc/${options.daemonPid}/task`;
  try {
    return fs
      .readdirSync(tasks)
      .every((tid) => fs.readFileSync(`${tasks}/${tid}/children`, 'latin1').trim() === '');
  } catch {
    return false;
  }
}

function processTable(): ProcEntry[] {
  const out: ProcEntry[] = [];
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${name}/stat`, 'latin1');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      out.push({ pid: Number(name), ppid: Number(fields[1]), sid: Number(fields[3]) });
    } catch {
      // It ended while we looked.
    }
  }
  return out;
}

/** The daemon's descendants and the members of tool sessions, the daemon itself excluded. */
function candidates(options: SpawnedPeerOptions): number[] {
  const table = processTable();
  const parent = new Map(table.map((p) => [p.pid, p.ppid]));
  const sessions = options.toolSessions();
  const found: number[] = [...(options.isolatedProcesses?.() ?? [])];
  for (const entry of table) {
    if (entry.pid === options.daemonPid) continue;
    let ours = sessions.has(entry.sid);
    for (let p = entry.ppid, hops = 0; !ours && p > 1 && hops < 1024; hops++) {
      if (p === options.daemonPid) ours = true;
      else p = parent.get(p) ?? 0;
    }
    if (ours) found.push(entry.pid);
    if (found.length >= MAX_CANDIDATES) break;
  }
  return found;
}

function holdsInode(pids: readonly number[], inode: number): boolean {
  const link = `socket:[${inode}]`;
  for (const pid of pids) {
    let fds: string[];
    try {
      fds = fs.readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      try {
        if (fs.readlinkSync(`/proc/${pid}/fd/${fd}`) === link) return true;
      } catch {
        // Closed while we looked.
      }
    }
  }
  return false;
}

/** The inode of the peer's end of `socket`, or null when it is not a local process we can see. */
async function peerInode(socket: Socket): Promise<number | null> {
  const address = socket.remoteAddress;
  if (address !== undefined) return tcpPeerInode(address, socket.remotePort, socket.localPort);
  const own = ownInode(socket);
  return own === null ? null : unixPeerInode(own);
}

function ownInode(socket: Socket): number | null {
  const fd = (socket as unknown as { _handle?: { fd?: number } })._handle?.fd;
  if (typeof fd !== 'number' || fd < 0) return null;
  const match = /^socket:\[(\d+)\]$/.exec(fs.readlinkSync(`/proc/self/fd/${fd}`));
  return match ? Number(match[1]) : null;
}

const LOOPBACK = /^(127\.|::1$|::ffff:127\.)/;

function tcpPeerInode(address: string, peerPort?: number, ourPort?: number): number | null {
  if (!LOOPBACK.test(address) || peerPort === undefined || ourPort === undefined) return null;
  const hex = (port: number): string => port.toString(16).toUpperCase().padStart(4, '0');
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = fs.readFileSync(table, 'latin1');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      if (cols.length < 10) continue;
      const local = cols[1]!.split(':')[1];
      const remote = cols[2]!.split(':')[1];
      if (local === hex(peerPort) && remote === hex(ourPort)) {
        const inode = Number(cols[9]);
        if (inode > 0) return inode;
      }
    }
  }
  return null;
}

function unixPeerInode(own: number): Promise<number | null> {
  return new Promise((resolve) => {
    execFile('ss', ['-xnH'], { timeout: SS_TIMEOUT_MS, maxBuffer: 16 * 1024 * 1024 }, (error, stdout) => {
      if (error) return resolve(null);
      const row = new RegExp(`\\s${own}\\s+\\S+\\s+(\\d+)\\s*$`);
      for (const line of stdout.split('\n')) {
        const match = row.exec(line);
        if (match) return resolve(Number(match[1]));
      }
      resolve(null);
    });
  });
}
