// Package admission admits operations exactly once per idempotency key: it validates the
// key and the request, computes the canonical fingerprint, and hands one all-or-nothing
// intent to the store, which decides with condition expressions (never read-then-write).
package admission

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/longrun-dev/longrun/internal/core/jcs"
	"github.com/longrun-dev/longrun/internal/core/operation"
	"github.com/longrun-dev/longrun/internal/core/optype"
	"github.com/longrun-dev/longrun/internal/core/problem"
	"github.com/longrun-dev/longrun/internal/core/runes"
)

const (
	// MaxBodyBytes is the contract's admission body limit (64 KiB).
	MaxBodyBytes = 64 << 10
	// MaxKeyLen is the longest Idempotency-Key accepted.
	MaxKeyLen = 128
	// DefaultWindow is how long an idempotency record answers replays.
	DefaultWindow = 24 * time.Hour
	// DefaultQuota is the default number of active operations per tenant.
	DefaultQuota = 1000
	// DefaultPrincipalQuota is the default number of active operations per caller: half the
	// tenant's, so one caller (one IAM role of an account, say) cannot block the others.
	DefaultPrincipalQuota = DefaultQuota / 2
	// Route is the route template admission serves; it is part of the fingerprint.
	Route = "/v1/operations"
)

// Scope is the authenticated caller, resolved by the server, never from the request.
type Scope struct {
	Tenant    string
	Principal string
}

// Request is one admission attempt as the HTTP layer parsed it.
type Request struct {
	Scope     Scope
	Key       string
	MediaType string // lowercased, parameters dropped; "" when missing or unparseable
	// MediaParams are the Content-Type's parameters (names lowercased, as
	// mime.ParseMediaType returns them); only charset is judged.
	MediaParams map[string]string
	Body        []byte
	// BasePath is the prefix of the API's base URL as the client called it ("" locally,
	// "/prod" behind a stage); statusUrl and Location are built under it.
	BasePath string
	// CorrelationID is recorded in the accepted fact (operation.Admission.CorrelationID); it
	// is not part of the fingerprint, so a retry with another one replays.
	CorrelationID string
	// Traceparent is the admission span's W3C traceparent, recorded beside it
	// (operation.Admission.Traceparent); not part of the fingerprint either.
	Traceparent string
}

// Record is the stored idempotency record: the fingerprint it guards and the first
// response, replayed byte for byte.
type Record struct {
	Fingerprint string
	OperationID string
	Status      int
	Location    string
	Body        []byte
	ExpiresAt   time.Time
}

// Intent is everything one admission writes, in one transaction.
type Intent struct {
	Scope      Scope
	Key        string
	Now        time.Time
	Record     Record
	First      operation.Fact // the accepted fact, version 1
	QuotaLimit int            // active operations per tenant; 0 disables the quota
	// PrincipalQuotaLimit bounds one caller's active operations within its tenant, so that
	// one caller cannot take the whole tenant's quota; 0 disables it.
	PrincipalQuotaLimit int
}

// Store commits an Intent atomically. When the idempotency record already exists and has
// not expired it returns that record (from the failed condition, in the same round trip)
// and writes nothing. Target and quota conflicts are problem errors.
type Store interface {
	Admit(ctx context.Context, in Intent) (existing *Record, err error)
}

// Outcome is what the client gets back.
type Outcome struct {
	Record   Record
	Replayed bool
}

// Service admits operations.
type Service struct {
	Store    Store
	Registry *optype.Registry
	Now      func() time.Time
	NewID    func() string
	Window   time.Duration
	Quota    int
	// PrincipalQuota is the per-caller quota (0: none).
	PrincipalQuota int
}

// Accepted is the 202 body (api/openapi.yaml, schema Accepted), field order as there.
type Accepted struct {
	OperationID string          `json:"operationId"`
	Type        string          `json:"type"`
	Target      string          `json:"target"`
	State       operation.State `json:"state"`
	StatusURL   string          `json:"statusUrl"`
	CreatedAt   string          `json:"createdAt"`
}

// StatusPath is an operation's path under basePath.
func StatusPath(basePath, operationID string) string {
	return basePath + Route + "/" + operationID
}

