// The README's example is the example the tests run, word for word.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

const pkg = new URL("../../", import.meta.url);

test("the README shows examples/export.ts as it is", () => {
  const readme = readFileSync(new URL("README.md", pkg), "utf8");
  const example = readFileSync(new URL("examples/export.ts", pkg), "utf8");
  assert.ok(readme.includes("```ts\n" + example + "```\n"), "README.md's example is not examples/export.ts: copy it again");
});
