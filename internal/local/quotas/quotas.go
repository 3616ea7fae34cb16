// Package quotas puts AWS's quotas in front of the local stack's AWS edge.
//
// kumo and DynamoDB Local never say no: every invocation runs, every StartExecution starts,
// however many arrive at once. AWS refuses work past its quotas, and those refusals are what
// bind at production load. A Gate wraps the edge (devstack Options.Quotas) and refuses as AWS
// does, on the wire (status, X-Amzn-Errortype, JSON body), so the SDK clients of the
// functions see the errors they would see on AWS (docs/quotas.md):
//
//   - Lambda concurrency. A synchronous Invoke (POST /2015-03-31/functions/{name}/invocations)
//     holds a slot for the duration of the call: its function's reserved concurrency when it
//     has one, the account's unreserved pool otherwise. Past either, Lambda answers 429
//     TooManyRequestsException with Reason ReservedFunctionConcurrentInvocationLimitExceeded
//     or ConcurrentInvocationLimitExceeded.
//   - Step Functions API throttling: a token bucket per API action (StartExecution's is the
//     one that binds), refused with ThrottlingException (HTTP 400, awsJson1_0 error shape).
//   - Payload limits: a StartExecution input over 262,144 UTF-8 bytes (InvalidExecutionInput);
//     a Lambda task's payload or result over the same limit (States.DataLimitExceeded); a
//     synchronous Invoke request over 6 MB (413 RequestEntityTooLargeException).
//   - Lambda's refusals before a handler runs (502 ResourceNotReadyException,
//     EC2ThrottledException, the ENI, subnet and KMS family), injected on demand with
//     RefuseNext or at a fixed rate with RefuseEvery.
//
// Everything else passes untouched: the functions' Runtime API long polls (/_runtime/…),
// asynchronous invocations (InvocationType Event: AWS queues them and retries throttles
// itself), DynamoDB, SQS, EventBridge, and Lambda's and Step Functions' control plane.
//
// What the edge cannot see, and so does not emulate:
//   - Step Functions state transitions (the StateTransition bucket, 5,000 refilling
//     1,500/s in us-east-1) happen inside kumo's engine; no request crosses the edge.
//   - A Lambda task that AWS would fail with Lambda.TooManyRequestsException (and that
//     longrun's workflow retries) reaches the edge as kumo's own call to Lambda, and the Gate
//     refuses it as Lambda would; but kumo turns any answer but 200 into States.TaskFailed, so
//     the execution sees States.TaskFailed, with the refusal only in the cause's text. The
//     same holds for States.DataLimitExceeded and the injected 502s. The Gate tells kumo's
//     calls apart by their credential: kumo signs them with a fixed scope of its own
//     (Credential=kumo/…, awsauth.ScopeHeader) and sets no X-Amz-Invocation-Type, while
//     every SDK signs with its credentials.
//   - Lambda's scaling rate (1,000 new execution environments per function every 10 s),
//     per-function invocation rate limits, and the 6 MB limit on a response.
//
// The Gate keeps no package state; its clock is injected (Options.Now), so the buckets are
// tested without waiting, and its refusals are counted (Stats).
package quotas

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// Bucket is a token bucket: Size tokens when full, refilled at RefillPerSecond. A call takes
// a token or is refused. The zero Bucket throttles nothing.
type Bucket struct {
	Size            int
	RefillPerSecond float64
}

// Limits are the quotas a Gate enforces. The zero value enforces none.
type Limits struct {
	// Reserved is each function's reserved concurrency, by function name: its own slots, and
	// its ceiling. A function listed with 0 never runs, as after PutFunctionConcurrency 0.
	Reserved map[string]int
	// Unreserved is the account's pool, shared by every function without a reservation: on
	// AWS the account's concurrency less every reservation. 0 leaves them unbounded.
	Unreserved int
	// StepFunctions are the Step Functions API's token buckets, by action ("StartExecution",
	// "DescribeExecution", …): AWS keeps one bucket per action, per account and region. An
	// action without one is not throttled.
	StepFunctions map[string]Bucket
	// StatesPayload is the largest input or output of an execution, state or task, in UTF-8
	// bytes; 0 does not check.
	StatesPayload int
	// InvokePayload is the largest synchronous Invoke request, in bytes; 0 does not check.
	InvokePayload int
}

