package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/longrun-dev/longrun/client"
	ct "github.com/longrun-dev/longrun/client/internal/contracttest"
)

// handWritten names, for every schema of the contract package client hands to its callers,
// the hand-written type that carries it.
var handWritten = map[string]reflect.Type{
	"Operation":         reflect.TypeFor[client.Operation](),
	"OperationProblem":  reflect.TypeFor[client.OperationProblem](),
	"Progress":          reflect.TypeFor[client.Progress](),
	"Awaiting":          reflect.TypeFor[client.Awaiting](),
	"FieldError":        reflect.TypeFor[client.FieldError](),
	"OperationType":     reflect.TypeFor[client.OperationType](),
	"SignalDeclaration": reflect.TypeFor[client.SignalDeclaration](),
	"ResolveRequest":    reflect.TypeFor[client.ResolveRequest](),
	"History":           reflect.TypeFor[client.History](),
	"HistoryEntry":      reflect.TypeFor[client.HistoryEntry](),
	"HistorySignal":     reflect.TypeFor[client.HistorySignal](),
	"Retry":             reflect.TypeFor[client.Retry](),
	"Retried":           reflect.TypeFor[client.Retried](),
	"TenantOperation":   reflect.TypeFor[client.TenantOperation](),
	"Stats":             reflect.TypeFor[client.Stats](),
	"InFlightCounts":    reflect.TypeFor[client.InFlightCounts](),
}

// TestHandWrittenTypesCarryEveryProperty: each hand-written type has a field for every
// property of its schema (by JSON name, required ones never omitted when empty), accepts
// every value of the schema's enums (State, ResolveOutcome), and has no other JSON field, as
// the generated types are held to the contract.
func TestHandWrittenTypesCarryEveryProperty(t *testing.T) {
	doc := ct.Contract(t)
	for _, name := range slices.Sorted(maps.Keys(handWritten)) {
		t.Run(name, func(t *testing.T) {
			s := doc.Components.Schemas[name]
			if s == nil {
				t.Fatalf("the contract has no schema %s", name)
			}
			ct.CheckStruct(t, "hand-written "+name, handWritten[name], s.Value)
		})
	}
}

// TestEnumsAreTheContracts: the constants of State, ErrorCode, ResolveOutcome and
// SignalSender in types.go are exactly the values of the contract's enums, each Valid, and
// nothing else is.
func TestEnumsAreTheContracts(t *testing.T) {
	doc := ct.Contract(t)
	resolve := doc.Components.Schemas["ResolveRequest"].Value.Properties["outcome"].Value
	for _, c := range []struct {
		typ    string
		schema *openapi3.Schema
		valid  func(string) bool
	}{
		{"State", doc.Components.Schemas["State"].Value, func(v string) bool { return client.State(v).Valid() }},
		{"ErrorCode", doc.Components.Schemas["ErrorCode"].Value, func(v string) bool { return client.ErrorCode(v).Valid() }},
		{"ResolveOutcome", resolve, func(v string) bool { return client.ResolveOutcome(v).Valid() }},
		{"SignalSender", doc.Components.Schemas["SignalSender"].Value, func(v string) bool { return client.SignalSender(v).Valid() }},
		{"FactKind", doc.Components.Schemas["FactKind"].Value, func(v string) bool { return client.FactKind(v).Valid() }},
		{"FactSource", doc.Components.Schemas["FactSource"].Value, func(v string) bool { return client.FactSource(v).Valid() }},
	} {
		t.Run(c.typ, func(t *testing.T) {
			var want []string
			for _, v := range c.schema.Enum {
				want = append(want, v.(string))
			}
			if len(want) < 2 {
				t.Fatalf("the contract's %s has %d values", c.typ, len(want))
			}
			got := slices.Sorted(maps.Keys(constants(t, "types.go", c.typ)))
			if slices.Sort(want); !slices.Equal(got, want) {
				t.Errorf("%s constants: %v, the contract's enum: %v", c.typ, got, want)
			}
			for _, v := range want {
				if !c.valid(v) {
					t.Errorf("%s(%q).Valid() is false", c.typ, v)
				}
			}
			if c.valid("") || c.valid("no_such_"+strings.ToLower(c.typ)) {
				t.Errorf("%s.Valid accepts a value the contract does not have", c.typ)
			}
		})
	}
}

