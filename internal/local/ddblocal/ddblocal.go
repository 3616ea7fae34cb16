// Package ddblocal runs AWS's DynamoDB Local (from the git-ignored cache the Makefile fills)
// as a child process, for tests, benchmarks and the local stack.
package ddblocal

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// CacheDir is where `make ddb-install` unpacks DynamoDB Local, relative to the module root.
const CacheDir = ".cache/dynamodb-local"

// EndpointEnv names the variable that points tests and the suite's processes at a running
// DynamoDB Local (cmd/ddblocal sets it for the command it runs).
const EndpointEnv = "LONGRUN_DYNAMODB_ENDPOINT"

// MaxConns is how many requests a client should have in flight to DynamoDB Local at once;
// the rest wait in the client for a connection. DynamoDB Local serves a table's writes one at
// a time behind a lock it waits for at most 10 s (LocalDBAccess.LOCK_WAIT_TIMEOUT_IN_SECONDS,
// a constant), then answers 500 "This action timed out because it too long waiting for a
// lock. This request will succeed in actual DynamoDB API". With 32 callers on a machine
// whose cores are busy (make test beside other work) its queue outgrew that, and racers got
// 503 (issue 21). A queue in the client has no timeout, and the emulator serializes the
// writes anyway, so the bound costs no throughput.
const MaxConns = 4

// Server is a running DynamoDB Local.
type Server struct {
	Endpoint string
	cmd      *exec.Cmd
	done     chan struct{}
	output   *syncBuffer
}

// Options configure Start.
type Options struct {
	Dir  string // folder holding DynamoDBLocal.jar and DynamoDBLocal_lib; default: the module's cache
	Port int    // 0 picks a free port
	Host string // the only address it listens on, and that clients connect to; default 127.0.0.1
}

// loopback is the launcher that makes DynamoDB Local listen on Options.Host alone
// (Loopback.java says why and how). It is written into a temporary folder for each start
// and run with Java's source-file mode, which needs a JDK: a JRE has no compiler.
//
//go:embed Loopback.java
var loopback []byte

// Start launches DynamoDB Local in memory, listening on Options.Host only (by default the
// loopback address, so the table is not reachable from the network), and waits until it
// answers. It fails fast with a clear message when Java, its compiler or the jar is missing,
// or the port is taken.
func Start(ctx context.Context, opts Options) (*Server, error) {
	if opts.Dir == "" {
		dir, err := DefaultDir()
		if err != nil {
			return nil, err
		}
		opts.Dir = dir
	}
	if opts.Host == "" {
		opts.Host = "127.0.0.1"
	}
	java, err := exec.LookPath("java")
	if err != nil {
		return nil, errors.New("ddblocal: java not found on PATH: DynamoDB Local needs a Java 17 or newer JDK")
	}
	if _, err := os.Stat(filepath.Join(opts.Dir, "DynamoDBLocal.jar")); err != nil {
		return nil, fmt.Errorf("ddblocal: %s/DynamoDBLocal.jar is missing: run `make ddb-install`", opts.Dir)
	}
	if opts.Port == 0 {
		if opts.Port, err = freePort(); err != nil {
			return nil, err
		}
	}
	// DynamoDB Local keeps running when the port is taken, so check first rather than wait on
	// a server that will never answer.
	probe, err := net.Listen("tcp", net.JoinHostPort(opts.Host, strconv.Itoa(opts.Port)))
	if err != nil {
		return nil, fmt.Errorf("ddblocal: port %d is taken: %w", opts.Port, err)
	}
	probe.Close()

	launcher, err := os.MkdirTemp("", "longrun-ddblocal-")
	if err != nil {
		return nil, fmt.Errorf("ddblocal: a folder for the launcher: %w", err)
	}
	source := filepath.Join(launcher, "Loopback.java")
	if err := os.WriteFile(source, loopback, 0o600); err != nil {
		os.RemoveAll(launcher)
		return nil, fmt.Errorf("ddblocal: write the launcher: %w", err)
	}
	classpath := strings.Join([]string{"DynamoDBLocal.jar", filepath.Join("DynamoDBLocal_lib", "*")}, string(filepath.ListSeparator))
	// -XX:TieredStopAtLevel=1 keeps the JIT to its quick compiler: the emulator's time goes to
	// SQLite (native code) and to requests that each run briefly, so the optimizing compiler's
	// work never paid back. It halves a start's CPU (5.6 s to 2.5 s) and took a third off the
	// dynamo and recorder packages' CPU (issue 21); the test suite starts a dozen of these.
	cmd := exec.Command(java, "-XX:TieredStopAtLevel=1", "-Djava.library.path=./DynamoDBLocal_lib", "-cp", classpath, source, opts.Host,
		"-inMemory", "-sharedDb", "-port", strconv.Itoa(opts.Port))
	cmd.Dir = opts.Dir
	// Without this it looks up a telemetry host before listening, which hangs offline.
	cmd.Env = append(os.Environ(), "DDB_LOCAL_TELEMETRY=0")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		os.RemoveAll(launcher)
		return nil, fmt.Errorf("ddblocal: start java: %w", err)
	}
	s := &Server{Endpoint: "http://" + net.JoinHostPort(opts.Host, strconv.Itoa(opts.Port)), cmd: cmd, done: make(chan struct{}), output: out}
	go func() { _ = cmd.Wait(); os.RemoveAll(launcher); close(s.done) }()
	if err := s.waitReady(ctx); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

