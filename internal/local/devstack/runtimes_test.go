package devstack

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/longrun-dev/longrun/internal/core/optype"
)

// fakeRuntimeAPI hands out events, one per /next, and keeps what the runtime answers.
type fakeRuntimeAPI struct {
	mu      sync.Mutex
	events  []string
	served  int
	answers map[string]string // request id → "response: …" or "error: …"
	done    chan struct{}
}

func (f *fakeRuntimeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimPrefix(r.URL.Path, "/2018-06-01/runtime")
	switch {
	case path == "/invocation/next":
		f.mu.Lock()
		if len(f.events) == 0 {
			f.mu.Unlock()
			<-r.Context().Done() // nothing more: hold the poll, as Lambda does
			return
		}
		f.served++
		id := fmt.Sprintf("req-%d", f.served)
		ev := f.events[0]
		f.events = f.events[1:]
		f.mu.Unlock()
		w.Header().Set("Lambda-Runtime-Aws-Request-Id", id)
		w.Header().Set("Lambda-Runtime-Deadline-Ms", "99999999999999")
		_, _ = io.WriteString(w, ev)
	case strings.HasPrefix(path, "/invocation/"):
		rest := strings.TrimPrefix(path, "/invocation/")
		id, kind, _ := strings.Cut(rest, "/")
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.answers[id] = kind + ": " + string(body)
		if len(f.answers) == 2 {
			close(f.done)
		}
		f.mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
	default:
		w.WriteHeader(http.StatusNotFound)
	}
}

// Each managed runtime calls its handler as AWS's would: the event in, the handler's value
// out as the response, a thrown error or exception out as the invocation's error.
func TestManagedRuntimesCallTheHandler(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	files := map[string]string{
		"js/index.mjs": `export async function handler(event, context) {
  if (event.fail) throw new TypeError('asked to fail');
  return { echo: event.n, left: context.getRemainingTimeInMillis() > 0, id: context.awsRequestId };
}`,
		"py/app.py": `def handler(event, context):
    if event.get("fail"):
        raise ValueError("asked to fail")
    return {"echo": event["n"], "left": context.get_remaining_time_in_millis() > 0, "id": context.aws_request_id}
`,
	}
	for name, body := range files {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for name, w := range map[string]optype.LocalWorker{
		"node":   {Node: "./js/index.handler", Dir: dir},
		"python": {Python: "./py/app.handler", Dir: dir},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			api := &fakeRuntimeAPI{events: []string{`{"n":7}`, `{"fail":true}`}, answers: map[string]string{}, done: make(chan struct{})}
			srv := httptest.NewServer(api)
			defer srv.Close()
			argv, wd := managedRuntime(w)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
			cmd.Dir = wd
			cmd.Env = append(append(os.Environ(), managedRuntimeEnv(w)...), "AWS_LAMBDA_RUNTIME_API="+strings.TrimPrefix(srv.URL, "http://"),
				"AWS_LAMBDA_MAX_CONCURRENCY=1")
			var out strings.Builder
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
			select {
			case <-api.done:
			case <-ctx.Done():
				t.Fatalf("no answers: %v\n%s", api.answers, out.String())
			}
			api.mu.Lock()
			defer api.mu.Unlock()
			var ok, failed string
			for _, a := range api.answers {
				if strings.HasPrefix(a, "response: ") {
					ok = strings.TrimPrefix(a, "response: ")
				} else {
					failed = a
				}
			}
			var got struct {
				Echo int    `json:"echo"`
				Left bool   `json:"left"`
				ID   string `json:"id"`
			}
			if err := json.Unmarshal([]byte(ok), &got); err != nil || got.Echo != 7 || !got.Left || got.ID == "" {
				t.Fatalf("response %q: %+v %v", ok, got, err)
			}
			if !strings.HasPrefix(failed, "error: ") || !strings.Contains(failed, "asked to fail") || !strings.Contains(failed, `"errorType"`) {
				t.Fatalf("error %q", failed)
			}
		})
	}
}