// examplesOf collects the examples of every response whose body is the named schema.
func examplesOf(doc *openapi3.T, schema string) map[string]any {
	out := map[string]any{}
	for _, name := range slices.Sorted(maps.Keys(doc.Components.Responses)) {
		for mt, media := range doc.Components.Responses[name].Value.Content {
			if media.Schema == nil || media.Schema.Ref != "#/components/schemas/"+schema {
				continue
			}
			for ex, v := range media.Examples {
				out[name+" "+mt+" "+ex] = v.Value.Value
			}
		}
	}
	return out
}

// TestSpecRepresentationsDecode: every representation among the contract's examples, served
// by GET /v1/operations/{id}, comes out of Get as an Operation with the example's typed
// state, version, result, problem and progress, and the headers' ETag and Retry-After; and
// it decodes into Operation with encoding/json with no member left over and encodes back to
// the same JSON.
func TestSpecRepresentationsDecode(t *testing.T) {
	doc := ct.Contract(t)
	examples := examplesOf(doc, "Operation")
	if len(examples) < 3 {
		t.Fatalf("only %d representation examples in the contract", len(examples))
	}
	for name, value := range examples {
		t.Run(name, func(t *testing.T) {
			want := value.(map[string]any)
			ct.RoundTrip(t, name, reflect.TypeFor[client.Operation](), value)

			_, srv := newScript(t, []string{"/v1/operations/" + want["operationId"].(string)}, func(w http.ResponseWriter, r *http.Request) {
				retry := -1
				if !want["terminal"].(bool) {
					retry = 2
				}
				writeRep(w, want, retry)
			})
			op, err := newClient(t, srv, newClock(), nil).Get(context.Background(), want["operationId"].(string))
			if err != nil {
				t.Fatal(err)
			}
			checkDecoded(t, op, want)
			if op.ETag != fmt.Sprintf(`"%v"`, want["version"]) {
				t.Errorf("ETag %q", op.ETag)
			}
			if wantRetry := map[bool]time.Duration{true: 0, false: 2 * time.Second}[want["terminal"].(bool)]; op.RetryAfter != wantRetry {
				t.Errorf("RetryAfter %v, want %v", op.RetryAfter, wantRetry)
			}
			if op.RequestID != "req_poll" {
				t.Errorf("RequestID %q", op.RequestID)
			}
		})
	}
}