// Admit validates req and admits it, or replays the first response for its key.
func (s *Service) Admit(ctx context.Context, req Request) (Outcome, error) {
	if err := ValidateKey(req.Key); err != nil {
		return Outcome{}, err
	}
	body, err := parseBody(req.MediaType, req.MediaParams, req.Body)
	if err != nil {
		return Outcome{}, err
	}
	typ, ok := s.Registry.Lookup(body.Type)
	if !ok {
		return Outcome{}, &problem.Error{Code: problem.UnsupportedOperationType,
			Detail: fmt.Sprintf("Operation type %q is not registered.", runes.Cut(body.Type, 64)),
			Fields: []problem.FieldError{{Pointer: "/type", Detail: "not a registered operation type"}}}
	}
	id := s.NewID()
	target, err := typ.Target(body.Input, id)
	if err != nil {
		return Outcome{}, err
	}
	fp, err := Fingerprint(req.MediaType, typ, target, body.Parsed)
	if err != nil {
		return Outcome{}, err
	}
	input, err := jcs.Marshal(body.Input)
	if err != nil {
		return Outcome{}, problem.Wrap(problem.Internal, err, "An internal error occurred.")
	}

	now := s.Now()
	location := StatusPath(req.BasePath, id)
	first, err := json.Marshal(Accepted{OperationID: id, Type: typ.Name, Target: target, State: operation.Accepted,
		StatusURL: location, CreatedAt: operation.FormatTime(now)})
	if err != nil {
		return Outcome{}, problem.Wrap(problem.Internal, err, "An internal error occurred.")
	}
	rec := Record{Fingerprint: fp, OperationID: id, Status: http.StatusAccepted, Location: location, Body: first,
		ExpiresAt: now.Add(s.window(typ))}
	in := Intent{Scope: req.Scope, Key: req.Key, Now: now, Record: rec, QuotaLimit: s.Quota, PrincipalQuotaLimit: s.PrincipalQuota,
		First: operation.Fact{Version: 1, Kind: operation.KindAccepted, At: now, Source: operation.SourceAdmission,
			Actor: req.Scope.Principal, Admission: &operation.Admission{Type: typ.Name, TypeVersion: typ.Version,
				Target: target, Tenant: req.Scope.Tenant, Principal: req.Scope.Principal, Input: input,
				QuotaReserved: s.Quota > 0, PrincipalQuotaReserved: s.PrincipalQuota > 0, Deadline: now.Add(typ.Deadline),
				QuotaWeight: quotaWeight(typ), CorrelationID: req.CorrelationID, Traceparent: req.Traceparent}}}

	existing, err := s.Store.Admit(ctx, in)
	switch {
	case err != nil:
		return Outcome{}, err
	case existing == nil || existing.OperationID == id:
		// Our own write (an SDK retry of a commit that succeeded shows up as "exists").
		return Outcome{Record: rec}, nil
	case existing.Fingerprint != fp:
		// The record is the caller's own (it is keyed by scope), so naming its operation
		// tells them which job the key belongs to and reveals nothing of anyone else's.
		return Outcome{}, problem.New(problem.IdempotencyKeyReused,
			"This Idempotency-Key was already used with a different request.").WithOperation(existing.OperationID)
	default:
		return Outcome{Record: *existing, Replayed: true}, nil
	}
}

// quotaWeight is the slots an operation of typ takes, as the accepted fact records it: left
// out (0) for the usual 1.
func quotaWeight(typ optype.Type) int {
	if typ.QuotaWeight > 1 {
		return typ.QuotaWeight
	}
	return 0
}

// window is how long the idempotency record answers replays: the type's retention when its
// definition sets one, else the service's.
func (s *Service) window(typ optype.Type) time.Duration {
	if typ.Retention > 0 {
		return typ.Retention
	}
	if s.Window > 0 {
		return s.Window
	}
	return DefaultWindow
}

