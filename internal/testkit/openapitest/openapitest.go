// Package openapitest checks real HTTP exchanges against the public contract in
// api/openapi.yaml.
//
// Only responses are validated. Requests are used to find the route (method and
// path) and nothing else: tests send invalid keys, invalid bodies and missing
// credentials on purpose, and the server's answers to those are exactly what
// must be checked.
package openapitest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	"github.com/longrun-dev/longrun/api"
)

// Validator checks HTTP responses against api/openapi.yaml.
// It is safe for concurrent use.
type Validator struct {
	doc    *openapi3.T
	router routers.Router
	opts   *openapi3filter.Options
}

// New loads api.OpenAPI(), validates the document and builds a router over
// its paths. Routing is by path alone (the document's servers are ignored), so
// requests to the local stack, an httptest server or any host route the same.
func New(ctx context.Context) (*Validator, error) {
	loader := openapi3.NewLoader()
	loader.Context = ctx
	loader.IsExternalRefsAllowed = false
	doc, err := loader.LoadFromData(api.OpenAPI())
	if err != nil {
		return nil, fmt.Errorf("openapitest: loading api/openapi.yaml: %w", err)
	}
	if err := doc.Validate(ctx); err != nil {
		return nil, fmt.Errorf("openapitest: api/openapi.yaml is not a valid OpenAPI document: %w", err)
	}
	// Route by path only: the servers list names the local stack, but tests
	// call httptest servers on random ports too.
	doc.Servers = nil
	router, err := legacy.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("openapitest: building router: %w", err)
	}
	opts := &openapi3filter.Options{
		// Never used to judge the request, which is not validated; set so
		// that nothing in the filter can trip over the security schemes.
		AuthenticationFunc: openapi3filter.NoopAuthenticationFunc,
		// An undeclared status is an error (there is no `default`).
		IncludeResponseStatus: true,
		MultiError:            true,
		SchemaValidationOptions: []openapi3.SchemaValidationOption{
			openapi3.WithStringFormatValidator("uri", openapi3.NewCallbackValidator(validateURI)),
		},
	}
	opts.WithCustomSchemaErrorFunc(schemaErrorMessage)
	return &Validator{doc: doc, router: router, opts: opts}, nil
}

// schemaErrorMessage keeps schema errors short: the reason (which names the
// failing location) and the failing value, without the schema dump
// kin-openapi appends by default.
func schemaErrorMessage(err *openapi3.SchemaError) string {
	if err.Origin != nil {
		return "" // the default message: the nested errors, each customized
	}
	value, jerr := json.Marshal(err.Value)
	if jerr != nil {
		return err.Reason
	}
	const maxValue = 200
	if len(value) > maxValue {
		value = append(value[:maxValue:maxValue], "…"...)
	}
	return fmt.Sprintf("%s (value %s)", err.Reason, value)
}