// checkDecoded compares an Operation with the JSON it was decoded from, field by typed field.
func checkDecoded(t *testing.T, op *client.Operation, want map[string]any) {
	t.Helper()
	if op.OperationID != want["operationId"] || op.Type != want["type"] || op.Target != want["target"] || op.StatusURL != want["statusUrl"] {
		t.Errorf("identity: %+v, want %v", op, want)
	}
	if !op.State.Valid() || string(op.State) != want["state"] {
		t.Errorf("state %q, want %v", op.State, want["state"])
	}
	if v, ok := want["terminal"]; ok && (op.Terminal != v || op.State.IsTerminal() != v) {
		t.Errorf("terminal %t (IsTerminal %t), want %v", op.Terminal, op.State.IsTerminal(), v)
	}
	if v, ok := want["version"]; ok && float64(op.Version) != toFloat(v) {
		t.Errorf("version %d, want %v", op.Version, v)
	}
	// The example's times are parsed, never taken as zero: a zero would equal a time that
	// was not decoded at all.
	created, err := time.Parse(time.RFC3339, fmt.Sprint(want["createdAt"]))
	if err != nil {
		t.Fatalf("the example's createdAt: %v", err)
	}
	if op.CreatedAt.IsZero() || !op.CreatedAt.Equal(created) {
		t.Errorf("createdAt %v, want %v", op.CreatedAt, want["createdAt"])
	}
	if s, ok := want["updatedAt"].(string); ok {
		updated, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatalf("the example's updatedAt: %v", err)
		}
		if op.UpdatedAt.IsZero() || !op.UpdatedAt.Equal(updated) {
			t.Errorf("updatedAt %v, want %s", op.UpdatedAt, s)
		}
	}
	if s, ok := want["observedAt"].(string); ok {
		observed, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatalf("the example's observedAt: %v", err)
		}
		if op.ObservedAt == nil || op.ObservedAt.IsZero() || !op.ObservedAt.Equal(observed) {
			t.Errorf("observedAt %v, want %s", op.ObservedAt, s)
		}
	} else if op.ObservedAt != nil {
		t.Errorf("observedAt %v, want null", op.ObservedAt)
	}
	if r, ok := want["result"]; ok {
		var got any
		if err := op.DecodeResult(&got); err != nil || !reflect.DeepEqual(normalize(t, got), normalize(t, r)) {
			t.Errorf("result %v (%v), want %v", got, err, r)
		}
	} else if err := op.DecodeResult(new(any)); err == nil || len(op.Result) != 0 {
		t.Errorf("a %s operation has a result: %s", op.State, op.Result)
	}
	if p, ok := want["problem"].(map[string]any); ok {
		if op.Problem == nil || op.Problem.Code != p["code"] || op.Problem.Detail != p["detail"] || op.Problem.Title != p["title"] || op.Problem.Type != p["type"] {
			t.Errorf("problem %+v, want %v", op.Problem, p)
		}
	} else if op.Problem != nil {
		t.Errorf("problem %+v, want none", op.Problem)
	}
	if p, ok := want["progress"].(map[string]any); ok {
		g := op.Progress
		if g == nil || float64(g.CompletedSteps) != toFloat(p["completedSteps"]) ||
			(g.TotalSteps == nil) != (p["totalSteps"] == nil) || (g.TotalSteps != nil && float64(*g.TotalSteps) != toFloat(p["totalSteps"])) ||
			(g.Percent == nil) != (p["percent"] == nil) || (g.Percent != nil && *g.Percent != toFloat(p["percent"])) ||
			(g.Message == nil) != (p["message"] == nil) || (g.Message != nil && *g.Message != p["message"]) {
			t.Errorf("progress %+v, want %v", g, p)
		}
	} else if op.Progress != nil {
		t.Errorf("progress %+v, want none", op.Progress)
	}
	if a, ok := want["awaiting"].(map[string]any); ok {
		since, err1 := time.Parse(time.RFC3339, fmt.Sprint(a["since"]))
		until, err2 := time.Parse(time.RFC3339, fmt.Sprint(a["until"]))
		if err1 != nil || err2 != nil {
			t.Fatalf("the example's awaiting: %v %v", err1, err2)
		}
		if w := op.Awaiting; w == nil || w.Signal != a["signal"] || w.Since.IsZero() || !w.Since.Equal(since) || !w.Until.Equal(until) {
			t.Errorf("awaiting %+v, want %v", w, a)
		}
	} else if op.Awaiting != nil {
		t.Errorf("awaiting %+v, want none", op.Awaiting)
	}
}

func toFloat(v any) float64 {
	switch n := v.(type) {
	case float64:
		return n
	case int:
		return float64(n)
	case int64:
		return float64(n)
	case uint64:
		return float64(n)
	}
	return -1
}