// ValidateKey checks an Idempotency-Key: 1–128 printable ASCII characters.
func ValidateKey(key string) error {
	if key == "" {
		return problem.New(problem.InvalidIdempotencyKey, "The Idempotency-Key header is required.")
	}
	if len(key) > MaxKeyLen {
		return problem.New(problem.InvalidIdempotencyKey, "The Idempotency-Key must be at most %d characters.", MaxKeyLen)
	}
	for i := 0; i < len(key); i++ {
		if key[i] < 0x20 || key[i] > 0x7e {
			return problem.New(problem.InvalidIdempotencyKey, "The Idempotency-Key must be printable ASCII (0x20-0x7E).")
		}
	}
	return nil
}

type admissionBody struct {
	Parsed any
	Type   string
	Input  map[string]any
}

// CheckMediaType judges a request body's Content-Type: missing (or unparseable) is 400
// invalid_input, as the media type is part of the fingerprint; any media type but
// application/json, or a charset parameter other than utf-8 (case-insensitive), is 415
// unsupported_media_type. Parameters other than charset are ignored.
func CheckMediaType(mediaType string, params map[string]string) error {
	if mediaType == "" {
		return problem.New(problem.InvalidInput, "Content-Type must be application/json.")
	}
	if mediaType != "application/json" {
		return problem.New(problem.UnsupportedMediaType, "Content-Type %q is not supported: send application/json.", runes.Cut(mediaType, 64))
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
		return problem.New(problem.UnsupportedMediaType, "charset %q is not supported: the body must be UTF-8.", runes.Cut(cs, 64))
	}
	return nil
}

// parseBody checks the size and the media type and parses strictly (duplicates, invalid
// UTF-8, depth) before anything is stored.
func parseBody(mediaType string, params map[string]string, data []byte) (admissionBody, error) {
	if len(data) > MaxBodyBytes {
		return admissionBody{}, problem.New(problem.PayloadTooLarge, "The body must be at most %d bytes.", MaxBodyBytes)
	}
	if err := CheckMediaType(mediaType, params); err != nil {
		return admissionBody{}, err
	}
	parsed, err := jcs.Parse(data)
	if err != nil {
		// jcs errors are written to be shown to clients (offsets and names, no internals).
		return admissionBody{}, problem.Wrap(problem.InvalidInput, err, "The body is not acceptable JSON: %s.", err.Error())
	}
	obj, ok := parsed.(map[string]any)
	if !ok {
		return admissionBody{}, problem.Invalid(problem.FieldError{Pointer: "", Detail: "The body must be a JSON object."})
	}
	if _, fields := canonicalNumbers(parsed, ""); len(fields) > 0 {
		return admissionBody{}, problem.Invalid(fields...)
	}
	var fields []problem.FieldError
	for name := range obj {
		if name != "type" && name != "input" {
			fields = append(fields, problem.FieldError{Pointer: "/" + name, Detail: fmt.Sprintf("%q is not a field of an admission request.", runes.Cut(name, 64))})
		}
	}
	typ, ok := obj["type"].(string)
	if !ok || typ == "" {
		fields = append(fields, problem.FieldError{Pointer: "/type", Detail: "type is required and must be a string."})
	}
	input, ok := obj["input"].(map[string]any)
	if !ok {
		fields = append(fields, problem.FieldError{Pointer: "/input", Detail: "input is required and must be a JSON object."})
	}
	if len(fields) > 0 {
		return admissionBody{}, problem.Invalid(fields...)
	}
	return admissionBody{Parsed: parsed, Type: typ, Input: input}, nil
}

// Fingerprint is SHA-256 over the canonical (RFC 8785) form of everything that makes two
// requests "the same": method, route template, media type, type and its version, canonical
// target and the canonical body. Volatile headers are deliberately absent.
func Fingerprint(mediaType string, typ optype.Type, target string, body any) (string, error) {
	if typ.MintsTarget {
		target = "" // minted per operation; a retry must still match
	}
	canonical, err := jcs.Marshal(map[string]any{
		"method":      http.MethodPost,
		"route":       Route,
		"mediaType":   mediaType,
		"type":        typ.Name,
		"typeVersion": typ.Version,
		"target":      target,
		"body":        body,
	})
	if err != nil {
		return "", problem.Wrap(problem.Internal, err, "An internal error occurred.")
	}
	sum := sha256.Sum256(canonical)
	return hex.EncodeToString(sum[:]), nil
}

