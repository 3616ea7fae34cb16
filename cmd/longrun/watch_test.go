package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/longrun-dev/longrun/internal/testkit/clocktest"
)

// steps is a wait's script: admitted, dispatched, two running steps (the third poll reads
// the second again), succeeded.
var steps = []rep{
	{State: "dispatched", Version: 2, RetryAfter: 1},
	{State: "running", Version: 3, Progress: `{"completedSteps":1,"totalSteps":3,"message":"warming up"}`, RetryAfter: 1},
	{State: "running", Version: 4, Progress: `{"completedSteps":2,"totalSteps":3,"percent":66.7,"message":"copying files"}`, RetryAfter: 2},
	{State: "running", Version: 4, Progress: `{"completedSteps":2,"totalSteps":3,"percent":66.7,"message":"copying files"}`, RetryAfter: 2},
	{State: "succeeded", Version: 6, Progress: `{"completedSteps":3,"totalSteps":3,"percent":100,"message":"done"}`, Result: `{"steps":3}`},
}

// With stderr on a terminal the wait keeps one live line: a bar with the percent, the state,
// the steps, the worker's message, the time elapsed and the next poll; at the end it gives
// way to a plain line. stdout (piped) gets the operation as JSON.
func TestLiveProgressOnATerminal(t *testing.T) {
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer ptmx.Close()
	if err := pty.Setsize(ptmx, &pty.Winsize{Rows: 24, Cols: 150}); err != nil {
		t.Fatal(err)
	}
	screen := make(chan string)
	go func() {
		b, _ := io.ReadAll(ptmx) // until the terminal's other end is closed
		screen <- string(b)
	}()
	h := &harness{api: newFake(t, steps...), stderr: tty}
	r := h.run(t, "create", "-type", "demo.task", "-input", `{"target":"build-42","steps":3}`, "-wait")
	_ = tty.Close()
	out := <-screen
	t.Logf("the terminal showed %q", out)
	if r.code != 0 || !strings.Contains(r.stdout, `"state": "succeeded"`) {
		t.Fatalf("%+v", r)
	}
	// Redraws start with \r and end by erasing the rest of the line (ANSI).
	frames := strings.Split(out, "\r")
	live := regexp.MustCompile(`^ +66% \|█+ *\| +` + opID + ` · running · 2/3 steps · "copying files" · 3s · next poll in 2s +\x1b\[0K$`)
	found := false
	for _, f := range frames {
		if live.MatchString(f) {
			found = true
		}
	}
	if !found {
		t.Errorf("no frame showing the running step, its percent, message, elapsed time and next poll: %q", frames)
	}
	if !strings.Contains(out, opID+` · accepted · 0s · next poll in 1s`) || !strings.Contains(out, `1/3 steps · "warming up"`) {
		t.Errorf("the first changes were not shown: %q", out)
	}
	if !strings.Contains(out, "\x1b[2K\r"+opID+` succeeded, 3/3 steps, 100%, "done" (7s elapsed)`) {
		t.Errorf("the live line did not give way to the final plain line: %q", out)
	}
}

// With stderr piped the wait writes one plain line per change, without terminal codes.
func TestPlainProgressWhenPiped(t *testing.T) {
	r := cliRun(t, newFake(t, steps...), "wait", opID, "-o", "id")
	want := opID + ` dispatched (0s elapsed, next poll in 1s)
` + opID + ` running, 1/3 steps, "warming up" (1s elapsed, next poll in 1s)
` + opID + ` running, 2/3 steps, 66.7%, "copying files" (2s elapsed, next poll in 2s)
` + opID + ` succeeded, 3/3 steps, 100%, "done" (6s elapsed)
`
	if r.code != 0 || r.stderr != want || r.stdout != opID+"\n" {
		t.Fatalf("exit %d, stdout %q, stderr:\n%s\nwant:\n%s", r.code, r.stdout, r.stderr, want)
	}
}

// blockingClock waits until the context ends, telling the test each time a wait begins.
type blockingClock struct {
	*clocktest.Clock
	waiting chan time.Duration
}

func (c *blockingClock) Sleep(ctx context.Context, d time.Duration) error {
	c.waiting <- d
	<-ctx.Done()
	return ctx.Err()
}

// Ctrl-C while waiting stops the waiting, not the operation: nothing is cancelled, the
// operation as last seen goes to stdout, stderr says how to resume, and the exit status is
// 130.
func TestInterruptStopsWaitingNotTheOperation(t *testing.T) {
	for _, args := range [][]string{
		{"get", "-watch", opID},
		{"wait", opID},
		{"create", "-type", "demo.task", "-wait"},
	} {
		t.Run(args[0], func(t *testing.T) {
			api := newFake(t, rep{State: "running", Version: 3, Progress: `{"completedSteps":1,"totalSteps":3}`, RetryAfter: 5})
			signals := make(chan os.Signal, 1)
			clock := &blockingClock{clocktest.New(t0), make(chan time.Duration, 1)}
			h := &harness{api: api, clock: clock, interrupts: func() (<-chan os.Signal, func()) { return signals, func() {} }}
			done := make(chan result)
			go func() { done <- h.run(t, append(args, "-o", "id")...) }()
			<-clock.waiting // mid-wait
			signals <- os.Interrupt
			r := <-done
			if r.code != 130 || r.stdout != opID+"\n" || !strings.Contains(r.stderr, "longrun: resume with: longrun get -watch "+opID) ||
				!strings.Contains(r.stderr, "it was not canceled") {
				t.Fatalf("%+v", r)
			}
			for _, s := range api.sent() {
				if strings.HasSuffix(s.path, "/cancel") {
					t.Fatalf("the CLI cancelled the operation: %s %s", s.method, s.path)
				}
			}
		})
	}
}

// The same with the built command and a real SIGINT, as a terminal's Ctrl-C sends it.
func TestSIGINTStopsWaitingNotTheOperation(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "longrun")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	api := newFake(t, rep{State: "running", Version: 3, RetryAfter: 3600})
	api.seen = make(chan string, 16)
	srv := httptest.NewServer(api)
	defer srv.Close()
	cmd := exec.Command(bin, "get", "-watch", opID, "-o", "id")
	cmd.Env = []string{"LONGRUN_API=" + srv.URL, "LONGRUN_TOKEN=alice-dev-token", "HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH")}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case <-api.seen: // the first read: it now waits the hour Retry-After asks for
	case err := <-exited:
		t.Fatalf("exited before reading the operation: %v\n%s", err, stderr.String())
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	err := <-exited
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) || exitErr.ExitCode() != 130 {
		t.Fatalf("exit %v; stderr:\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "longrun get -watch "+opID) {
		t.Fatalf("stderr does not say how to resume:\n%s", stderr.String())
	}
	for _, s := range api.sent() {
		if s.method != "GET" {
			t.Fatalf("the CLI sent %s %s", s.method, s.path)
		}
	}
}
