import { describe, expect, it } from "vitest";
import { strictJsonProblem } from "./strict-json";

describe("strictJsonProblem", () => {
  it("accepts ordinary JSON: the same key in different objects, keys that are also values, escapes inside strings", () => {
    expect(strictJsonProblem('{"a":1,"b":[{"a":2},{"a":"a"}],"c":{"a":{"b":"\\"a\\":1,"}}}', 10)).toBeNull();
    expect(strictJsonProblem('[1,"x",{"k":null}]', 10)).toBeNull();
  });

  it("names a key given twice in one object, also when one spelling is escaped", () => {
    expect(strictJsonProblem('{"status":"failed","status":"succeeded"}', 10)).toBe('the key "status" appears twice in one object');
    expect(strictJsonProblem('{"run":{"id":1,"\\u0069d":2}}', 10)).toBe('the key "id" appears twice in one object');
    expect(strictJsonProblem('{"__proto__":{},"__proto__":[]}', 10)).toBe('the key "__proto__" appears twice in one object');
  });

  it("refuses nesting past the limit without recursing (a 100,000-deep array)", () => {
    const deep = "[".repeat(100_000) + "]".repeat(100_000);
    expect(strictJsonProblem(deep, 256)).toBe("nested deeper than 256 levels");
    expect(strictJsonProblem("[".repeat(256) + "]".repeat(256), 256)).toBeNull();
  });
});
