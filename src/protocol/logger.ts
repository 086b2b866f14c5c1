/** The slice of a pino logger the protocol and surfaces need, so tests can pass a recorder. */
export interface Logger {
  info(details: object, message: string): void;
  warn(details: object, message: string): void;
  error(details: object, message: string): void;
}

export const silentLogger: Logger = { info() {}, warn() {}, error() {} };
