/**
 * A request's JSON body, read with a cap. Guaranteed: a body over `maxBytes` is `payload_too_large`
 * (413) — refused on its Content-Length before a byte is read, or as soon as the stream passes the
 * cap, so nothing past it is buffered; a body that is not UTF-8, or not JSON, is `bad_request`. Without the cap a
 * framework's own limit cuts the body short and the caller reads "not JSON" instead.
 */
import { AppError } from "@/lib/errors";

export async function readJsonBody(request: Request, maxBytes: number): Promise<unknown> {
  const tooLarge = () => new AppError("payload_too_large", `The body is larger than ${maxBytes} bytes.`);
  const declared = Number(request.headers.get("content-length") ?? Number.NaN);
  if (declared > maxBytes) throw tooLarge();
  const chunks: Uint8Array[] = [];
  let size = 0;
  if (request.body) {
    const reader = request.body.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > maxBytes) {
        await reader.cancel();
        throw tooLarge();
      }
      chunks.push(value);
    }
  }
  let text: string;
  try {
    // TextDecoder drops a leading byte-order mark, as request.json() does. Fatal: bytes that are not
    // UTF-8 are refused, never replaced with U+FFFD (what is stored would differ from what was sent).
    text = new TextDecoder("utf-8", { fatal: true }).decode(Buffer.concat(chunks));
  } catch {
    throw new AppError("bad_request", "The body must be JSON in UTF-8; it holds bytes that are not UTF-8.");
  }
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new AppError("bad_request", "The body must be JSON.");
  }
}
