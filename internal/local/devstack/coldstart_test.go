package devstack

import (
	"context"
	"fmt"
	"github.com/longrun-dev/longrun/internal/core/optype"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/longrun-dev/longrun/internal/local/ddblocal"
)

// BenchmarkColdStart measures each function binary's init: from process start to its first
// Runtime API poll (GET …/invocation/next), against a stub Runtime API. This is the part of
// a Lambda cold start the binary controls (configuration, AWS SDK setup).
func BenchmarkColdStart(b *testing.B) {
	root, err := ddblocal.ModuleRoot()
	if err != nil {
		b.Fatal(err)
	}
	fns, err := functions(optype.BuiltinFile(), true, nil)
	if err != nil {
		b.Fatal(err)
	}
	var names []string
	for _, f := range fns {
		names = append(names, f.name)
	}
	sort.Strings(names)
	bin := b.TempDir()
	if err := build(context.Background(), root, bin, fns, io.Discard); err != nil {
		b.Fatal(err)
	}
	for _, name := range names {
		b.Run(name, func(b *testing.B) {
			var total time.Duration
			for i := 0; i < b.N; i++ {
				total += coldStart(b, filepath.Join(bin, name))
			}
			b.ReportMetric(float64(total.Microseconds())/float64(b.N)/1000, "init-ms")
		})
	}
}

func coldStart(b *testing.B, path string) time.Duration {
	polled := make(chan time.Time, 1)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case polled <- time.Now():
		default:
		}
		<-r.Context().Done() // hold the poll: no invocation
	})}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	cmd := exec.Command(path)
	cmd.Env = append(os.Environ(), "AWS_LAMBDA_RUNTIME_API="+ln.Addr().String(), "AWS_REGION=us-east-1",
		"AWS_ACCESS_KEY_ID=x", "AWS_SECRET_ACCESS_KEY=x", "LONGRUN_TABLE=t", "LONGRUN_EVENT_BUS=b",
		`LONGRUN_STATE_MACHINES={"demo-task":"arn:aws:states:us-east-1:000000000000:stateMachine:x"}`,
		"LONGRUN_DEAD_LETTER_QUEUE_URL=http://127.0.0.1/q")
	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	select {
	case at := <-polled:
		return at.Sub(start)
	case <-time.After(10 * time.Second):
		b.Fatal(fmt.Sprintf("%s never polled the Runtime API", path))
	}
	return 0
}
