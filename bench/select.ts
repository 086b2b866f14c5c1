/**
 * Which benches `npm run bench` runs, from its arguments (pure, so a test can hold it to the docs):
 * names select files by prefix; none selects every bench except those marked `onlyWhenNamed` (the
 * soak); `--quick` asks for fewer samples; `--minutes N` sets a soak's length.
 */
export interface BenchArgs {
  quick: boolean;
  minutes: number | undefined;
  only: string[];
}

export function parseBenchArgs(args: readonly string[]): BenchArgs {
  const minutesAt = args.indexOf('--minutes');
  const minutes = minutesAt >= 0 ? Number(args[minutesAt + 1]) : undefined;
  if (minutes !== undefined && !(minutes > 0)) {
    throw new Error('--minutes needs a positive number of minutes, e.g. --minutes 30');
  }
  return {
    quick: args.includes('--quick'),
    minutes,
    only: args.filter((a, i) => !a.startsWith('--') && (minutesAt < 0 || i !== minutesAt + 1)),
  };
}

/** Whether the bench in `file` runs; `onlyWhenNamed` is read from the bench once its file is loaded. */
export function runsBench(file: string, only: readonly string[], onlyWhenNamed = false): boolean {
  const named = only.some((o) => file.startsWith(o));
  return named || (only.length === 0 && !onlyWhenNamed);
}