// maxSafeInteger is the largest integer every double holds exactly (2^53 - 1, I-JSON's limit).
const maxSafeInteger = 1<<53 - 1

// canonicalNumbers puts every number in v in its canonical spelling, in place: the shortest
// that reads as its double (RFC 8785), which is what the fingerprint and the stored input,
// and so the worker, get anyway. Then the schema and the target read that value too: one
// value reaches all of them. (Judged on its spelling, 0.29999999999999999 passed a schema's
// exclusiveMaximum of 0.3, and the worker then got 0.3.) A number that reads as an integer
// must be exactly that integer, since integers name things: 9007199254740993.0 made the target
// acct:9007199254740993 and reached the worker as 9007199254740992. Those are listed by
// pointer. A fraction is read as the double it rounds to, as RFC 8785 and I-JSON have it.
func canonicalNumbers(v any, pointer string) (any, []problem.FieldError) {
	var out []problem.FieldError
	switch v := v.(type) {
	case map[string]any:
		for k, child := range v {
			var fields []problem.FieldError
			v[k], fields = canonicalNumbers(child, pointer+"/"+escapePointer(k))
			out = append(out, fields...)
		}
		sort.Slice(out, func(i, j int) bool { return out[i].Pointer < out[j].Pointer })
	case []any:
		for i, child := range v {
			var fields []problem.FieldError
			v[i], fields = canonicalNumbers(child, pointer+"/"+strconv.Itoa(i))
			out = append(out, fields...)
		}
	case json.Number:
		canonical, detail := canonicalNumber(v)
		if detail != "" {
			return v, []problem.FieldError{{Pointer: pointer, Detail: detail}}
		}
		return canonical, nil
	}
	return v, out
}

// canonicalNumber is lit's canonical spelling, or why lit is refused: it reads as an integer
// that is not its value.
func canonicalNumber(lit json.Number) (json.Number, string) {
	b, err := jcs.Marshal(lit)
	if err != nil {
		// jcs.Parse refused every literal Marshal refuses, so this is not the caller's.
		return lit, "This number cannot be read."
	}
	canonical := json.Number(b)
	if canonical == lit {
		return canonical, ""
	}
	written, read := exactly(lit), exactly(canonical)
	if read.integer() && written != read {
		return lit, fmt.Sprintf("%s reads as %s, a double: a number that reads as an integer must be exactly that integer "+
			"(every integer within ±%d is; send larger ones as strings).", lit, canonical, int64(maxSafeInteger))
	}
	return canonical, ""
}

// exact is a number's exact value, read from its literal without big numbers: its sign, its
// significant digits and the power of ten of the last one (-1.50e2 is {true, "15", 1}; zero of
// either sign is the zero value). Two literals have the same value exactly when their exacts
// are equal.
type exact struct {
	negative bool
	digits   string
	exp      int
}

// exactly reads a literal of the JSON number grammar whose exponent jcs has bounded.
func exactly(lit json.Number) exact {
	mantissa, exponent := lit.String(), 0
	if i := strings.IndexAny(mantissa, "eE"); i >= 0 {
		exponent, _ = strconv.Atoi(mantissa[i+1:]) // "+5" and "-5" both read
		mantissa = mantissa[:i]
	}
	negative := strings.HasPrefix(mantissa, "-")
	whole, fraction, _ := strings.Cut(strings.TrimPrefix(mantissa, "-"), ".")
	digits := strings.TrimLeft(whole+fraction, "0")
	significant := strings.TrimRight(digits, "0")
	if significant == "" {
		return exact{}
	}
	return exact{negative, significant, exponent - len(fraction) + len(digits) - len(significant)}
}

// integer reports whether the value is an integer: zero, or no digit after the point.
func (e exact) integer() bool { return e.exp >= 0 }

// escapePointer escapes a member name for a JSON pointer (RFC 6901).
func escapePointer(name string) string {
	return strings.ReplaceAll(strings.ReplaceAll(name, "~", "~0"), "/", "~1")
}
