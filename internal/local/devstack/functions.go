package devstack

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	lambdatypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"
)

// function is one Lambda function of the stack: its name, how many invocations its process
// serves at once, its timeout, and where its code comes from: longrun's own functions and
// the built-in workers are functions/<name>; a worker of a types file is the Go main package
// (goPkg, a directory) or the command (a program speaking the Lambda Runtime API) of the
// file's local section.
type function struct {
	name        string
	concurrency int
	timeout     int32 // seconds
	goPkg       string
	command     []string
	env         []string
}

// build compiles every function that is Go for this machine, as `make build` does for Lambda
// (same sources and tags; only the target differs): longrun's own in one go build, each
// worker package of a types file on its own (it may belong to another module), named after
// its function.
func build(ctx context.Context, root, bin string, fns []function, out io.Writer) error {
	if _, err := exec.LookPath("go"); err != nil {
		return errors.New("devstack: the Go toolchain is not on PATH; the local stack builds the functions with it")
	}
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return err
	}
	// Stacks of one checkout may start at once (make test runs the e2e suite beside the
	// example's test of make run, each on free ports) and build into the same folder: one
	// at a time, so the second finds the binaries up to date and leaves them alone (go build
	// rewrites nothing whose build ID matches) rather than rewriting a file the first is
	// about to run.
	lock, err := os.OpenFile(filepath.Join(bin, ".build.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	defer lock.Close() // closing it unlocks it
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("devstack: lock %s: %w", lock.Name(), err)
	}
	run := func(dir string, args ...string) error {
		cmd := exec.CommandContext(ctx, "go", append([]string{"build", "-tags", "lambda.norpc"}, args...)...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		cmd.Stdout, cmd.Stderr = out, out
		return cmd.Run()
	}
	own, separate := builds(fns, root)
	if err := run(root, append([]string{"-o", bin + string(filepath.Separator)}, own...)...); err != nil {
		return fmt.Errorf("devstack: build functions: %w", err)
	}
	for _, f := range separate {
		if err := run(f.goPkg, "-o", filepath.Join(bin, f.name), "."); err != nil {
			return fmt.Errorf("devstack: build worker %s from %s: %w", f.name, f.goPkg, err)
		}
	}
	return nil
}

// builds sorts fns into what builds from longrun's source root in one go build (longrun's
// own functions, and a types file's worker that is one of them: the built-in file names
// functions/worker-*) and the Go workers that build on their own, in their own module. A
// command worker builds nothing.
func builds(fns []function, root string) (own []string, separate []function) {
	for _, f := range fns {
		switch {
		case f.command != nil:
		case f.goPkg == "" || f.goPkg == filepath.Join(root, "functions", f.name):
			own = append(own, "./functions/"+f.name)
		default:
			separate = append(separate, f)
		}
	}
	return own, separate
}

// register creates the function in kumo's Lambda. kumo never runs code itself: our process,
// polling the Runtime API, is the function.
func register(ctx context.Context, client *lambda.Client, f function) (string, error) {
	out, err := client.CreateFunction(ctx, &lambda.CreateFunctionInput{
		FunctionName: aws.String(f.name),
		Role:         aws.String("arn:aws:iam::000000000000:role/longrun-local"),
		Runtime:      lambdatypes.RuntimeProvidedal2023,
		Handler:      aws.String("bootstrap"),
		Code:         &lambdatypes.FunctionCode{ZipFile: []byte("local")},
		Timeout:      aws.Int32(f.timeout), // kumo's default is 3 s
	})
	if err != nil {
		return "", fmt.Errorf("devstack: create function %s: %w", f.name, err)
	}
	return aws.ToString(out.FunctionArn), nil
}

// process supervises one function's process: Lambda replaces a sandbox that died, and so
// does this, so a crashed handler does not leave kumo waiting 30 s on a dead poller.
type process struct {
	f    function
	path string
	env  []string
	out  io.Writer

	mu      sync.Mutex
	cmd     *exec.Cmd
	stopped bool
	done    chan struct{}
	// warming hides output while the stack probes the process with empty events, whose
	// rejections would only confuse the reader.
	warming atomic.Bool
}

func (p *process) start() error {
	p.done = make(chan struct{})
	p.warming.Store(true)
	return p.spawn()
}

// warm ends the quiet start.
func (p *process) warm() { p.warming.Store(false) }

// spawn starts the process, and a goroutine that replaces it when it exits unasked. It
// holds mu from checking stopped to recording cmd, so stop either sees the new process or
// spawn sees stopped: a process being replaced while the stack closes cannot outlive it.
func (p *process) spawn() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		close(p.done)
		return nil
	}
	cmd := exec.Command(p.path)
	if c := p.f.command; len(c) > 0 {
		cmd = exec.Command(c[0], c[1:]...)
		cmd.Dir = p.f.goPkg // the types file's directory, for a command worker
	}
	cmd.Env = append(append(append(os.Environ(), p.env...), p.f.env...),
		"AWS_LAMBDA_FUNCTION_NAME="+p.f.name,
		fmt.Sprintf("AWS_LAMBDA_MAX_CONCURRENCY=%d", p.f.concurrency),
	)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("devstack: start %s: %w", p.f.name, err)
	}
	go prefixLines(pr, p.out, p.f.name, p.warming.Load)
	p.cmd = cmd
	go p.supervise(cmd, pw)
	return nil
}

