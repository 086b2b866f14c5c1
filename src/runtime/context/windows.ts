/**
 * The context window of a model when the configuration does not say (`model.context_window`): a
 * short table of well-known model families, else a conservative default. A provider's "context too
 * long" answer still triggers a compression and one retry, so a wrong guess costs a retry, not a
 * failed conversation.
 */
export const DEFAULT_CONTEXT_WINDOW = 128_000;

/** Longest prefix wins. */
const KNOWN_WINDOWS: readonly [prefix: string, tokens: number][] = [
  ['gpt-4.1', 1_047_576],
  ['gpt-4o', 128_000],
  ['gpt-4-turbo', 128_000],
  ['gpt-4', 8_192],
  ['gpt-3.5-turbo', 16_385],
  ['gpt-5', 400_000],
  ['o1', 200_000],
  ['o3', 200_000],
  ['o4', 200_000],
  ['claude', 200_000],
  ['gemini', 1_000_000],
];

export function defaultContextWindow(model: string): number {
  const name = model.toLowerCase().split('/').at(-1) ?? '';
  let best: [string, number] | null = null;
  for (const entry of KNOWN_WINDOWS) {
    if (name.startsWith(entry[0]) && (best === null || entry[0].length > best[0].length)) best = entry;
  }
  return best?.[1] ?? DEFAULT_CONTEXT_WINDOW;
}
