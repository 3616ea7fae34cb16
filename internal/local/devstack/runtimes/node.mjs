// The local stack's Node.js runtime: it calls a handler as AWS's managed Node.js runtime
// does, over the Lambda Runtime API (https://docs.aws.amazon.com/lambda/latest/dg/runtimes-api.html)
// that AWS_LAMBDA_RUNTIME_API names. _HANDLER is "<file>.<export>" under LAMBDA_TASK_ROOT,
// as Lambda's handler setting is. Only what longrun's workers need: one event in, one
// JSON answer or an error out, a context with the request id and the time left. Up to
// AWS_LAMBDA_MAX_CONCURRENCY invocations run at once (Node's own event loop interleaves
// them), as the stack runs its Go functions.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const api = `http://${process.env.AWS_LAMBDA_RUNTIME_API}/2018-06-01/runtime`;
const root = process.env.LAMBDA_TASK_ROOT;
const [file, name] = ((h) => [h.slice(0, h.lastIndexOf('.')), h.slice(h.lastIndexOf('.') + 1)])(process.env._HANDLER);

async function load() {
  for (const ext of ['.js', '.mjs', '.cjs']) {
    const path = join(root, file + ext);
    if (existsSync(path)) {
      const mod = await import(pathToFileURL(path).href);
      const fn = mod[name] ?? mod.default?.[name];
      if (typeof fn !== 'function') throw new Error(`${path} exports no function ${name}`);
      return fn;
    }
  }
  throw new Error(`no ${file}.js, .mjs or .cjs in ${root}`);
}

async function post(path, body, headers = {}) {
  const r = await fetch(`${api}${path}`, { method: 'POST', body: JSON.stringify(body), headers: { 'Content-Type': 'application/json', ...headers } });
  await r.arrayBuffer();
}

function errorOf(err) {
  return { errorType: (err && err.name) || 'Error', errorMessage: String((err && err.message) || err) };
}

async function serve(handler) {
  for (;;) {
    let r;
    try {
      r = await fetch(`${api}/invocation/next`);
    } catch {
      await new Promise((done) => setTimeout(done, 100)); // the edge is not up yet, or restarts
      continue;
    }
    if (!r.ok) {
      await r.arrayBuffer();
      await new Promise((done) => setTimeout(done, 100));
      continue;
    }
    const id = r.headers.get('lambda-runtime-aws-request-id');
    const deadline = Number(r.headers.get('lambda-runtime-deadline-ms')) || Date.now() + 900000;
    const event = await r.json();
    const context = {
      awsRequestId: id,
      functionName: process.env.AWS_LAMBDA_FUNCTION_NAME,
      invokedFunctionArn: r.headers.get('lambda-runtime-invoked-function-arn'),
      getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    };
    try {
      const out = await handler(event, context);
      await post(`/invocation/${id}/response`, out === undefined ? null : out);
    } catch (err) {
      console.error(JSON.stringify({ level: 'ERROR', msg: 'handler failed', ...errorOf(err) }));
      await post(`/invocation/${id}/error`, errorOf(err), { 'Lambda-Runtime-Function-Error-Type': errorOf(err).errorType });
    }
  }
}

let handler;
try {
  handler = await load();
} catch (err) {
  await post('/init/error', errorOf(err)).catch(() => {});
  console.error(JSON.stringify({ level: 'ERROR', msg: 'init failed', ...errorOf(err) }));
  process.exit(1);
}
const n = Math.max(1, Number(process.env.AWS_LAMBDA_MAX_CONCURRENCY) || 1);
await Promise.all(Array.from({ length: n }, () => serve(handler)));
