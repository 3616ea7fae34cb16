package recorder

import (
	"bytes"
	"encoding/json"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/longrun-dev/longrun/internal/core/operation"
	"github.com/longrun-dev/longrun/internal/core/step"
)

// The protocol's report vectors (api/worker/vectors/reports, README.md there) say what longrun
// records for a worker's answer; every SDK holds its own reading of reports to them. This is
// the recorder's side: stepEnd, the mapping from a step's report to what is recorded, gives
// exactly each vector's recorder member.
func TestReportVectorsAreWhatTheRecorderRecords(t *testing.T) {
	t.Parallel()
	paths, err := filepath.Glob(filepath.Join("..", "..", "..", "api", "worker", "vectors", "reports", "*.json"))
	if err != nil || len(paths) < 150 {
		t.Fatalf("%d report vectors: %v", len(paths), err)
	}
	req := &step.Request{OperationID: "op_01JDY3Q4W5E6R7T8Y9V0A1B2C3", Step: 3, StepTimeoutSeconds: 60}
	for _, path := range paths {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".json"), func(t *testing.T) {
			t.Parallel()
			file, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var v struct {
				Report     json.RawMessage `json:"report"`
				ReportText *string         `json:"reportText"`
				Recorder   json.RawMessage `json:"recorder"`
			}
			if err := json.Unmarshal(file, &v); err != nil {
				t.Fatal(err)
			}
			payload := []byte(v.Report)
			if v.ReportText != nil {
				payload = []byte(*v.ReportText)
			}
			got := recorded(t, stepEnd(Input{Task: &Task{Report: payload}}, req), payload, req.Step)
			if !sameValue(t, got, v.Recorder) {
				t.Fatalf("recorded\n%s\nwant\n%s", got, v.Recorder)
			}
		})
	}
}

// recorded is e, the end of step n whose report was payload, in the vectors' terms.
func recorded(t *testing.T, e end, payload []byte, n int) []byte {
	t.Helper()
	if e.refused != "" {
		t.Fatalf("refused: %s", e.refused)
	}
	// What stepEnd read. The fact keeps the worker's progress as operation.Progress, which
	// does not tell an empty progress from none, so the vectors' progress is read from the
	// report (held to the fact below).
	rep, parseErr := step.ParseReportCuttingText(payload)
	var progress any
	if p := rep.Progress; p != nil {
		view := map[string]any{"totalSteps": nil, "percent": p.Percent, "message": p.Message}
		if p.TotalSteps != 0 {
			view["totalSteps"] = p.TotalSteps
		}
		progress = view
	}
	problem := func(p *operation.Problem) any {
		if p == nil {
			return nil
		}
		if p.Type != "https://longrun.dev/problems/"+p.Code {
			t.Errorf("problem type %s for the code %s", p.Type, p.Code)
		}
		return map[string]any{"code": p.Code, "title": p.Title, "detail": p.Detail}
	}
	var view map[string]any
	switch {
	case e.cont != nil:
		c := e.cont
		var state, delay, await any
		if c.State != nil {
			state = c.State
		}
		if c.DelaySeconds != nil {
			delay = *c.DelaySeconds
		}
		if c.Await != nil {
			await = map[string]any{"signal": c.Await.Signal, "timeoutSeconds": c.Await.TimeoutSeconds}
		}
		view = map[string]any{"kind": "continue", "state": state, "progress": progress, "delaySeconds": delay, "wait": c.Wait, "await": await}
	case e.fact == nil:
		t.Fatal("neither a fact nor a continue")
	default:
		f := e.fact
		if f.Source != operation.SourceExecutor {
			t.Errorf("a fact from %s", f.Source)
		}
		// The worker's progress, as the fact keeps it: after step n for a succeeded step, the
		// steps before it for a failed one; none with an unknown outcome.
		want := map[operation.Kind]int{operation.KindSucceeded: n, operation.KindFailed: n - 1}
		switch completed, keeps := want[f.Kind]; {
		case !keeps || f.Kind == operation.KindFailed && rep.Progress == nil:
			if f.Progress != nil {
				t.Errorf("a %s fact keeps the progress %+v", f.Kind, *f.Progress)
			}
		case f.Progress == nil:
			t.Errorf("a %s fact keeps no progress", f.Kind)
		default:
			p := rep.Progress
			if p == nil {
				p = &step.Progress{}
			}
			if got := *f.Progress; got.CompletedSteps != completed || got.TotalSteps != p.TotalSteps || got.Message != p.Message ||
				(got.Percent == nil) != (p.Percent == nil) || got.Percent != nil && *got.Percent != *p.Percent {
				t.Errorf("a %s fact keeps the progress %+v; the report says %+v", f.Kind, got, *p)
			}
		}
		switch f.Kind {
		case operation.KindSucceeded:
			view = map[string]any{"kind": "succeeded", "result": f.Result, "progress": progress}
		case operation.KindFailed:
			view = map[string]any{"kind": "failed", "problem": problem(f.Problem), "progress": progress}
		case operation.KindOutcomeUnknown:
			view = map[string]any{"kind": "outcome_unknown", "code": f.Problem.Code, "problem": nil, "progress": nil}
			if parseErr == nil { // the worker's own report: its problem, if it gave one, and its progress
				if rep.Problem != nil {
					view["problem"] = problem(f.Problem)
				}
				view["progress"] = progress
			}
		default:
			t.Fatalf("a %s fact", f.Kind)
		}
	}
	b, err := json.Marshal(view)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sameValue reports whether a and b are the same JSON value: member order and spacing aside,
// numbers compared exactly as decimals, and a zero's sign kept.
func sameValue(t *testing.T, a, b []byte) bool {
	t.Helper()
	decode := func(b []byte) any {
		d := json.NewDecoder(bytes.NewReader(b))
		d.UseNumber()
		var v any
		if err := d.Decode(&v); err != nil {
			t.Fatalf("%.80s: %v", b, err)
		}
		return v
	}
	return equalJSON(decode(a), decode(b))
}

func equalJSON(x, y any) bool {
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
			if w, ok := y[k]; !ok || !equalJSON(v, w) {
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
			if !equalJSON(x[i], y[i]) {
				return false
			}
		}
		return true
	default:
		return x == y
	}
}