func (s *Server) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	client := &http.Client{Timeout: 2 * time.Second}
	for {
		if out := s.output.String(); strings.Contains(out, "Failed to bind") || strings.Contains(out, "Could not start server") {
			return fmt.Errorf("ddblocal: DynamoDB Local could not bind %s", s.Endpoint)
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.Endpoint, strings.NewReader("{}"))
		req.Header.Set("X-Amz-Target", "DynamoDB_20120810.ListTables")
		req.Header.Set("Content-Type", "application/x-amz-json-1.0")
		req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=local/20260101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=0")
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			return nil
		}
		select {
		case <-s.done:
			if strings.Contains(s.output.String(), "jdk.compiler") {
				return errors.New("ddblocal: this Java has no compiler (module jdk.compiler): DynamoDB Local starts through a launcher, " +
					"compiled as it runs, that binds it to the loopback address; install a JDK 17 or newer, not only a JRE")
			}
			return fmt.Errorf("ddblocal: DynamoDB Local exited: %s", lastLines(s.output.String(), 5))
		case <-ctx.Done():
			return fmt.Errorf("ddblocal: DynamoDB Local not ready at %s: %w", s.Endpoint, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Stop ends the process and waits for it.
func (s *Server) Stop() {
	if s.cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.done
	}
}

// DefaultDir is where DynamoDB Local is: LONGRUN_DYNAMODB_LOCAL_DIR when set; else the cache
// under the module root (`make ddb-install` fills it in longrun's checkout), when it holds
// one; else the user's cache (os.UserCacheDir()/longrun/dynamodb-local), where a module that
// uses longrun gets it installed (Ensure).
func DefaultDir() (string, error) {
	if dir := os.Getenv("LONGRUN_DYNAMODB_LOCAL_DIR"); dir != "" {
		return dir, nil
	}
	if root, err := ModuleRoot(); err == nil && Installed(filepath.Join(root, CacheDir)) {
		return filepath.Join(root, CacheDir), nil
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("ddblocal: no cache folder for DynamoDB Local (set LONGRUN_DYNAMODB_LOCAL_DIR): %w", err)
	}
	return filepath.Join(cache, "longrun", "dynamodb-local"), nil
}

// Ensure installs DynamoDB Local into dir unless it is there.
func Ensure(ctx context.Context, dir string) error {
	if Installed(dir) {
		return nil
	}
	return Install(ctx, dir, "")
}

// ModuleRoot is the nearest folder above the working directory that holds go.mod.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory; run from the longrun checkout or set LONGRUN_DYNAMODB_LOCAL_DIR")
		}
		dir = parent
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("ddblocal: find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// syncBuffer collects the child's output for error messages.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.buf.Len() > 1<<20 {
		return len(p), nil
	}
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
