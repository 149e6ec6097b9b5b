/**
 * What JSON.parse lets through but a document meant to be read by others must not contain: the
 * same key twice in one object (JSON.parse keeps the last, other readers may show the first) and
 * nesting deep enough to overflow a recursive reader's stack.
 *
 * `strictJsonProblem` scans text that JSON.parse already accepted, in one pass without recursion,
 * and names the first problem (keys compared after unescaping, so "a" and "\u0061" are the same
 * key), or returns null. It never quotes more than 80 characters of a key.
 */

export function strictJsonProblem(text: string, maxDepth: number): string | null {
  // One frame per open object or array: the keys seen so far (objects) or null (arrays).
  const frames: (Set<string> | null)[] = [];
  let expectKey = false;
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (c === '"') {
      let end = i + 1;
      while (text[end] !== '"') end += text[end] === "\\" ? 2 : 1;
      const keys = frames.at(-1);
      if (expectKey && keys) {
        const key = JSON.parse(text.slice(i, end + 1)) as string;
        if (keys.has(key)) return `the key ${JSON.stringify(key.slice(0, 80))} appears twice in one object`;
        keys.add(key);
        expectKey = false;
      }
      i = end + 1;
      continue;
    }
    if (c === "{" || c === "[") {
      frames.push(c === "{" ? new Set() : null);
      if (frames.length > maxDepth) return `nested deeper than ${maxDepth} levels`;
      expectKey = c === "{";
    } else if (c === "}" || c === "]") {
      frames.pop();
    } else if (c === ",") {
      expectKey = frames.at(-1) !== null && frames.length > 0;
    }
    i++;
  }
  return null;
}