// ValidateResponse checks one exchange. The request (method, path such as
// /v1/operations/op_..., header, body) must match a route of the document; it
// is not validated otherwise. The response must match that operation's
// declared response for status: an undeclared status is an error; declared
// headers are checked (missing required ones, such as X-Request-Id, ETag,
// Location or Retry-After where declared required, and values against their
// schemas); the Content-Type must be one the response declares; the body must
// match the schema.
//
// It also checks contract rules a schema cannot express: a problem's status
// and requestId equal the HTTP status and X-Request-Id; a representation's
// ETag is its quoted version, its operationId is the one in the path, and on
// GET it carries Retry-After exactly while not terminal (never when terminal
// elsewhere); an admission's or a signal's Location equals its statusUrl.
//
// A method the path does not declare (DELETE /v1/operations) must be answered
// with the 405 its operations declare, with an Allow header naming exactly the
// methods the document declares for the path, or, without a caller, with their
// 401; a declared method never gets 405.
// A path the document does not have is an error ("no route").
func (v *Validator) ValidateResponse(ctx context.Context, req *http.Request, reqBody []byte, status int, header http.Header, body []byte) error {
	if req == nil || req.URL == nil {
		return errors.New("openapitest: nil request")
	}
	r := req.Clone(ctx)
	r.Body = io.NopCloser(bytes.NewReader(reqBody))
	r.ContentLength = int64(len(reqBody))
	where := r.Method + " " + r.URL.Path

	route, pathParams, err := v.router.FindRoute(r)
	if err != nil {
		declared := v.declaredRoutes(r)
		if len(declared) == 0 {
			return fmt.Errorf("openapitest: %s: no route in api/openapi.yaml: %w", where, err)
		}
		return v.validateMethodNotAllowed(ctx, r, declared, status, header, body)
	}
	where = fmt.Sprintf("%s (%s %s) -> %d", where, route.Method, route.Path, status)

	// openapi3filter lets 301, 304, 307 and 308 through unchecked; the
	// contract declares none of them, so check the status first.
	if route.Operation.Responses.Status(status) == nil {
		return fmt.Errorf("openapitest: %s: status %d is not declared for this operation", where, status)
	}
	// 405 is declared under every operation only because OpenAPI has no
	// path-level responses: it answers the methods a path does not declare.
	if status == http.StatusMethodNotAllowed {
		return fmt.Errorf("openapitest: %s: 405 answers only methods the path does not declare", where)
	}
	return v.validate(ctx, r, route, pathParams, where, status, header, body)
}

// validate checks a response against the operation of route.
func (v *Validator) validate(ctx context.Context, r *http.Request, route *routers.Route, pathParams map[string]string, where string, status int, header http.Header, body []byte) error {
	h := canonicalHeader(header)
	opts := *v.opts
	input := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{
			Request:    r,
			PathParams: pathParams,
			Route:      route,
			Options:    &opts,
		},
		Status:  status,
		Header:  h,
		Options: &opts,
	}
	input.SetBodyBytes(body)
	if err := openapi3filter.ValidateResponse(ctx, input); err != nil {
		return fmt.Errorf("openapitest: %s: %w", where, err)
	}
	if err := checkContract(route, pathParams, status, h, body); err != nil {
		return fmt.Errorf("openapitest: %s: %w", where, err)
	}
	return nil
}

// methods are the HTTP methods an OpenAPI path item can declare.
func methods() []string {
	return []string{http.MethodGet, http.MethodPut, http.MethodPost, http.MethodDelete,
		http.MethodOptions, http.MethodHead, http.MethodPatch, http.MethodTrace}
}

// declaredRoute is one operation of the path a request named.
type declaredRoute struct {
	route      *routers.Route
	pathParams map[string]string
}

// declaredRoutes returns the operations the document declares on r's path, whatever r's
// method: none when the path itself is unknown.
func (v *Validator) declaredRoutes(r *http.Request) []declaredRoute {
	var found []declaredRoute
	for _, m := range methods() {
		probe := r.Clone(r.Context())
		probe.Method = m
		if route, params, err := v.router.FindRoute(probe); err == nil {
			found = append(found, declaredRoute{route, params})
		}
	}
	return found
}

// validateMethodNotAllowed checks the answer to a method the path does not declare: it must
// be the 405 the path's operations declare, with an Allow header naming exactly the
// path's methods.
func (v *Validator) validateMethodNotAllowed(ctx context.Context, r *http.Request, declared []declaredRoute, status int, header http.Header, body []byte) error {
	var have []string
	for _, d := range declared {
		have = append(have, d.route.Method)
	}
	where := fmt.Sprintf("%s %s (%s has %s) -> %d", r.Method, r.URL.Path, declared[0].route.Path, strings.Join(have, ", "), status)
	switch status {
	case http.StatusMethodNotAllowed:
	case http.StatusUnauthorized:
		// The caller is resolved before the route is: 401 whatever the method.
		return v.validateAsDeclared(ctx, r, declared, where, status, header, body)
	default:
		return fmt.Errorf("openapitest: %s: a method the path does not declare must be answered with 405 (or 401 without a caller), not %d", where, status)
	}
	var allow []string
	for _, value := range canonicalHeader(header).Values("Allow") {
		for _, m := range strings.Split(value, ",") {
			allow = append(allow, strings.TrimSpace(m))
		}
	}
	slices.Sort(allow)
	sorted := slices.Sorted(slices.Values(have))
	if !slices.Equal(allow, sorted) {
		return fmt.Errorf("openapitest: %s: Allow %q is not the path's methods %q", where, strings.Join(allow, ", "), strings.Join(sorted, ", "))
	}
	return v.validateAsDeclared(ctx, r, declared, where, status, header, body)
}

