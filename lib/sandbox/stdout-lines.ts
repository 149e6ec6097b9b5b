/**
 * Splits a sandbox's stdout into lines (one frame per line) under its byte caps.
 *
 * Guarantees: never holds more than maxFrameBytes of one line; counts every byte the child
 * writes; at the first overflow (stdout above maxStdoutBytes, or one line above maxFrameBytes)
 * drops what it holds, reports once and ignores the rest of the stream. Lines are handed on in
 * order with their byte length, without the newline.
 * Refuses nothing else: the lines are untrusted text, parsed and validated by the caller.
 */
import type { Readable } from "node:stream";
import type { SandboxLimits } from "./types";

export function readLines(
  stream: Readable,
  limits: Pick<SandboxLimits, "maxFrameBytes" | "maxStdoutBytes">,
  onLine: (line: string, bytes: number) => void,
  onOverflow: (message: string) => void,
): void {
  const { maxFrameBytes, maxStdoutBytes } = limits;
  let stdoutBytes = 0;
  let parts: Buffer[] = [];
  let partBytes = 0;
  let stopped = false;
  const overflow = (message: string) => {
    stopped = true;
    parts = [];
    onOverflow(message);
  };
  stream.on("data", (chunk: Buffer) => {
    if (stopped) return;
    stdoutBytes += chunk.length;
    if (stdoutBytes > maxStdoutBytes) return overflow(`the script wrote more than ${maxStdoutBytes} bytes to stdout`);
    let start = 0;
    for (let nl = chunk.indexOf(10); nl !== -1; nl = chunk.indexOf(10, start)) {
      const piece = chunk.subarray(start, nl);
      const bytes = partBytes + piece.length;
      if (bytes > maxFrameBytes) return overflow(`a frame exceeded ${maxFrameBytes} bytes`);
      const line = partBytes === 0 ? piece.toString("utf8") : Buffer.concat([...parts, piece]).toString("utf8");
      parts = [];
      partBytes = 0;
      start = nl + 1;
      onLine(line, bytes);
    }
    if (start < chunk.length) {
      parts.push(chunk.subarray(start));
      partBytes += chunk.length - start;
      if (partBytes > maxFrameBytes) return overflow(`a frame exceeded ${maxFrameBytes} bytes`);
    }
  });
}
