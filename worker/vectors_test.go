package worker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/longrun-dev/longrun/worker"
)

// The protocol's test vectors (api/worker/vectors/README.md), which every implementation of
// the protocol runs: longrun's recorder runs the reports (internal/service/recorder), and
// this package runs all three folders.
var vectorDir = filepath.Join("..", "api", "worker", "vectors")

// vector is one vector file: its members, by name, as written.
type vector struct {
	name    string
	members map[string]json.RawMessage
}

// vectors reads every vector of folder, holding each to the members its folder allows.
func vectors(t *testing.T, folder string, required, optional []string) []vector {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(vectorDir, folder, "*.json"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no vectors in %s: %v", folder, err)
	}
	var out []vector
	for _, path := range paths {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		for _, k := range required {
			if _, ok := m[k]; !ok {
				t.Errorf("%s: no %s", path, k)
			}
		}
		for k := range m {
			if !slices.Contains(required, k) && !slices.Contains(optional, k) {
				t.Errorf("%s: %s is not a member of a %s vector", path, k, folder)
			}
		}
		out = append(out, vector{strings.TrimSuffix(filepath.Base(path), ".json"), m})
	}
	return out
}

// document is the vector's JSON document held in member (or, for text that is not JSON, as
// the string in member+"Text"), exactly as written.
func (v vector) document(t *testing.T, member string) []byte {
	t.Helper()
	raw, isJSON := v.members[member]
	text, isText := v.members[member+"Text"]
	if isJSON == isText {
		t.Fatalf("%s: want one of %s and %sText", v.name, member, member)
	}
	if isJSON {
		return raw
	}
	var s string
	if err := json.Unmarshal(text, &s); err != nil {
		t.Fatalf("%s: %sText: %v", v.name, member, err)
	}
	return []byte(s)
}

func (v vector) bool(t *testing.T, member string) bool {
	t.Helper()
	var b bool
	if err := json.Unmarshal(v.members[member], &b); err != nil {
		t.Fatalf("%s: %s: %v", v.name, member, err)
	}
	return b
}

func (v vector) tagged(tag string) bool {
	var tags []string
	_ = json.Unmarshal(v.members["tags"], &tags)
	return slices.Contains(tags, tag)
}

// sameValue reports whether a and b are the same JSON value: member order and spacing aside,
// numbers compared exactly as decimals (1e3 is 1000, 30.0 is 30), and a zero's sign kept
// (-0 is not what a vector means by 0).
func sameValue(a, b []byte) (bool, error) {
	x, err := decodeExact(a)
	if err != nil {
		return false, err
	}
	y, err := decodeExact(b)
	if err != nil {
		return false, err
	}
	return equalValues(x, y), nil
}

func decodeExact(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, fmt.Errorf("%.80s: %w", b, err)
	}
	return v, nil
}

