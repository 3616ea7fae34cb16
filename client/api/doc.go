// Package api is the generated half of longrun's Go client: a type for every schema of the
// contract (api/openapi.yaml), a set of constants for every enum, and a raw client with a
// method for every route. Most callers want package client, which wraps it with an
// idempotency key, retries, a Poller and errors to decide by; this package is for a route
// or a status that layer does not wrap, the way go.temporal.io/api keeps Temporal's wire
// types apart from its SDK.
//
// ClientWithResponses (NewClientWithResponses) decodes each response into the type its
// status declares (JSON202 for an admission, ApplicationProblemJSON409 for a conflict, …)
// and parses the headers the contract declares; Client (NewClient) is the same without the
// decoding. client.Client.Raw returns a ClientWithResponses that sends through the hand-
// written client's HTTP client, authentication and User-Agent, without its retries.
//
// The names are the contract's, so a schema reached through several of its names is an
// alias of one type: every per-response problem (NotFound, AdmissionConflict, …) is Problem,
// and every representation response (Representation, CancelRepresentation, …) is Operation.
//
// api.gen.go is generated: `make generate` writes it (oapi-codegen, from the view of the
// contract cmd/clientspec renders for it, with oapi-codegen.yaml and oapi-overlay.yaml),
// and `make lint` fails when it is stale. Do not edit it. Its tests hold it to the
// contract: a property, parameter, status, header or enum value the contract has and this
// package lacks (or the other way round) fails them.
package api