// validateAsDeclared validates a response to an undeclared method against the response the
// path's first operation declaring status declares.
func (v *Validator) validateAsDeclared(ctx context.Context, r *http.Request, declared []declaredRoute, where string, status int, header http.Header, body []byte) error {
	for _, d := range declared {
		if d.route.Operation.Responses.Status(status) == nil {
			continue
		}
		probe := r.Clone(ctx)
		probe.Method = d.route.Method
		return v.validate(ctx, probe, d.route, d.pathParams, where, status, header, body)
	}
	return fmt.Errorf("openapitest: %s: no operation of the path declares %d", where, status)
}

// Doc returns the loaded document (servers removed). Callers must not modify it.
func (v *Validator) Doc() *openapi3.T { return v.doc }

func canonicalHeader(header http.Header) http.Header {
	h := make(http.Header, len(header))
	for k, vs := range header {
		ck := http.CanonicalHeaderKey(k)
		h[ck] = append(h[ck], vs...)
	}
	return h
}

func validateURI(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return err
	}
	if !u.IsAbs() {
		return fmt.Errorf("%q is not an absolute URI", s)
	}
	return nil
}

// checkContract applies the cross-field rules of the contract to a response
// that already matched its schema.
func checkContract(route *routers.Route, pathParams map[string]string, status int, h http.Header, body []byte) error {
	ct := strings.ToLower(h.Get("Content-Type"))
	if !strings.Contains(ct, "json") || len(body) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil {
		return nil // not an object: the schema check already judged it
	}
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	if status >= 400 {
		if s, ok := obj["status"].(json.Number); ok && s.String() != strconv.Itoa(status) {
			fail("problem status %s differs from the HTTP status %d", s, status)
		}
		if id, _ := obj["requestId"].(string); id != h.Get("X-Request-Id") {
			fail("problem requestId %q differs from X-Request-Id %q", id, h.Get("X-Request-Id"))
		}
		return errors.Join(errs...)
	}

	// Success bodies.
	opID, _ := obj["operationId"].(string)
	statusURL, _ := obj["statusUrl"].(string)
	if opID != "" && statusURL != "" && !strings.HasSuffix(statusURL, "/"+opID) {
		fail("statusUrl %q does not name operationId %q", statusURL, opID)
	}
	if want, ok := pathParams["operationId"]; ok && opID != "" && opID != want {
		fail("operationId %q differs from the one in the path %q", opID, want)
	}
	if id := route.Operation.OperationID; id == "admitOperation" || id == "signalOperation" {
		if loc := h.Get("Location"); loc != statusURL {
			fail("Location %q differs from statusUrl %q", loc, statusURL)
		}
		if id == "admitOperation" {
			return errors.Join(errs...)
		}
	}
	// An operation's representation; an operation type has a version too, and no operationId.
	version, isRepresentation := obj["version"].(json.Number)
	if !isRepresentation || opID == "" {
		return errors.Join(errs...)
	}
	if etag := h.Get("ETag"); etag != "" && etag != `"`+version.String()+`"` {
		fail("ETag %s is not the quoted version %s", etag, version)
	}
	terminal, _ := obj["terminal"].(bool)
	_, hasRetryAfter := h[http.CanonicalHeaderKey("Retry-After")]
	switch {
	case terminal && hasRetryAfter:
		fail("Retry-After is set on a terminal representation")
	case !terminal && !hasRetryAfter && route.Operation.OperationID == "getOperation":
		fail("Retry-After is missing on a representation that is not terminal")
	}
	return errors.Join(errs...)
}