// supervise waits for cmd to exit and, unless stop asked for it, starts a new one.
func (p *process) supervise(cmd *exec.Cmd, pw *io.PipeWriter) {
	err := cmd.Wait()
	pw.Close()
	p.mu.Lock()
	stopped := p.stopped
	p.cmd = nil // reaped: its pid may be reused, so stop must not signal it
	p.mu.Unlock()
	if stopped {
		close(p.done)
		return
	}
	fmt.Fprintf(p.out, "%s | process exited (%v); starting a new one\n", p.f.name, err)
	time.Sleep(100 * time.Millisecond)
	if err := p.spawn(); err != nil {
		fmt.Fprintf(p.out, "%s | %v\n", p.f.name, err)
		close(p.done)
	}
}

// kill ends the current process with SIGKILL and leaves its replacement to supervise.
func (p *process) kill() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped || p.cmd == nil || p.cmd.Process == nil {
		return nil // being replaced, or the stack is closing
	}
	return syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
}

// stop ends the process for good and waits for it. Between a process's exit and its
// replacement there is none to wait for, and spawn will not start another.
func (p *process) stop() {
	p.mu.Lock()
	p.stopped = true
	cmd := p.cmd
	p.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(3 * time.Second):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// prefixLines copies a process's output line by line, each prefixed with its name, except
// while quiet says so.
func prefixLines(r io.Reader, w io.Writer, name string, quiet func() bool) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if !quiet() {
			fmt.Fprintf(w, "%s | %s\n", name, sc.Text())
		}
	}
}

// invoker invokes functions through kumo's Lambda API, never retrying: a retried invocation
// could run a handler twice, and the callers (pollers, the gateway) decide about retries.
type invoker struct{ client *lambda.Client }

func (i invoker) Invoke(ctx context.Context, fn string, payload []byte) ([]byte, string, error) {
	out, err := i.client.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String(fn), Payload: payload},
		func(o *lambda.Options) { o.RetryMaxAttempts = 1 })
	if err != nil {
		return nil, "", err
	}
	return out.Payload, aws.ToString(out.FunctionError), nil
}

// waitRegistered invokes fn with an empty event until its process polls the Runtime API;
// before that kumo answers at once that the function has no runtime handler. Every
// function treats an empty event as a no-op or rejects it without side effects.
func waitRegistered(ctx context.Context, inv invoker, fn string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		_, _, err := inv.Invoke(ctx, fn, []byte(`{}`))
		if err == nil {
			return nil
		}
		if !strings.Contains(err.Error(), "no runtime handler") {
			return fmt.Errorf("devstack: %s is not answering: %w", fn, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("devstack: %s never polled the Runtime API: %w", fn, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// DivertEmulatorStdout sends what kumo writes to standard output to w instead, and keeps
// os.Stdout for the program: kumo logs every EventBridge delivery to the stdout it captured
// when it initialised, which would drown a terminal or a test report.
func DivertEmulatorStdout(w *os.File) error {
	saved, err := syscall.Dup(1)
	if err != nil {
		return fmt.Errorf("devstack: keep stdout: %w", err)
	}
	if err := syscall.Dup3(int(w.Fd()), 1, 0); err != nil {
		return fmt.Errorf("devstack: divert stdout: %w", err)
	}
	os.Stdout = os.NewFile(uintptr(saved), "/dev/stdout")
	return nil
}
