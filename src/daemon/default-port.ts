/**
 * The listener's port when the config names none: fixed, so the dashboard URL is the same after
 * every restart. When another process holds it, the daemon takes a free port and says so. In a
 * file of its own so that `gatehouse --help` can name it without loading the config schema.
 */
export const DEFAULT_PORT = 7423;