// normalize is v as encoding/json would decode it (numbers as float64).
func normalize(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestEveryEndStateDecodes: the states the contract has no example of come out typed too,
// each problem and result where it belongs, and Err tells the ends apart.
func TestEveryEndStateDecodes(t *testing.T) {
	for _, state := range []client.State{client.StateAccepted, client.StateDispatched, client.StateRunning, client.StateCancelling,
		client.StateSucceeded, client.StateFailed, client.StateCanceled, client.StateOutcomeUnknown} {
		t.Run(string(state), func(t *testing.T) {
			want := rep(state, 3)
			b, _ := json.Marshal(want)
			var op client.Operation
			if err := json.Unmarshal(b, &op); err != nil {
				t.Fatal(err)
			}
			checkDecoded(t, &op, normalize(t, want).(map[string]any))
			wantDone := state.IsTerminal() || state == client.StateOutcomeUnknown
			if op.State.IsDone() != wantDone {
				t.Errorf("IsDone %t", op.State.IsDone())
			}
			err := op.Err()
			var oe *client.OperationError
			switch state {
			case client.StateFailed, client.StateOutcomeUnknown:
				if !errors.As(err, &oe) || oe.State != state || oe.Problem == nil || oe.Problem.Code != op.Problem.Code || oe.OperationID != opID {
					t.Errorf("Err() = %v", err)
				}
			case client.StateCanceled:
				if !errors.As(err, &oe) || oe.State != state || oe.Problem != nil {
					t.Errorf("Err() = %v", err)
				}
			default:
				if err != nil {
					t.Errorf("Err() = %v, want nil", err)
				}
			}
		})
	}
}

// TestSpecAdmissionExampleDecodes: the contract's 202 examples come out of Create as an
// accepted Operation with the Location, the key and the replay flag.
func TestSpecAdmissionExampleDecodes(t *testing.T) {
	doc := ct.Contract(t)
	examples := examplesOf(doc, "Accepted")
	if len(examples) == 0 {
		t.Fatal("no admission examples in the contract")
	}
	for name, value := range examples {
		t.Run(name, func(t *testing.T) {
			want := value.(map[string]any)
			_, srv := newScript(t, []string{"/v1/operations"}, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("Location", want["statusUrl"].(string))
				w.Header().Set("Retry-After", "1")
				w.Header().Set("Idempotent-Replayed", "true")
				w.WriteHeader(http.StatusAccepted)
				_ = json.NewEncoder(w).Encode(want)
			})
			op, err := newClient(t, srv, newClock(), nil).Create(context.Background(), client.CreateRequest{Type: "export.orders", Key: "k-1"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			checkDecoded(t, op, want)
			if op.Location != want["statusUrl"] || !op.Replayed || op.IdempotencyKey != "k-1" || op.RetryAfter != time.Second || op.Version != 0 {
				t.Errorf("admission metadata: %+v", op)
			}
		})
	}
}

// errorCodes is the contract's ErrorCode enum, and statusOf the status the Problem schema's
// rules tie each code to.
func errorCodes(t *testing.T, doc *openapi3.T) (codes []string, statusOf map[string]int) {
	t.Helper()
	for _, v := range doc.Components.Schemas["ErrorCode"].Value.Enum {
		codes = append(codes, v.(string))
	}
	statusOf = map[string]int{}
	for _, rule := range doc.Components.Schemas["Problem"].Value.AllOf {
		r := rule.Value
		if r.If == nil || r.Then == nil {
			continue
		}
		code := r.If.Value.Properties["code"].Value.Const
		status := r.Then.Value.Properties["status"].Value.Const
		if code != nil && status != nil {
			statusOf[code.(string)] = int(toFloat(status))
		}
	}
	if len(codes) < 10 {
		t.Fatalf("the contract's ErrorCode has only %d codes", len(codes))
	}
	return codes, statusOf
}

// TestEveryProblemCodeDecodes: each code of the contract's ErrorCode enum, answered with the
// status the contract ties it to, is a *ProblemError with that Code and Status (IsCode
// agrees, Retry-After is read).
func TestEveryProblemCodeDecodes(t *testing.T) {
	doc := ct.Contract(t)
	codes, statusOf := errorCodes(t, doc)
	for _, code := range codes {
		t.Run(code, func(t *testing.T) {
			c := client.ErrorCode(code)
			if !c.Valid() {
				t.Errorf("ErrorCode(%q).Valid() is false", code)
			}
			if problemStatus[c] != statusOf[code] || statusOf[code] == 0 {
				t.Fatalf("status of %s: the contract says %d, the tests' table %d", code, statusOf[code], problemStatus[c])
			}
			_, srv := newScript(t, []string{"/v1/operations/" + opID}, func(w http.ResponseWriter, r *http.Request) {
				writeProblem(w, c, 7, "detail of "+code)
			})
			cl := newClient(t, srv, newClock(), func(o *client.ClientOptions) { o.Retry.MaxAttempts = 1 })
			_, err := cl.Get(context.Background(), opID)
			var pe *client.ProblemError
			if !errors.As(err, &pe) {
				t.Fatalf("Get: %v (%T), want a *ProblemError", err, err)
			}
			if pe.Code != c || pe.Status != statusOf[code] || !client.IsCode(err, c) || client.IsCode(err, "other") {
				t.Errorf("got code %q status %d, want %q %d", pe.Code, pe.Status, code, statusOf[code])
			}
			if pe.Detail != "detail of "+code || pe.RequestID != "req_problem" || pe.RetryAfter != 7*time.Second || pe.Type != "https://longrun.dev/problems/"+code {
				t.Errorf("problem %+v", pe)
			}
			if strings.Contains(code, "idempotency_key_reused") && pe.OperationID != opID {
				t.Errorf("operationId %q", pe.OperationID)
			}
		})
	}
}

// constants maps the value of every constant of type typ declared in file to its name.
func constants(t *testing.T, file, typ string) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			v := s.(*ast.ValueSpec)
			if id, ok := v.Type.(*ast.Ident); !ok || id.Name != typ || len(v.Values) != 1 {
				continue
			}
			if lit, ok := v.Values[0].(*ast.BasicLit); ok {
				out[strings.Trim(lit.Value, `"`)] = v.Names[0].Name
			}
		}
	}
	return out
}