// Options configure a Gate.
type Options struct {
	Limits Limits
	// Now is the buckets' clock; nil is time.Now.
	Now func() time.Time
}

// Gate is an http.Handler in front of the local stack's edge that refuses, as AWS does, what
// AWS's quotas would refuse, and passes everything else to the edge.
type Gate struct {
	next   http.Handler
	limits Limits
	now    func() time.Time

	mu       sync.Mutex
	inFlight map[string]int // function → synchronous invocations in flight
	peak     map[string]int
	pool     int // invocations in flight from the unreserved pool
	poolPeak int
	buckets  map[string]*bucketState // Step Functions action → its bucket
	refused  map[string]int64        // refusal kind → count
	rules    []*rule                 // injected refusals, in the order they were asked for
}

// New returns a Gate in front of next.
func New(next http.Handler, opts Options) *Gate {
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	return &Gate{next: next, limits: opts.Limits, now: now,
		inFlight: map[string]int{}, peak: map[string]int{}, buckets: map[string]*bucketState{}, refused: map[string]int64{}}
}

func (g *Gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/_runtime/") {
		g.next.ServeHTTP(w, r) // the functions' Runtime API: the sandbox's side, never refused
		return
	}
	if action, ok := strings.CutPrefix(r.Header.Get("X-Amz-Target"), "AWSStepFunctions."); ok {
		g.stepFunctions(w, r, action)
		return
	}
	if fn, ok := InvokedFunction(r); ok && isSync(r) {
		g.invoke(w, r, fn)
		return
	}
	g.next.ServeHTTP(w, r)
}

// Stats are what a Gate did so far.
type Stats struct {
	// Refusals counts refusals by kind: the error code, and for throttling what was
	// exhausted, e.g. "TooManyRequestsException (ReservedFunctionConcurrentInvocationLimitExceeded)",
	// "ThrottlingException (StartExecution)", "States.DataLimitExceeded (result)",
	// "ResourceNotReadyException (injected)".
	Refusals map[string]int64
	// InFlight and PeakInFlight are each function's synchronous invocations in flight, now
	// and at most so far.
	InFlight, PeakInFlight map[string]int
	// Unreserved and PeakUnreserved are the account pool's slots in use, now and at most.
	Unreserved, PeakUnreserved int
}

// Stats returns the counts so far.
func (g *Gate) Stats() Stats {
	g.mu.Lock()
	defer g.mu.Unlock()
	return Stats{Refusals: maps.Clone(g.refused), InFlight: maps.Clone(g.inFlight), PeakInFlight: maps.Clone(g.peak),
		Unreserved: g.pool, PeakUnreserved: g.poolPeak}
}

// String is the stats on one line, for a person: the refusals by kind, then each
// function's peak in flight.
func (s Stats) String() string {
	var b strings.Builder
	b.WriteString("refused:")
	if len(s.Refusals) == 0 {
		b.WriteString(" none")
	}
	for _, k := range slices.Sorted(maps.Keys(s.Refusals)) {
		fmt.Fprintf(&b, " %s %d,", k, s.Refusals[k])
	}
	out := strings.TrimSuffix(b.String(), ",")
	b.Reset()
	b.WriteString("; peak in flight:")
	for _, fn := range slices.Sorted(maps.Keys(s.PeakInFlight)) {
		fmt.Fprintf(&b, " %s %d,", fn, s.PeakInFlight[fn])
	}
	fmt.Fprintf(&b, " unreserved pool %d", s.PeakUnreserved)
	return out + b.String()
}

func (g *Gate) count(kind string) {
	g.mu.Lock()
	g.refused[kind]++
	g.mu.Unlock()
}
