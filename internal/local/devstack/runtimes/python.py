# The local stack's Python runtime: it calls a handler as AWS's managed Python runtime does,
# over the Lambda Runtime API (https://docs.aws.amazon.com/lambda/latest/dg/runtimes-api.html)
# that AWS_LAMBDA_RUNTIME_API names. _HANDLER is "<module>.<function>" under
# LAMBDA_TASK_ROOT, as Lambda's handler setting is. Only what longrun's workers need: one
# event in, one JSON answer or an error out, a context with the request id and the time
# left. Up to AWS_LAMBDA_MAX_CONCURRENCY invocations run at once, one thread each, as the
# stack runs its Go functions. The standard library only.
import importlib
import json
import os
import sys
import threading
import time
import traceback
import urllib.error
import urllib.request

API = "http://%s/2018-06-01/runtime" % os.environ["AWS_LAMBDA_RUNTIME_API"]


class Context:
    def __init__(self, request_id, deadline_ms, arn):
        self.aws_request_id = request_id
        self.function_name = os.environ.get("AWS_LAMBDA_FUNCTION_NAME", "")
        self.invoked_function_arn = arn
        self._deadline_ms = deadline_ms

    def get_remaining_time_in_millis(self):
        return max(0, int(self._deadline_ms - time.time() * 1000))


def post(path, body, headers=None):
    req = urllib.request.Request(API + path, data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json", **(headers or {})})
    with urllib.request.urlopen(req) as r:
        r.read()


def error_of(exc):
    return {"errorType": type(exc).__name__, "errorMessage": str(exc)}


def load():
    module, _, name = os.environ["_HANDLER"].rpartition(".")
    sys.path.insert(0, os.environ["LAMBDA_TASK_ROOT"])
    fn = getattr(importlib.import_module(module), name, None)
    if not callable(fn):
        raise AttributeError("module %s has no function %s" % (module, name))
    return fn


def serve(handler):
    while True:
        try:
            with urllib.request.urlopen(API + "/invocation/next") as r:
                request_id = r.headers["Lambda-Runtime-Aws-Request-Id"]
                deadline = float(r.headers.get("Lambda-Runtime-Deadline-Ms") or time.time() * 1000 + 900000)
                arn = r.headers.get("Lambda-Runtime-Invoked-Function-Arn", "")
                event = json.loads(r.read() or b"null")
        except (urllib.error.URLError, ConnectionError, ValueError):
            time.sleep(0.1)  # the edge is not up yet, or restarts
            continue
        try:
            out = handler(event, Context(request_id, deadline, arn))
            post("/invocation/%s/response" % request_id, out)
        except Exception as exc:  # the function failed: Lambda reports a function error
            print(json.dumps({"level": "ERROR", "msg": "handler failed", **error_of(exc),
                              "trace": traceback.format_exc(limit=5)}), file=sys.stderr, flush=True)
            post("/invocation/%s/error" % request_id, error_of(exc),
                 {"Lambda-Runtime-Function-Error-Type": type(exc).__name__})


def main():
    try:
        handler = load()
    except Exception as exc:
        print(json.dumps({"level": "ERROR", "msg": "init failed", **error_of(exc)}), file=sys.stderr, flush=True)
        try:
            post("/init/error", error_of(exc))
        except Exception:
            pass
        sys.exit(1)
    n = max(1, int(os.environ.get("AWS_LAMBDA_MAX_CONCURRENCY") or 1))
    threads = [threading.Thread(target=serve, args=(handler,), daemon=True) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


main()