// TestSpecProblemExamplesDecode: every problem among the contract's examples comes out as a
// *ProblemError with its code, title, detail, request id, operation id and fields.
func TestSpecProblemExamplesDecode(t *testing.T) {
	doc := ct.Contract(t)
	n := 0
	for _, name := range slices.Sorted(maps.Keys(doc.Components.Responses)) {
		media := doc.Components.Responses[name].Value.Content["application/problem+json"]
		if media == nil {
			continue
		}
		for ex, v := range media.Examples {
			n++
			want := v.Value.Value.(map[string]any)
			t.Run(name+"/"+ex, func(t *testing.T) {
				_, srv := newScript(t, []string{"/v1/operations/" + opID}, func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Content-Type", "application/problem+json")
					w.WriteHeader(int(toFloat(want["status"])))
					_ = json.NewEncoder(w).Encode(want)
				})
				cl := newClient(t, srv, newClock(), func(o *client.ClientOptions) { o.Retry.MaxAttempts = 1 })
				_, err := cl.Get(context.Background(), opID)
				var pe *client.ProblemError
				if !errors.As(err, &pe) {
					t.Fatalf("%v", err)
				}
				if string(pe.Code) != want["code"] || pe.Title != want["title"] || pe.Detail != want["detail"] ||
					pe.RequestID != want["requestId"] || float64(pe.Status) != toFloat(want["status"]) || pe.Type != want["type"] {
					t.Errorf("got %+v, want %v", pe, want)
				}
				if id, _ := want["operationId"].(string); pe.OperationID != id {
					t.Errorf("operationId %q, want %q", pe.OperationID, id)
				}
				wantFields, _ := want["errors"].([]any)
				if len(pe.Fields) != len(wantFields) {
					t.Fatalf("fields %+v, want %v", pe.Fields, wantFields)
				}
				for i, f := range wantFields {
					f := f.(map[string]any)
					if pe.Fields[i].Pointer != f["pointer"] || pe.Fields[i].Detail != f["detail"] {
						t.Errorf("field %d: %+v, want %v", i, pe.Fields[i], f)
					}
				}
			})
		}
	}
	if n < 5 {
		t.Errorf("only %d problem examples", n)
	}
}

// TestErrorsThatAreNotProblems: an answer from something in front of the API (API Gateway's
// own JSON, a proxy's HTML) is a *ProblemError with its status, no code and what it said.
func TestErrorsThatAreNotProblems(t *testing.T) {
	_, srv := newScript(t, []string{"/v1/operations/" + opID},
		func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("x-amzn-ErrorType", "IncompleteSignatureException")
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write([]byte(`{"message":"Missing Authentication Token"}`))
		},
		func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusBadGateway)
			_, _ = w.Write([]byte("<html>bad gateway</html>"))
		})
	cl := newClient(t, srv, newClock(), func(o *client.ClientOptions) { o.Retry.MaxAttempts = 1 })
	for _, want := range []struct {
		status int
		detail string
	}{{403, "Missing Authentication Token"}, {502, "<html>bad gateway</html>"}} {
		_, err := cl.Get(context.Background(), opID)
		var pe *client.ProblemError
		if !errors.As(err, &pe) || pe.Status != want.status || pe.Code != "" || pe.Detail != want.detail {
			t.Errorf("got %#v, want status %d detail %q", err, want.status, want.detail)
		}
	}
}
