// Package client is the Go client of longrun's HTTP API (the contract is api/openapi.yaml):
// admit an operation exactly once, follow it to its end, read, list, signal and cancel
// operations.
//
// # The client
//
// New builds a Client once; it is safe for concurrent use:
//
//	c, err := client.New("https://api.example.com/prod", &client.ClientOptions{
//		Auth: client.BearerToken(token), // or client.SigV4(awsConfig) for an IAM-authorized stage
//	})
//	poller, err := c.BeginCreate(ctx, client.CreateRequest{Type: "export.orders", Input: input}, nil)
//	op, err := poller.PollUntilDone(ctx, nil)
//	if err == nil {
//		err = op.Err() // nil when it succeeded; an *OperationError when it failed, was canceled or its outcome is unknown
//	}
//
// Create sends an Idempotency-Key (the caller's, or one it mints) and retries a lost answer
// and the transient statuses with that same key, so a retry of an admission that did happen
// is answered as a replay of it (Operation.Replayed) and the call ends with one operation;
// it refuses to retry once the first attempt is older than the idempotency window it knows
// (ErrRetryWindowPassed). Get reads an operation, Cancel records cancellation intent (with
// If-Match from the version seen), Signal sends a running operation a signal its type
// declares (an approval, a webhook's news; once per key, as Create admits, and with
// If-Match if asked), List iterates over the caller's operations (a range-over-func
// iterator, or a Pager), Types and Type describe the operation types, their input schemas
// and signals, and Resolve is the operator's settlement of an outcome_unknown operation.
//
// A Poller (BeginCreate, NewPoller, NewPollerFromResumeToken) follows the operation's Location and statusUrl, never a
// URL it builds; it waits what Retry-After asks for, or else an exponential backoff with
// full jitter, tolerates a bounded number of consecutive transient failures, reports every
// change through PollOptions.OnChange, and stops at succeeded, failed, canceled and
// outcome_unknown, and at 401, 403 and 404.
//
// # Errors
//
// An error response is a *ProblemError carrying the problem's Code, one of the ErrorCode
// constants (ErrorCodeIdempotencyKeyReused, ErrorCodeNotFound, …): decide by it, with
// errors.As or IsCode, never by text. A call that got no complete response is a
// *TransportError wrapping the cause. An operation that ended badly is not an error of the
// call that read it: Operation.Err makes it one.
//
// # Time
//
// Every wait and timestamp goes through ClientOptions.Clock, and jitter through
// ClientOptions.Rand, so tests inject both and nothing sleeps for real.
//
// # Resuming
//
// Poller.ResumeToken is an opaque, versioned token of where a Poller is (the status URL it
// reads next, the version it has seen), with no credentials in it: keep it with the job
// that waits, and Client.NewPollerFromResumeToken goes on from it, in this process or
// another, with a client of the same base URL.
//
// # The generated half
//
// Package client/api is the contract as oapi-codegen writes it: a type for every schema,
// constants for every enum, and a raw client with a method for every route, decoding every
// status into a field of its own. Client.Raw returns that raw client, sending through this
// Client's HTTP client, authentication and User-Agent, for a route or a response this
// package does not wrap. This package hands its callers only its own types (Operation,
// State, Progress, OperationType, …), written to the same schemas and held to them by its
// tests; it imports none of longrun's internal packages, so any module can
// `go get github.com/longrun-dev/longrun/client`.
package client
