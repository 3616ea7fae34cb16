// The registrar: the worker of register.environment, in TypeScript on @longrun/worker,
// deployed beside the Go worker of provision.environment. Its step puts a provisioned
// environment into the team's service catalog, PUT <CATALOG_URL>/environments/<project>/<environment>.
// A PUT of the same entry changes nothing, so a step longrun delivers twice registers the
// environment once.

import { Continue, Fail, Succeed, longrunHandler, type Step, type StepContext } from "@longrun/worker";

export interface RegisterInput {
  project: string;
  environment: string;
  url: string;
}

/** The state a step that could not reach the catalog hands the next one. */
interface RegisterState {
  tries: number;
}

/** How many steps in a row try a catalog that did not take the request before the operation fails. */
export const maxTries = 4;

/** Reads the operation's input; what it throws makes a failed report (invalid_input). */
export function parseInput(raw: unknown): RegisterInput {
  const { project, environment, url } = (raw ?? {}) as Record<string, unknown>;
  if (typeof project !== "string" || typeof environment !== "string" || typeof url !== "string") {
    throw new TypeError("input needs the strings project, environment and url");
  }
  return { project, environment, url };
}

// The errors of a connection that could not be made: the request never left, so the catalog
// did nothing (docs/worker-protocol.md, "Never sent, or may have been sent").
const notConnected = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ENETUNREACH", "UND_ERR_CONNECT_TIMEOUT"]);

/** The connection error err is or holds, or undefined when the request may have been sent. */
function neverSent(err: unknown, depth = 0): string | undefined {
  if (typeof err !== "object" || err === null || depth > 10) return undefined;
  const code = (err as { code?: unknown }).code;
  if (typeof code === "string" && notConnected.has(code)) return code;
  // fetch fails with a TypeError whose cause is the socket's error; when it tried several
  // addresses, that is an AggregateError of one error per address.
  if (err instanceof AggregateError && err.errors.length > 0) {
    const codes = err.errors.map((e: unknown) => neverSent(e, depth + 1));
    return codes.every((c) => c !== undefined) ? codes[0] : undefined;
  }
  return "cause" in err ? neverSent((err as { cause: unknown }).cause, depth + 1) : undefined;
}

export function register(catalogUrl: string) {
  // A base without its trailing slash would lose its last segment to the relative path.
  const base = catalogUrl.endsWith("/") ? catalogUrl : `${catalogUrl}/`;
  return async (step: Step<RegisterInput>, { signal }: StepContext) => {
    if (catalogUrl === "") return Fail("catalog_not_configured", "The registrar has no CATALOG_URL.");
    const { project, environment, url } = step.input;
    const tries = (step.state<RegisterState>()?.tries ?? 0) + 1;
    // Nothing reached the catalog: the next step tries again, 2, 4 and 8 s later, with no
    // Lambda waiting meanwhile; then the operation fails, honestly, as nothing happened.
    const again = (why: string) =>
      tries < maxTries
        ? Continue({ tries } satisfies RegisterState).after(2 ** tries).withProgress({ message: `The catalog ${why}; trying again.` })
        : Fail("catalog_unreachable", "The service catalog could not be reached.", `${tries} tries; the last: the catalog ${why}.`);
    let res: Response;
    try {
      res = await fetch(new URL(`environments/${encodeURIComponent(project)}/${encodeURIComponent(environment)}`, base), {
        method: "PUT",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ url, registeredBy: step.operationId }),
        signal,
      });
    } catch (e) {
      const code = neverSent(e);
      if (code !== undefined) return again(`could not be reached (${code})`);
      throw e; // the request may have reached the catalog: outcome unknown
    }
    const text = await res.text();
    if (res.ok) return Succeed({ entry: `${project}/${environment}`, url });
    // 429 and 503 say the catalog took nothing: not now.
    if (res.status === 429 || res.status === 503) return again(`answered ${res.status}`);
    if (res.status >= 400 && res.status < 500) {
      return Fail("catalog_refused", "The service catalog refused the environment.", `HTTP ${res.status}: ${text}`);
    }
    throw new Error(`the catalog answered HTTP ${res.status}: the entry may have been written`);
  };
}

// The Lambda function's handler (runtime nodejs20.x or later, handler worker.handler); the
// CDK app sets CATALOG_URL.
export const handler = longrunHandler(register(process.env.CATALOG_URL ?? ""), { parseInput });
