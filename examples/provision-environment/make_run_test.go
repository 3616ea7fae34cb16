package provision_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/longrun-dev/longrun/local"

	"example.com/provision-environment/provisioner"
)

// `make run TYPES=examples/provision-environment/longrun.types.yaml`, in the longrun checkout
// this module uses, serves provision.environment: the stack starts that way, with a fake
// provisioner the worker is pointed at, and an operation driven over HTTP ends succeeded
// with its URL. Everything takes free ports (RUNFLAGS' -api, -edge and -worker-env), so the
// test runs beside a developer's `make run` or another checkout's tests.
func TestMakeRunServesTheTypes(t *testing.T) {
	t.Parallel() // its stack takes free ports, beside the other test's
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/longrun-dev/longrun").Output()
	if err != nil {
		t.Fatal(err)
	}
	root := strings.TrimSpace(string(out))
	types, _ := filepath.Abs("longrun.types.yaml")

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	prov := &http.Server{Handler: provisioner.Handler(&provisioner.Fake{ReadyAfter: 2})}
	go prov.Serve(ln)
	defer prov.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var logs syncBuffer
	cmd := exec.Command("make", "-C", root, "run", "TYPES="+types,
		"RUNFLAGS=-quiet -api 127.0.0.1:0 -edge 127.0.0.1:0 -worker-env PROVISIONER_URL=http://"+ln.Addr().String())
	cmd.Stdout, cmd.Stderr = &logs, &logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGINT) // Ctrl-C, as a developer stops it
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		if t.Failed() {
			t.Logf("make run:\n%s", tail(logs.String(), 40))
		}
	}()

	// make run prints where the API is: "  API        http://127.0.0.1:40123/v1".
	var api string
	for api == "" {
		if m := apiLine.FindStringSubmatch(logs.String()); m != nil {
			api = m[1]
			break
		}
		if ctx.Err() != nil {
			t.Fatal("make run never said where its API is")
		}
		time.Sleep(500 * time.Millisecond)
	}
	get := func(path string) (int, map[string]any) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, api+path, nil)
		req.Header.Set("Authorization", "Bearer "+local.TokenAlice)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, nil
		}
		defer resp.Body.Close()
		var m map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&m)
		return resp.StatusCode, m
	}
	for {
		if status, m := get("/v1/operation-types/provision.environment"); status == 200 {
			if m["name"] != "provision.environment" {
				t.Fatalf("%v", m)
			}
			break
		}
		if ctx.Err() != nil {
			t.Fatal("make run never served the API")
		}
		time.Sleep(500 * time.Millisecond)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, api+"/v1/operations",
		strings.NewReader(`{"type":"provision.environment","input":{"project":"shop","environment":"qa-make","template":"small"}}`))
	req.Header.Set("Authorization", "Bearer "+local.TokenAlice)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", "make-run-"+time.Now().Format("150405.000"))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var created map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&created)
	resp.Body.Close()
	id, _ := created["operationId"].(string)
	if resp.StatusCode != http.StatusAccepted || id == "" {
		t.Fatalf("%d %v", resp.StatusCode, created)
	}
	for {
		_, op := get("/v1/operations/" + id)
		if op["terminal"] == true {
			result, _ := op["result"].(map[string]any)
			if op["state"] != "succeeded" || result["url"] != "https://qa-make.shop.example.test" {
				t.Fatalf("%v", op)
			}
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("never ended: %v", op)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

var apiLine = regexp.MustCompile(`(?m)^\s*API\s+(http://\S+)/v1\s*$`)

// syncBuffer is a bytes.Buffer that the command writes while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
