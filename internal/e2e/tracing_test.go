package e2e

import (
	"bufio"
	"encoding/json"
	"flag"
	"os"
	"testing"
	"time"
)

// tracePath is the file the local stack's functions append their spans to (tracing on for
// the whole suite: the stack is shared and a function reads its settings at start); ""
// when the suite benchmarks, so that its figures are not tracing's, and when it runs elsewhere.
var tracePath string

// suiteTraceFile empties path, the suite's trace file beside its log, and returns it.
func suiteTraceFile(path string) string {
	if !flag.Parsed() {
		flag.Parse()
	}
	if f := flag.Lookup("test.bench"); f != nil && f.Value.String() != "" {
		return ""
	}
	tracePath = path
	_ = os.Remove(tracePath)
	return tracePath
}

// span is one line of the trace file (the OpenTelemetry SDK's span stubs, as stdouttrace
// writes them).
type span struct {
	Name        string
	SpanContext spanContext
	Parent      spanContext
	Links       []struct{ SpanContext spanContext }
	Attributes  []keyValue
	Resource    []keyValue
}

type spanContext struct{ TraceID, SpanID string }

type keyValue struct {
	Key   string
	Value struct{ Value any }
}

func (s span) attr(key string) string {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			v, _ := kv.Value.Value.(string)
			return v
		}
	}
	return ""
}

func (s span) service() string {
	for _, kv := range s.Resource {
		if kv.Key == "service.name" {
			v, _ := kv.Value.Value.(string)
			return v
		}
	}
	return ""
}

func (s span) linksTo(o span) bool {
	for _, l := range s.Links {
		if l.SpanContext == o.SpanContext {
			return true
		}
	}
	return false
}

// readSpans reads every span of the trace file; a line that is not one whole span fails.
func readSpans(t *testing.T) []span {
	t.Helper()
	f, err := os.Open(tracePath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []span
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var s span
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil || s.SpanContext.SpanID == "" {
			t.Fatalf("line %d of %s is not a span: %v\n%.300s", len(out)+1, tracePath, err, sc.Bytes())
		}
		out = append(out, s)
	}
	return out
}

// With tracing on (to a file locally), one operation's admission (api) and its dispatch
// (dispatcher) are spans, each under its invocation's span and over its AWS calls' spans,
// and the dispatch links to the admission: the stream between them carries the link.
func TestTracingLinksTheAdmissionToItsDispatch(t *testing.T) {
	t.Parallel()
	if stack.local == nil || tracePath == "" {
		return // the trace file is the local stack's
	}
	const callerTrace = "0af7651916cd43dd8448eb211c80319c"
	c := alice(t)
	id := c.runTraced(`{"type":"demo.task","input":{"target":"e2e-tracing"}}`, "00-"+callerTrace+"-b7ad6b7169203331-01")

	var admission, dispatch, run span
	var spans []span
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		spans = readSpans(t)
		admission, dispatch, run = span{}, span{}, span{}
		for _, s := range spans {
			switch {
			case s.attr("longrun.operation.id") != id:
			case s.Name == "POST /v1/operations":
				admission = s
			case s.Name == "dispatch":
				dispatch = s
			case s.Name == "run": // the recorder's span ends as its Run returns, after the outcome
				run = s
			}
		}
		if admission.Name != "" && dispatch.Name != "" && run.Name != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("spans of %s: admission %+v, dispatch %+v (of %d in %s)", id, admission, dispatch, len(spans), tracePath)
		}
	}

	if admission.service() != "longrun-api" || dispatch.service() != "longrun-dispatcher" {
		t.Errorf("services %q and %q", admission.service(), dispatch.service())
	}
	if len(admission.Links) != 1 || admission.Links[0].SpanContext.TraceID != callerTrace {
		t.Errorf("the admission span links to %+v, not the caller's trace", admission.Links)
	}
	if !dispatch.linksTo(admission) || dispatch.Links[0].SpanContext.TraceID != admission.SpanContext.TraceID {
		t.Errorf("the dispatch span links to %+v, not the admission span %+v", dispatch.Links, admission.SpanContext)
	}
	if admission.attr("longrun.admission.outcome") != "created" {
		t.Errorf("admission outcome %q", admission.attr("longrun.admission.outcome"))
	}
	// Each under its invocation, each over its AWS calls.
	byID := map[string]span{}
	for _, s := range spans {
		byID[s.SpanContext.SpanID] = s
	}
	for _, c := range []struct {
		s        span
		function string
		call     string
	}{{admission, "api", "DynamoDB.TransactWriteItems"}, {dispatch, "dispatcher", "SFN.StartExecution"}} {
		// The invocation's span is named after the function and carries its request id.
		if p, ok := byID[c.s.Parent.SpanID]; !ok || p.Name != c.function || p.attr("faas.invocation_id") == "" ||
			p.service() != c.s.service() || p.SpanContext.TraceID != c.s.SpanContext.TraceID {
			t.Errorf("%s: parent %+v, want the %s invocation's span", c.s.Name, p, c.function)
		}
		found := false
		for _, s := range spans {
			found = found || (s.Name == c.call && s.Parent == c.s.SpanContext)
		}
		if !found {
			t.Errorf("%s: no %s span under it", c.s.Name, c.call)
		}
	}

	// The recorder's Run spans of id link to the dispatch span (the execution input's
	// traceparent).
	runs := 0
	for _, s := range spans {
		if s.service() == "longrun-recorder" && s.Name == "run" && s.attr("longrun.operation.id") == id {
			runs++
			if !s.linksTo(dispatch) {
				t.Errorf("a recorder span of %s links to %+v, not the dispatch span %+v", id, s.Links, dispatch.SpanContext)
			}
		}
	}
	if runs == 0 {
		t.Errorf("no recorder run span for %s", id)
	}
}
