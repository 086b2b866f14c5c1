/**
 * The local-session engine's typed lifecycle events (STYLE 6): what logs, metrics and tests wait on.
 * A leaf: the parts of the engine that emit them (inputs, controls, creation, compression, recovery)
 * import this file, and it imports nothing of theirs, so none of them imports the service.
 */
import type { SchedulerEvents } from './scheduler.js';

export interface LocalEvents extends SchedulerEvents {
  'session:created': { logical_id: string; request_id: string | null };
  'admission:committed': { logical_id: string; admission_id: string; submission_id: string };
  'session:paused': { logical_id: string; failure: string; detail: string };
  'recovery:done': {
    epoch: number;
    unknown: string[];
    /** REC-7: started turns taken over at their last durable step. */
    resumed: string[];
    queued_sessions: number;
    paused: string[];
  };
  /**
   * The session's transcript was replaced or rewritten (compression, reset, undo/rewind, retry);
   * `session_id` is the physical transcript now current. The agent cache drops its copy.
   */
  'transcript:replaced': { logical_id: string; kind: 'compression' | 'reset' | 'rewind'; session_id: string };
  /**
   * SCL-1: this instance took the session's lease and recovered it. Another instance may have run
   * turns of it meanwhile: whatever this one kept of it in memory (the cached agent) is stale.
   */
  /** session.delete removed the session and everything stored for it (issue 31). */
  'session:deleted': { logical_id: string };
  'session:taken': { logical_id: string; unknown: string[]; resumed: string[] };
}
