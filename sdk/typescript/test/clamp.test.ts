// Text is cut as the Go package cuts it (api/workerclamp_test.go holds Go's clamp to longrun's
// runes.Cut; internal/core/runes/runes_test.go has these cases): counted in Unicode code
// points, never through a character, its first limit-1 characters and "…".

import assert from "node:assert/strict";
import { test } from "node:test";

import { Fail, MaxDetailChars, MaxMessageChars, MaxTitleChars, ResultLost, Succeed } from "../src/index.js";
import { charCount, clamp } from "../src/report.js";

test("clamp cuts as runes.Cut does", () => {
  const cases: [string, string, number, string][] = [
    ["short enough", "hello", 5, "hello"],
    ["cut", "hello world", 6, "hello…"],
    ["counted in characters, not bytes", "ééééé", 5, "ééééé"],
    ["a two-byte character is never split", "éééééé", 3, "éé…"],
    ["a four-byte character is never split", "😀😀😀", 2, "😀…"],
    ["a limit of one", "abc", 1, "…"],
    ["a limit below one", "abc", 0, ""],
    // Go's invalid UTF-8 byte is JS's lone surrogate: one character, U+FFFD once cut.
    ["a lone surrogate counts as one and becomes U+FFFD", "a\ud800bcd", 3, "a\ufffd…"],
    ["a lone surrogate is kept when nothing is cut", "a\udc00", 2, "a\udc00"],
  ];
  for (const [name, s, limit, want] of cases) assert.equal(clamp(s, limit), want, name);
});

test("an astral character is one character, not two UTF-16 units", () => {
  const s = "😀".repeat(2100); // 4200 UTF-16 units, 8400 bytes of UTF-8
  const cut = clamp(s, MaxDetailChars);
  assert.equal(charCount(cut), MaxDetailChars);
  assert.equal(cut, "😀".repeat(MaxDetailChars - 1) + "…");
  assert.equal(clamp("😀".repeat(200), MaxTitleChars), "😀".repeat(200), "200 emoji are 400 units but 200 characters: not cut");
});

// Whatever is cut, the result is well-formed and of at most limit characters (runes_test.go's
// TestCutIsValidAndWithinItsLimit).
test("a cut result is well formed and within its limit", () => {
  const s = "aé😀\ud800".repeat(50);
  for (let limit = 1; limit <= charCount(s) + 1; limit++) {
    const got = clamp(s, limit);
    const n = charCount(got);
    assert.ok(n <= limit && (n === limit || got === s), `limit ${limit}: ${n} characters`);
    if (got !== s) assert.ok(!/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(got), `limit ${limit}: a lone surrogate`);
  }
});

// The Go package's ExampleFail and TestOverLongTextIsCutNotRefused: over-long text is cut,
// never refused.
test("Fail, ResultLost and withProgress cut their text", () => {
  const detail = "the provisioner refused: " + "template too large; ".repeat(200);
  const rep = Fail("template_refused", "The provisioner refused the template.", detail);
  const chars = [...rep.problem!.detail!];
  assert.equal(chars.length, 2000);
  assert.equal(chars[chars.length - 1], "…");

  const title = Fail("x", "t".repeat(500)).problem!.title;
  assert.equal(charCount(title), MaxTitleChars);
  assert.ok(title.endsWith("…"));

  assert.equal(charCount(ResultLost("é".repeat(3000)).problem!.detail!), MaxDetailChars);
  const message = Succeed().withProgress({ message: "😀".repeat(300) }).progress!.message!;
  assert.equal(charCount(message), MaxMessageChars);
  assert.doesNotThrow(() => JSON.stringify(Succeed().withProgress({ message: "😀".repeat(300) })));
});