func equalValues(x, y any) bool {
	switch x := x.(type) {
	case json.Number:
		y, ok := y.(json.Number)
		if !ok {
			return false
		}
		a, okA := new(big.Rat).SetString(string(x))
		b, okB := new(big.Rat).SetString(string(y))
		return okA && okB && a.Cmp(b) == 0 && (a.Sign() != 0 || strings.HasPrefix(string(x), "-") == strings.HasPrefix(string(y), "-"))
	case map[string]any:
		y, ok := y.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !equalValues(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := y.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equalValues(x[i], y[i]) {
				return false
			}
		}
		return true
	default:
		return x == y
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// requests/*: Handler gives the Func of a valid request exactly the vector's view of the
// step, and answers an invalid one with a failed invalid_request report without running the
// Func. (api/workervectors_test.go holds each vector's schemaValid to the schema.)
func TestRequestVectors(t *testing.T) {
	all := vectors(t, "requests", []string{"description", "valid", "schemaValid"}, []string{"tags", "request", "requestText", "error", "step"})
	if len(all) < 30 {
		t.Fatalf("only %d request vectors", len(all))
	}
	var got worker.Step
	var input json.RawMessage
	ran := false
	h := worker.Handler(func(_ context.Context, st worker.Step, in json.RawMessage) (worker.Report, error) {
		got, input, ran = st, in, true
		return worker.Succeed(nil), nil
	})
	for _, v := range all {
		t.Run(v.name, func(t *testing.T) {
			payload := v.document(t, "request")
			valid, schemaValid := v.bool(t, "valid"), v.bool(t, "schemaValid")
			_, hasStep := v.members["step"]
			_, hasError := v.members["error"]
			switch {
			case valid != hasStep || valid == hasError:
				t.Errorf("valid %v with a step %v and an error %v", valid, hasStep, hasError)
			case !valid && schemaValid:
				t.Errorf("an invalid request the schema accepts")
			case valid && !schemaValid && !v.tagged("unknown-members"):
				t.Errorf("a valid request the schema refuses that is not tagged unknown-members")
			}
			ran = false
			out, err := h(context.Background(), payload)
			if err != nil {
				t.Fatalf("the handler fails: %v", err)
			}
			if !valid {
				var rep worker.Report
				if ran || json.Unmarshal(out, &rep) != nil || rep.Status() != worker.StatusFailed || rep.Problem().Code != worker.CodeInvalidRequest {
					t.Fatalf("answered %s (the Func ran: %v), want a failed invalid_request report", out, ran)
				}
				return
			}
			if !ran || string(out) != `{"status":"succeeded"}` {
				t.Fatalf("answered %s (the Func ran: %v)", out, ran)
			}
			if same, err := sameValue(mustJSON(t, stepView(t, got, input)), v.members["step"]); err != nil || !same {
				t.Errorf("the Func is given\n%s\nwant\n%s (%v)", mustJSON(t, stepView(t, got, input)), v.members["step"], err)
			}
		})
	}
}

// stepView is what the Func was given, in the vectors' terms.
func stepView(t *testing.T, s worker.Step, input json.RawMessage) map[string]any {
	var state json.RawMessage
	carried, err := s.State(&state)
	if err != nil {
		t.Fatal(err)
	}
	var stateView any
	if carried {
		stateView = state
	}
	signals := []any{}
	for _, sig := range s.Signals {
		m := map[string]any{"name": sig.Name, "data": sig.Data, "receivedAt": sig.ReceivedAt.UTC().Format("2006-01-02T15:04:05.000Z"), "via": sig.Via}
		if sig.Sender != "" {
			m["sender"] = sig.Sender
		}
		signals = append(signals, m)
	}
	var awaited any
	if s.Awaited != nil {
		awaited = s.Awaited
	}
	callbacks := worker.CallbacksOf(s)
	if callbacks == nil {
		callbacks = map[string]string{}
	}
	if s.StepTimeout%time.Second != 0 {
		t.Fatalf("a step timeout of %v", s.StepTimeout)
	}
	return map[string]any{
		"operationId": s.OperationID, "type": s.Type, "version": s.Version, "number": s.Number, "maxSteps": s.MaxSteps,
		"attempt": s.Attempt, "deadline": s.Deadline.UTC().Format("2006-01-02T15:04:05.000Z"),
		"stepTimeoutSeconds": int(s.StepTimeout / time.Second), "correlationId": s.CorrelationID, "input": input,
		"state": stateView, "signals": signals, "awaited": awaited, "callbacks": callbacks,
	}
}

// reports/*: the package reads a report (Report's UnmarshalJSON, which Run's check of a
// Func's report agrees with) exactly as longrun's recorder does: it refuses what the
// recorder records as invalid_report, and reads every other report as the recorder does,
// over-long text cut.
func TestReportVectors(t *testing.T) {
	all := vectors(t, "reports", []string{"description", "schemaValid", "recorder"}, []string{"tags", "report", "reportText"})
	if len(all) < 150 {
		t.Fatalf("only %d report vectors", len(all))
	}
	kinds := map[string]int{}
	for _, v := range all {
		t.Run(v.name, func(t *testing.T) {
			payload := v.document(t, "report")
			var want struct {
				Kind string `json:"kind"`
				Code string `json:"code"`
			}
			if err := json.Unmarshal(v.members["recorder"], &want); err != nil {
				t.Fatal(err)
			}
			invalid := want.Kind == "outcome_unknown" && want.Code == "invalid_report"
			kinds[want.Kind+" "+want.Code]++
			schemaValid := v.bool(t, "schemaValid")
			// The schema and the recorder part only where the schema cannot follow: text over its
			// limit (the recorder cuts it) and sizes (the schema cannot measure them).
			if cut := !schemaValid && !invalid; cut != v.tagged("text-cut") {
				t.Errorf("schemaValid %v, invalid_report %v: tagged text-cut %v", schemaValid, invalid, v.tagged("text-cut"))
			}
			if schemaValid && invalid && !v.tagged("size-limit") {
				t.Errorf("an invalid report the schema accepts that is not tagged size-limit")
			}
			var rep worker.Report
			err := json.Unmarshal(payload, &rep)
			if invalid {
				if err == nil {
					t.Fatalf("read as %s", mustJSON(t, reportView(rep)))
				}
				return
			}
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			if same, err := sameValue(mustJSON(t, reportView(rep)), v.members["recorder"]); err != nil || !same {
				t.Fatalf("read as\n%s\nwant\n%s (%v)", mustJSON(t, reportView(rep)), v.members["recorder"], err)
			}
			// What was read goes out again (valid under the schema: api/workervectors_test.go),
			// and reads back the same.
			again, err := json.Marshal(rep)
			if err != nil {
				t.Fatal(err)
			}
			var back worker.Report
			if err := json.Unmarshal(again, &back); err != nil || !bytes.Equal(mustJSON(t, reportView(back)), mustJSON(t, reportView(rep))) {
				t.Errorf("written again as %.200s, read back as %s (%v)", again, mustJSON(t, reportView(back)), err)
			}
		})
	}
	for _, k := range []string{"continue ", "succeeded ", "failed ", "outcome_unknown result_lost", "outcome_unknown invalid_report"} {
		if kinds[k] == 0 {
			t.Errorf("no report vector recorded as %s", k)
		}
	}
}

// reportView is a report as the vectors' recorder member says it.
func reportView(r worker.Report) map[string]any {
	var progress any
	if p := r.Progress(); p != nil {
		view := map[string]any{"totalSteps": nil, "percent": p.Percent, "message": p.Message}
		if p.TotalSteps != 0 {
			view["totalSteps"] = p.TotalSteps
		}
		progress = view
	}
	problem := func(p *worker.Problem) any {
		if p == nil {
			return nil
		}
		return map[string]any{"code": p.Code, "title": p.Title, "detail": p.Detail}
	}
	switch r.Status() {
	case worker.StatusContinue:
		var state, delay, wait, await any = nil, nil, r.WaitsStepDelay(), nil
		if r.State() != nil {
			state = r.State()
		}
		if d, ok := r.Delay(); ok {
			delay = int(d / time.Second)
		}
		if name, timeout, ok := r.AwaitsSignal(); ok {
			await = map[string]any{"signal": name, "timeoutSeconds": int(timeout / time.Second)}
		}
		return map[string]any{"kind": "continue", "state": state, "progress": progress, "delaySeconds": delay, "wait": wait, "await": await}
	case worker.StatusSucceeded:
		return map[string]any{"kind": "succeeded", "result": r.Result(), "progress": progress}
	case worker.StatusFailed:
		return map[string]any{"kind": "failed", "problem": problem(r.Problem()), "progress": progress}
	}
	code := worker.CodeResultLost
	if p := r.Problem(); p != nil {
		code = p.Code
	}
	return map[string]any{"kind": "outcome_unknown", "code": code, "problem": problem(r.Problem()), "progress": progress}
}

// builds/*: what the package's builders make of what a Func returns is exactly the vector's
// report, or, where the vector says so, an error.
func TestBuildVectors(t *testing.T) {
	all := vectors(t, "builds", []string{"description", "build", "report"}, []string{"tags", "error"})
	if len(all) < 50 {
		t.Fatalf("only %d build vectors", len(all))
	}
	for _, v := range all {
		t.Run(v.name, func(t *testing.T) {
			rep := build(t, v.members["build"])
			out, err := json.Marshal(rep)
			want := v.members["report"]
			_, hasError := v.members["error"]
			if string(want) == "null" {
				if !hasError {
					t.Fatal("report null without an error")
				}
				if err == nil {
					t.Fatalf("built %s; want an error (%s)", out, v.members["error"])
				}
				return
			}
			if hasError {
				t.Fatal("an error with a report")
			}
			if err != nil {
				t.Fatalf("the build fails: %v", err)
			}
			if same, err := sameValue(out, want); err != nil || !same {
				t.Fatalf("built\n%.400s\nwant\n%.400s (%v)", out, want, err)
			}
			// And Handler sends exactly it.
			sent, err := worker.Handler(func(context.Context, worker.Step, any) (worker.Report, error) { return rep, nil })(context.Background(), sample(t, "step-request-first"))
			if err != nil || !bytes.Equal(sent, out) {
				t.Errorf("Handler sends %.200s %v", sent, err)
			}
		})
	}
}

// build makes the report a build vector describes with the package's builders.
func build(t *testing.T, raw json.RawMessage) worker.Report {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	var b struct {
		Status       worker.Status
		State        json.RawMessage
		Result       json.RawMessage
		Progress     json.RawMessage
		DelaySeconds *float64
		Wait         bool
		Await        *struct {
			Signal         string
			TimeoutSeconds float64
		}
		Problem struct{ Code, Title, Detail string }
		Detail  string
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.DisallowUnknownFields() // a vector's typo is no member of a build
	if err := d.Decode(&b); err != nil {
		t.Fatal(err)
	}
	seconds := func(s float64) time.Duration { return time.Duration(math.Round(s * float64(time.Second))) }
	value := func(member string) any { // a JSON value as it was written; absent is nil
		if v, ok := m[member]; ok {
			return v
		}
		return nil
	}
	var rep worker.Report
	switch b.Status {
	case worker.StatusContinue:
		rep = worker.Continue(value("state"))
		if b.Wait {
			rep = rep.Wait()
		}
		if b.DelaySeconds != nil {
			rep = rep.After(seconds(*b.DelaySeconds))
		}
		if b.Await != nil {
			rep = rep.AwaitSignal(b.Await.Signal, seconds(b.Await.TimeoutSeconds))
		}
	case worker.StatusSucceeded:
		rep = worker.Succeed(value("result"))
	case worker.StatusFailed:
		rep = worker.Fail(b.Problem.Code, b.Problem.Title, b.Problem.Detail)
	case worker.StatusOutcomeUnknown:
		rep = worker.ResultLost(b.Detail)
	default:
		t.Fatalf("a build of status %q", b.Status)
	}
	if p, ok := m["progress"]; ok {
		var progress struct {
			TotalSteps int
			Percent    *float64
			Message    string
		}
		d := json.NewDecoder(bytes.NewReader(p))
		d.DisallowUnknownFields()
		if err := d.Decode(&progress); err != nil {
			t.Fatal(err)
		}
		rep = rep.WithProgress(worker.Progress{TotalSteps: progress.TotalSteps, Percent: progress.Percent, Message: progress.Message})
	}
	return rep
}

// Every sample of events/samples/worker is also a vector (a request or a report), so the
// samples and the vectors cannot drift apart.
func TestSamplesAreVectors(t *testing.T) {
	requests := vectors(t, "requests", []string{"description", "valid", "schemaValid"}, []string{"tags", "request", "requestText", "error", "step"})
	reports := vectors(t, "reports", []string{"description", "schemaValid", "recorder"}, []string{"tags", "report", "reportText"})
	paths, err := filepath.Glob(filepath.Join(sampleDir, "*.json"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no samples: %v", err)
	}
	for _, path := range paths {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		all, member := reports, "report"
		if strings.HasPrefix(filepath.Base(path), "step-request-") {
			all, member = requests, "request"
		}
		found := false
		for _, v := range all {
			if doc, ok := v.members[member]; ok {
				if same, _ := sameValue(raw, doc); same {
					found = true
					break
				}
			}
		}
		if !found {
			t.Errorf("the sample %s is no vector", filepath.Base(path))
		}
	}
}
