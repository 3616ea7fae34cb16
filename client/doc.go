// Package client is the Go client of longrun's HTTP API, generated from the contract,
// api/openapi.yaml.
//
// Every schema of the contract is a type here (Accepted, Operation, OperationList,
// Problem, the request bodies AdmissionRequest and ResolveRequest, …) and every operation
// a method: on Client, which returns the *http.Response, and on ClientWithResponses, which
// also decodes the body into the type its status declares (JSON202 for an admission,
// ApplicationProblemJSON409 for a conflict, …) and parses the headers the contract
// declares for it (Location, Retry-After, ETag, X-Request-Id). A request editor
// authenticates:
//
//	c, err := client.NewClientWithResponses("https://api.example.com/prod",
//		client.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
//			r.Header.Set("Authorization", "Bearer "+token)
//			return nil
//		}))
//
// It imports none of longrun's internal packages, so any module can
// `go get github.com/longrun-dev/longrun/client`.
//
// The operations written by hand on top of the generated ones come next: Create, which
// takes or mints an idempotency key and retries transport failures and 503 with that same
// key within the retention window; Get, Cancel with the version seen, and List as an
// iterator; a Poller that follows Location, honours Retry-After, backs off with jitter and
// stops at every terminal state; errors typed by the problem's code; and SigV4 for
// IAM-authorized stages.
//
// api.gen.go is generated: `make generate` writes it (oapi-codegen, from the view of the
// contract cmd/clientspec renders for it, with oapi-codegen.yaml), and `make lint` fails
// when it is stale. Do not edit it.
package client
