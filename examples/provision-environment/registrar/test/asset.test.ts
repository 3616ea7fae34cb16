// The Lambda asset the example's CDK app deploys (REGISTRAR_ASSET: the folder `make
// registrar` writes) stands on its own. Copied where nothing else is around it, as Lambda
// unpacks it into /var/task, its worker.js loads as the Node.js runtime loads the handler
// worker.handler (an ES module, as its package.json says, with @longrun/worker in its own
// node_modules), and answers a step.

import assert from "node:assert/strict";
import { cp, mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { pathToFileURL } from "node:url";

import { validateReport } from "@longrun/worker";

import { fakeCatalog, request, shop } from "./catalog.js";

test("the asset holds the handler and what it imports, and nothing else", async (t) => {
  const asset = process.env.REGISTRAR_ASSET;
  assert.ok(asset, "REGISTRAR_ASSET names the asset's folder (make registrar-test sets it)");
  assert.deepEqual((await readdir(asset)).sort(), ["node_modules", "package.json", "worker.js"]);

  const task = await mkdtemp(join(tmpdir(), "registrar-task-"));
  t.after(() => rm(task, { recursive: true, force: true }));
  await cp(asset, task, { recursive: true });
  const catalog = await fakeCatalog([200]);
  t.after(() => catalog.close());
  process.env.CATALOG_URL = catalog.url; // as the CDK app sets it, before the module loads

  const mod = (await import(pathToFileURL(join(task, "worker.js")).href)) as { handler: (event: unknown, context: unknown) => Promise<unknown> };
  const out = await mod.handler(request(1, shop), { awsRequestId: "req-1", getRemainingTimeInMillis: () => 30_000 });
  assert.ok(validateReport(out).valid, JSON.stringify(out));
  assert.deepEqual(out, { status: "succeeded", result: { entry: "shop/qa-1", url: "https://qa-1.shop.example.test" } });
  assert.equal(catalog.entries.size, 1);
});
