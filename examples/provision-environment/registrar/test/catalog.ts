// What the registrar's tests share: a fake service catalog on a free port of this machine,
// and step requests as longrun's recorder sends them.

import { createServer } from "node:http";
import type { AddressInfo } from "node:net";

import { Protocol, type StepRequest } from "@longrun/worker";

export interface FakeCatalog {
  /** The catalog's base URL, as CATALOG_URL gives it. */
  url: string;
  /** Every request, in order: method, path and body. */
  requests: Array<{ method: string; path: string; contentType: string | undefined; body: unknown }>;
  /** The entries it holds, by path. */
  entries: Map<string, unknown>;
  close(): Promise<void>;
}

/**
 * A catalog that answers its requests with statuses, one each in order, the last one for
 * every request after; it keeps an entry only when it answers 2xx.
 */
export async function fakeCatalog(statuses: number[]): Promise<FakeCatalog> {
  const requests: FakeCatalog["requests"] = [];
  const entries = new Map<string, unknown>();
  const server = createServer((req, res) => {
    let raw = "";
    req.setEncoding("utf8");
    req.on("data", (chunk: string) => (raw += chunk));
    req.on("end", () => {
      const body: unknown = raw === "" ? undefined : JSON.parse(raw);
      requests.push({ method: req.method ?? "", path: req.url ?? "", contentType: req.headers["content-type"], body });
      const status = statuses[Math.min(requests.length, statuses.length) - 1] ?? 200;
      if (status < 300) entries.set(req.url ?? "", body);
      res.writeHead(status, { "content-type": "application/json" });
      res.end(JSON.stringify(status < 300 ? { ok: true } : { error: `status ${status}` }));
    });
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/catalog`,
    requests,
    entries,
    close: () => new Promise<void>((done) => server.close(() => done())),
  };
}

/** A URL on which nothing listens: a port the system gave and took back. */
export async function closedURL(): Promise<string> {
  const c = await fakeCatalog([200]);
  await c.close();
  return c.url;
}

/** Step n of a register.environment operation, carrying state. */
export function request(step: number, input: unknown, state?: unknown): StepRequest {
  return {
    protocol: Protocol, operationId: "op_01JDY3Q4W5E6R7T8Y9V0A1B2C3", type: "register.environment", version: 1, input,
    step, maxSteps: 10, deadline: "2026-12-01T12:00:00.000Z", stepTimeoutSeconds: 30,
    correlationId: "4bf92f3577b34da6a3ce929d0e0e4736", ...(state === undefined ? {} : { state }),
  };
}

export const shop = { project: "shop", environment: "qa-1", url: "https://qa-1.shop.example.test" };
