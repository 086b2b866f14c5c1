/** A V8 .cpuprofile call frame, for tests that write a profile whose samples they know. */
export function profileFrame(functionName: string, url = '', lineNumber = -1) {
  return { functionName, url, lineNumber, columnNumber: 0, scriptId: '0' };
}
