package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/longrun-dev/longrun/internal/testkit/workerschema"
	"github.com/longrun-dev/longrun/worker"
)

// The protocol's files, relative to this package.
var (
	schemaDir = "worker"
	sampleDir = filepath.Join("..", "events", "samples", "worker")
)

func sample(t *testing.T, name string) json.RawMessage {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(sampleDir, name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// schema compiles api/worker/<name>.schema.json.
func schema(t *testing.T, name string) *jsonschema.Schema {
	return workerschema.Compile(t, schemaDir, name)
}

func validate(s *jsonschema.Schema, doc []byte) error { return workerschema.Validate(s, doc) }

func sameJSON(t *testing.T, a, b []byte) bool { return workerschema.SameJSON(t, a, b) }

// Every sample is valid under its schema and survives the Go types unchanged; there is one
// report sample per status, and the request samples are a first step and a later one that
// carries state.
func TestSamplesAreValidAndRoundTrip(t *testing.T) {
	reqSchema, repSchema := schema(t, "step-request"), schema(t, "step-report")
	paths, err := filepath.Glob(filepath.Join(sampleDir, "*.json"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no samples in %s: %v", sampleDir, err)
	}
	statuses := map[worker.Status]string{}
	var first, later bool
	for _, path := range paths {
		name := filepath.Base(path)
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case strings.HasPrefix(name, "step-request-"):
			if err := validate(reqSchema, raw); err != nil {
				t.Errorf("%s: %v", name, err)
			}
			var req worker.Request
			if err := json.Unmarshal(raw, &req); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			again, err := json.Marshal(req)
			if err != nil || !sameJSON(t, raw, again) {
				t.Errorf("%s does not round-trip: %s %v", name, again, err)
			}
			first = first || req.Step == 1 && req.State == nil
			later = later || req.Step > 1 && req.State != nil
		case strings.HasPrefix(name, "step-report-"):
			if err := validate(repSchema, raw); err != nil {
				t.Errorf("%s: %v", name, err)
			}
			var rep worker.Report
			if err := json.Unmarshal(raw, &rep); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			again, err := json.Marshal(rep)
			if err != nil || !sameJSON(t, raw, again) {
				t.Errorf("%s does not round-trip: %s %v", name, again, err)
			}
			if other, dup := statuses[rep.Status()]; dup {
				t.Errorf("%s and %s are both %s", name, other, rep.Status())
			}
			statuses[rep.Status()] = name
			if want := "step-report-" + strings.ReplaceAll(string(rep.Status()), "_", "-") + ".json"; name != want {
				t.Errorf("%s holds a %s report: name it %s", name, rep.Status(), want)
			}
		default:
			t.Errorf("%s is neither a step-request- nor a step-report- sample", name)
		}
	}
	for _, s := range []worker.Status{worker.StatusContinue, worker.StatusSucceeded, worker.StatusFailed, worker.StatusOutcomeUnknown} {
		if statuses[s] == "" {
			t.Errorf("no sample report of status %s", s)
		}
	}
	if !first || !later {
		t.Errorf("request samples: a first step %v, a later step with state %v", first, later)
	}
}

// The Go package and the schema draw the line between a report and not one in the same
// place, so a worker written against either is held to the same protocol.
func TestGoAndTheSchemaAgreeOnReports(t *testing.T) {
	s := schema(t, "step-report")
	str := func(n int, r string) string { return strings.Repeat(r, n) }
	valid := []string{
		`{"status":"continue"}`,
		`{"status":"continue","state":null}`,
		`{"status":"continue","state":[1,"two",{"three":3}],"wait":true,"delaySeconds":0}`,
		`{"status":"continue","delaySeconds":86400}`,
		`{"status":"continue","delaySeconds":30.0}`,
		`{"status":"continue","wait":false}`,
		`{"status":"continue","progress":{"totalSteps":1,"percent":0,"message":"` + str(200, "é") + `"}}`,
		`{"status":"continue","await":{"signal":"approval","timeoutSeconds":259200}}`,
		`{"status":"continue","state":{"n":1},"await":{"timeoutSeconds":1,"signal":"a"},"progress":{}}`,
		`{"status":"continue","await":{"signal":"a` + str(63, "-") + `","timeoutSeconds":2592000}}`,
		`{"status":"continue","await":{"signal":"payment_settled-2","timeoutSeconds":60.0}}`,
		`{"status":"continue","await":{"signal":"a","timeoutSeconds":60},"wait":false}`,
		`{"status":"succeeded"}`,
		`{"status":"succeeded","result":{},"progress":{"percent":100}}`,
		`{"status":"failed","problem":{"code":"a","title":"t"}}`,
		`{"status":"failed","problem":{"code":"a` + str(63, "_") + `","title":"` + str(200, "t") + `","detail":"` + str(2000, "d") + `"}}`,
		`{"status":"outcome_unknown"}`,
		`{"status":"outcome_unknown","problem":{"code":"result_lost","title":"t"},"progress":{}}`,
	}
	invalid := []string{
		`null`, `[]`, `"continue"`, `{}`,
		`{"status":"done"}`,
		`{"status":null}`,
		`{"status":"continue","extra":1}`,
		`{"status":"continue","Status":"continue"}`,
		`{"status":"continue","result":{}}`,
		`{"status":"continue","problem":{"code":"a","title":"t"}}`,
		`{"status":"continue","delaySeconds":86401}`,
		`{"status":"continue","delaySeconds":-1}`,
		`{"status":"continue","delaySeconds":1.5}`,
		`{"status":"continue","delaySeconds":null}`,
		`{"status":"continue","wait":"yes"}`,
		`{"status":"succeeded","state":{}}`,
		`{"status":"succeeded","state":null}`,
		`{"status":"succeeded","result":[]}`,
		`{"status":"succeeded","result":null}`,
		`{"status":"succeeded","result":"ok"}`,
		`{"status":"succeeded","wait":false}`,
		`{"status":"succeeded","delaySeconds":0}`,
		`{"status":"succeeded","problem":{"code":"a","title":"t"}}`,
		`{"status":"failed"}`,
		`{"status":"failed","problem":null}`,
		`{"status":"failed","problem":{"code":"Quota","title":"t"}}`,
		`{"status":"failed","problem":{"code":"_a","title":"t"}}`,
		`{"status":"failed","problem":{"code":"a-b","title":"t"}}`,
		`{"status":"failed","problem":{"code":"a` + str(64, "b") + `","title":"t"}}`,
		`{"status":"failed","problem":{"code":"a"}}`,
		`{"status":"failed","problem":{"title":"t"}}`,
		`{"status":"failed","problem":{"code":"a","title":""}}`,
		`{"status":"failed","problem":{"code":"a","title":"t","detail":null}}`,
		`{"status":"failed","problem":{"code":"a","title":"t","type":"about:blank"}}`,
		`{"status":"failed","problem":{"code":"a","title":"t"},"state":{}}`,
		`{"status":"outcome_unknown","problem":{"code":"a","title":"t"},"result":{}}`,
		`{"status":"outcome_unknown","wait":true}`,
		`{"status":"outcome_unknown","problem":null}`,
		`{"status":"continue","progress":null}`,
		`{"status":"continue","progress":"half"}`,
		`{"status":"continue","progress":{"totalSteps":0}}`,
		`{"status":"continue","progress":{"totalSteps":2.5}}`,
		`{"status":"continue","progress":{"percent":100.5}}`,
		`{"status":"continue","progress":{"percent":-1}}`,
		`{"status":"continue","progress":{"percent":"40"}}`,
		`{"status":"continue","progress":{"completedSteps":2}}`,
		// await
		`{"status":"continue","await":{"signal":"a","timeoutSeconds":1},"wait":true}`,
		`{"status":"continue","await":{"signal":"a","timeoutSeconds":1},"delaySeconds":0}`,
		`{"status":"continue","await":{"signal":"a","timeoutSeconds":1},"delaySeconds":30,"wait":true}`,
		`{"status":"continue","await":{"signal":"a","timeoutSeconds":0}}`,
		`{"status":"continue","await":{"signal":"a","timeoutSeconds":-1}}`,
		`{"status":"continue","await":{"signal":"a","timeoutSeconds":2592001}}`,
		`{"status":"continue","await":{"signal":"a","timeoutSeconds":1.5}}`,
		`{"status":"continue","await":{"signal":"a","timeoutSeconds":"60"}}`,
		`{"status":"continue","await":{"signal":"a","timeoutSeconds":null}}`,
		`{"status":"continue","await":{"signal":"Approval","timeoutSeconds":1}}`,
		`{"status":"continue","await":{"signal":"1a","timeoutSeconds":1}}`,
		`{"status":"continue","await":{"signal":"","timeoutSeconds":1}}`,
		`{"status":"continue","await":{"signal":"a.b","timeoutSeconds":1}}`,
		`{"status":"continue","await":{"signal":"a` + str(64, "b") + `","timeoutSeconds":1}}`,
		`{"status":"continue","await":{"signal":null,"timeoutSeconds":1}}`,
		`{"status":"continue","await":{"signal":"a","timeoutSeconds":1,"data":{}}}`,
		`{"status":"continue","await":{"Signal":"a","timeoutSeconds":1}}`,
		`{"status":"continue","await":{"signal":"a"}}`,
		`{"status":"continue","await":{"timeoutSeconds":1}}`,
		`{"status":"continue","await":{}}`,
		`{"status":"continue","await":null}`,
		`{"status":"continue","await":"approval"}`,
		`{"status":"continue","Await":{"signal":"a","timeoutSeconds":1}}`,
		`{"status":"succeeded","await":{"signal":"a","timeoutSeconds":1}}`,
		`{"status":"failed","problem":{"code":"a","title":"t"},"await":{"signal":"a","timeoutSeconds":1}}`,
	}
	// Text over its length limit, and nothing else wrong: the schema refuses it, but Go reads
	// it as longrun's recorder does, the text cut (TestOverLongTextIsCutNotRefused).
	cut := []string{
		`{"status":"failed","problem":{"code":"a","title":"` + str(201, "t") + `"}}`,
		`{"status":"failed","problem":{"code":"a","title":"t","detail":"` + str(2001, "d") + `"}}`,
		`{"status":"continue","progress":{"message":"` + str(201, "é") + `"}}`,
	}
	for _, doc := range valid {
		if err := validate(s, []byte(doc)); err != nil {
			t.Errorf("schema rejects %.80s: %v", doc, err)
		}
		var rep worker.Report
		if err := json.Unmarshal([]byte(doc), &rep); err != nil {
			t.Errorf("Go rejects %.80s: %v", doc, err)
		}
	}
	for _, doc := range cut {
		if err := validate(s, []byte(doc)); err == nil {
			t.Errorf("schema accepts %.80s", doc)
		}
		var rep worker.Report
		if err := json.Unmarshal([]byte(doc), &rep); err != nil {
			t.Errorf("Go rejects %.80s: %v", doc, err)
		}
		again, err := json.Marshal(rep)
		if err != nil || validate(s, again) != nil {
			t.Errorf("%.80s, read and written again, is not valid: %.80s %v", doc, again, err)
		}
	}
	for _, doc := range invalid {
		if err := validate(s, []byte(doc)); err == nil {
			t.Errorf("schema accepts %.80s", doc)
		}
		var rep worker.Report
		if err := json.Unmarshal([]byte(doc), &rep); err == nil {
			t.Errorf("Go accepts %.80s as %s", doc, rep.Status())
		}
	}
}

// The size limits are beyond a schema: Go holds them, measured as compact JSON.
func TestSizeLimits(t *testing.T) {
	s := schema(t, "step-report")
	text := func(n int) string { return `"` + strings.Repeat("x", n-2) + `"` } // n bytes of JSON
	for _, tc := range []struct {
		doc string
		ok  bool
	}{
		{`{"status":"continue","state":` + text(worker.MaxStateBytes) + `}`, true},
		{`{"status":"continue","state":` + text(worker.MaxStateBytes+1) + `}`, false},
		// Whitespace is not counted: the state is measured as compact JSON.
		{`{"status":"continue","state":[ ` + text(worker.MaxStateBytes-2) + ` ]}`, true},
		{`{"status":"succeeded","result":{"a":` + text(worker.MaxResultBytes-6) + `}}`, true},
		{`{"status":"succeeded","result":{"a":` + text(worker.MaxResultBytes-5) + `}}`, false},
	} {
		if err := validate(s, []byte(tc.doc)); err != nil {
			t.Errorf("schema rejects a %d-byte report: %v", len(tc.doc), err)
		}
		var rep worker.Report
		if err := json.Unmarshal([]byte(tc.doc), &rep); (err == nil) != tc.ok {
			t.Errorf("%d-byte report: want ok %v, got %v", len(tc.doc), tc.ok, err)
		}
	}
	big := map[string]string{"a": strings.Repeat("x", worker.MaxStateBytes)}
	if _, err := worker.Run(context.Background(), func(context.Context, worker.Step, any) (worker.Report, error) {
		return worker.Continue(big), nil
	}, worker.Request{Input: json.RawMessage(`{}`)}); err == nil || !strings.Contains(err.Error(), "state takes") {
		t.Fatalf("a state over the limit: %v", err)
	}
}

// What the constructors build is valid under the schema, and is exactly this JSON.
func TestBuiltReportsAreValid(t *testing.T) {
	s := schema(t, "step-report")
	for _, tc := range []struct {
		rep  worker.Report
		want string
	}{
		{worker.Continue(nil), `{"status":"continue"}`},
		{worker.Continue(map[string]int(nil)), `{"status":"continue"}`},
		{worker.Continue([]int{1, 2}).Wait(), `{"status":"continue","state":[1,2],"wait":true}`},
		{worker.Continue("cursor").After(1500 * time.Millisecond), `{"status":"continue","state":"cursor","delaySeconds":2}`},
		{worker.Continue(nil).Wait().After(0), `{"status":"continue","delaySeconds":0,"wait":true}`},
		{worker.Continue(nil).After(worker.MaxDelay), `{"status":"continue","delaySeconds":86400}`},
		{worker.Continue(map[string]string{"ticket": "CHG-1"}).AwaitSignal("approval", 72*time.Hour),
			`{"status":"continue","state":{"ticket":"CHG-1"},"await":{"signal":"approval","timeoutSeconds":259200}}`},
		{worker.Continue(nil).AwaitSignal("a", time.Nanosecond), `{"status":"continue","await":{"signal":"a","timeoutSeconds":1}}`},
		{worker.Continue(nil).AwaitSignal("payment-settled", 1500*time.Millisecond), `{"status":"continue","await":{"signal":"payment-settled","timeoutSeconds":2}}`},
		{worker.Continue(nil).AwaitSignal("a", worker.MaxAwait), `{"status":"continue","await":{"signal":"a","timeoutSeconds":2592000}}`},
		{worker.Continue(nil).AwaitSignal("a", time.Minute).AwaitSignal("b", time.Hour), `{"status":"continue","await":{"signal":"b","timeoutSeconds":3600}}`},
		{worker.Continue(nil).AwaitSignal("a", time.Minute).WithProgress(worker.Progress{Message: "Waiting for a."}),
			`{"status":"continue","progress":{"message":"Waiting for a."},"await":{"signal":"a","timeoutSeconds":60}}`},
		{worker.Continue(struct {
			Done int `json:"done"`
		}{1}).WithProgress(worker.Progress{TotalSteps: 3, Percent: new(33.5), Message: "step 1 of 3 done"}),
			`{"status":"continue","state":{"done":1},"progress":{"totalSteps":3,"percent":33.5,"message":"step 1 of 3 done"}}`},
		{worker.Succeed(nil), `{"status":"succeeded"}`},
		{worker.Succeed(map[string]any{"rows": 3}).WithProgress(worker.Progress{Percent: new(0.0)}), `{"status":"succeeded","result":{"rows":3},"progress":{"percent":0}}`},
		{worker.Succeed(json.RawMessage(` { "a" : 1 } `)), `{"status":"succeeded","result":{"a":1}}`},
		{worker.Fail("quota_exhausted", "The quota is exhausted.", ""), `{"status":"failed","problem":{"code":"quota_exhausted","title":"The quota is exhausted."}}`},
		{worker.Fail("quota_exhausted", "The quota is exhausted.", "50 of 50 used."), `{"status":"failed","problem":{"code":"quota_exhausted","title":"The quota is exhausted.","detail":"50 of 50 used."}}`},
		{worker.ResultLost(""), `{"status":"outcome_unknown","problem":{"code":"result_lost","title":"The result of the step is lost."}}`},
		{worker.ResultLost("The charge may have gone through."), `{"status":"outcome_unknown","problem":{"code":"result_lost","title":"The result of the step is lost.","detail":"The charge may have gone through."}}`},
	} {
		got, err := json.Marshal(tc.rep)
		if err != nil || string(got) != tc.want {
			t.Errorf("got %s %v, want %s", got, err, tc.want)
			continue
		}
		if err := validate(s, got); err != nil {
			t.Errorf("schema rejects %s: %v", got, err)
		}
	}
}

// A request as the Go type writes it is valid under the request schema; what the schema
// refuses in the members Go checks, Handler refuses too, as invalid_request.
func TestRequestsAgainstTheSchema(t *testing.T) {
	s := schema(t, "step-request")
	req := worker.Request{
		Protocol: worker.Protocol, OperationID: "op_01JDY3Q4W5E6R7T8Y9V0A1B2C3", Type: "export.orders", Version: 2,
		Input: json.RawMessage(`{"from":"2026-09-01"}`), Step: 2, MaxSteps: 5, State: json.RawMessage(`"cursor"`),
		Deadline:           time.Date(2026, 12, 1, 13, 0, 0, 123456789, time.FixedZone("CET", 3600)),
		StepTimeoutSeconds: 900,
	}
	raw, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	if err := validate(s, raw); err != nil {
		t.Fatalf("schema rejects %s: %v", raw, err)
	}
	if !strings.Contains(string(raw), `"deadline":"2026-12-01T12:00:00.123Z"`) {
		t.Fatalf("deadline not in UTC with milliseconds: %s", raw)
	}
	for _, m := range []string{"signals", "awaited", "callbacks"} {
		if strings.Contains(string(raw), `"`+m+`"`) {
			t.Fatalf("%s is sent without a value: %s", m, raw)
		}
	}

	// With signals, what a wait came to and callback URLs, the request is still valid: its
	// signals' times in UTC with milliseconds like the deadline, a signal without data
	// with the empty object.
	withSignals := req
	withSignals.Signals = []worker.Signal{
		{Name: "approval", Data: json.RawMessage(`{"approved":true}`), Sender: "arn:aws:iam::123456789012:user/alice", Via: worker.ViaAPI,
			ReceivedAt: time.Date(2026, 12, 2, 15, 5, 16, 987654321, time.FixedZone("CET", 3600))},
		{Name: "payment-settled", ReceivedAt: time.Date(2026, 12, 2, 14, 6, 0, 0, time.UTC), Via: worker.ViaCallback},
	}
	withSignals.Awaited = &worker.Awaited{Signal: "approval"}
	withSignals.Callbacks = map[string]string{"payment-settled": "https://abc123.execute-api.eu-west-1.amazonaws.com/prod/v1/callbacks/cb_2f1e0d"}
	raw, err = json.Marshal(withSignals)
	if err != nil {
		t.Fatal(err)
	}
	if err := validate(s, raw); err != nil {
		t.Fatalf("schema rejects %s: %v", raw, err)
	}
	for _, want := range []string{
		`"signals":[{"name":"approval","data":{"approved":true},"receivedAt":"2026-12-02T14:05:16.987Z","sender":"arn:aws:iam::123456789012:user/alice","via":"api"},` +
			`{"name":"payment-settled","data":{},"receivedAt":"2026-12-02T14:06:00.000Z","via":"callback"}]`,
		`"awaited":{"signal":"approval","timedOut":false}`,
		`"callbacks":{"payment-settled":"https://abc123.execute-api.eu-west-1.amazonaws.com/prod/v1/callbacks/cb_2f1e0d"}`,
	} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("%s does not hold %s", raw, want)
		}
	}
	var back worker.Request
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	if again, err := json.Marshal(back); err != nil || string(again) != string(raw) {
		t.Fatalf("the request does not round-trip:\n%s\n%s %v", raw, again, err)
	}

	ran := false
	h := worker.Handler(func(context.Context, worker.Step, map[string]any) (worker.Report, error) {
		ran = true
		return worker.Succeed(nil), nil
	})
	for _, edit := range []func(map[string]any){
		func(m map[string]any) { m["protocol"] = "longrun.step.v2" },
		func(m map[string]any) { delete(m, "protocol") },
		func(m map[string]any) { delete(m, "operationId") },
		func(m map[string]any) { m["step"] = 0 },
		func(m map[string]any) { m["deadline"] = "tomorrow" },
		func(m map[string]any) { m["step"] = "2" },
	} {
		var m map[string]any
		_ = json.Unmarshal(raw, &m)
		edit(m)
		bad, _ := json.Marshal(m)
		if err := validate(s, bad); err == nil {
			t.Errorf("schema accepts %s", bad)
		}
		ran = false
		out, err := h(context.Background(), bad)
		var rep worker.Report
		if err != nil || json.Unmarshal(out, &rep) != nil || rep.Status() != worker.StatusFailed || rep.Problem().Code != worker.CodeInvalidRequest || ran {
			t.Errorf("Handler on %s: %s %v (ran %v)", bad, out, err, ran)
		}
	}
}

// The JSON examples of docs/worker-protocol.md are valid: its requests under the request
// schema and through the Go type unchanged, each of its report lines under the report
// schema and in Go.
func TestTheProtocolDocsExamplesAreValid(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "worker-protocol.md"))
	if err != nil {
		t.Fatal(err)
	}
	reqSchema, repSchema := schema(t, "step-request"), schema(t, "step-report")
	var requests, reports int
	blocks := strings.Split(string(doc), "```json\n")[1:]
	for _, block := range blocks {
		block = block[:strings.Index(block, "```")]
		if strings.Contains(block, `"protocol"`) {
			requests++
			if err := validate(reqSchema, []byte(block)); err != nil {
				t.Errorf("request example: %v\n%s", err, block)
			}
			var req worker.Request
			if err := json.Unmarshal([]byte(block), &req); err != nil {
				t.Errorf("request example: %v\n%s", err, block)
				continue
			}
			if again, err := json.Marshal(req); err != nil || !sameJSON(t, []byte(block), again) {
				t.Errorf("request example does not round-trip: %s %v", again, err)
			}
			continue
		}
		for _, line := range strings.Split(strings.TrimSpace(block), "\n") {
			reports++
			if err := validate(repSchema, []byte(line)); err != nil {
				t.Errorf("report example %s: %v", line, err)
			}
			var rep worker.Report
			if err := json.Unmarshal([]byte(line), &rep); err != nil {
				t.Errorf("report example %s: %v", line, err)
			}
		}
	}
	if requests != 2 || reports != 5 {
		t.Fatalf("%d request and %d report examples, want 2 (a first step, a step after a wait) and 5 (one per status, one awaiting a signal)", requests, reports)
	}
	for _, want := range []string{worker.Protocol, "`continue`", "`succeeded`", "`failed`", "`outcome_unknown`",
		"32 KiB (32 768 bytes)", "64 KiB (65 536 bytes)", "0 to 86 400", "`^[a-z][a-z0-9_]{0,63}$`",
		"1 to 2 592 000 (30 days)", "`^[a-z][a-z0-9_-]{0,63}$`", "`awaited`", "`callbacks`", "`signals`"} {
		if !strings.Contains(string(doc), want) {
			t.Errorf("docs/worker-protocol.md does not say %s", want)
		}
	}
}

// Text from elsewhere (an error message, the caller's input echoed back) can be longer than
// the protocol allows. Refusing it would fail the invocation, which longrun records as
// outcome_unknown, holding the operation's target and quota until an operator acts: a
// caller could do that on demand (issue #20, 3). So the package cuts such text to its limit
// on a character boundary, ending it with "…", and the report goes out valid; text within
// its limit goes out as it is.
func TestOverLongTextIsCutNotRefused(t *testing.T) {
	s := schema(t, "step-report")
	long := strings.Repeat
	type texts struct{ title, detail, message string }
	for _, tc := range []struct {
		name string
		fn   worker.Func[any]
		in   texts // what the step wrote
	}{
		{"failed", func(context.Context, worker.Step, any) (worker.Report, error) {
			return worker.Fail("unknown_template", long("t", 201), "The provisioner has no template "+long("x", 5000)+"."), nil
		}, texts{title: long("t", 201), detail: "The provisioner has no template " + long("x", 5000) + "."}},
		{"a *Problem as the error", func(context.Context, worker.Step, any) (worker.Report, error) {
			return worker.Report{}, fmt.Errorf("create: %w", &worker.Problem{Code: "rejected", Title: "Rejected", Detail: long("é", 2001)})
		}, texts{title: "Rejected", detail: long("é", 2001)}},
		{"result lost, four-byte characters", func(context.Context, worker.Step, any) (worker.Report, error) {
			return worker.ResultLost(long("😀", 2001)), nil
		}, texts{title: "The result of the step is lost.", detail: long("😀", 2001)}},
		{"progress of a continue", func(context.Context, worker.Step, any) (worker.Report, error) {
			return worker.Continue(nil).WithProgress(worker.Progress{Message: long("m", 199) + "😀😀"}), nil
		}, texts{message: long("m", 199) + "😀😀"}},
		{"progress of a succeeded", func(context.Context, worker.Step, any) (worker.Report, error) {
			return worker.Succeed(nil).WithProgress(worker.Progress{Message: long("\xff", 300)}), nil // not UTF-8
		}, texts{message: long("\uFFFD", 300)}},
		{"at the limits", func(context.Context, worker.Step, any) (worker.Report, error) {
			return worker.Fail("x", long("t", 200), long("d", 2000)).WithProgress(worker.Progress{Message: long("é", 200)}), nil
		}, texts{title: long("t", 200), detail: long("d", 2000), message: long("é", 200)}},
	} {
		out, err := worker.Handler(tc.fn)(context.Background(), sample(t, "step-request-first"))
		if err != nil {
			t.Errorf("%s: the invocation fails (longrun would record outcome_unknown): %v", tc.name, err)
			continue
		}
		if err := validate(s, out); err != nil {
			t.Errorf("%s: the schema refuses %.200s: %v", tc.name, out, err)
		}
		var rep worker.Report
		if err := json.Unmarshal(out, &rep); err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		var got texts
		if p := rep.Problem(); p != nil {
			got.title, got.detail = p.Title, p.Detail
		}
		if p := rep.Progress(); p != nil {
			got.message = p.Message
		}
		for _, m := range []struct {
			member  string
			got, in string
			limit   int
		}{{"title", got.title, tc.in.title, 200}, {"detail", got.detail, tc.in.detail, 2000}, {"message", got.message, tc.in.message, 200}} {
			want := []rune(m.in)
			if len(want) > m.limit {
				want = append(want[:m.limit-1], '…')
			}
			if m.got != string(want) || !utf8.ValidString(m.got) {
				t.Errorf("%s: %s of %d characters, %q…, want %d, %q…", tc.name, m.member,
					utf8.RuneCountInString(m.got), head(m.got), len(want), head(string(want)))
			}
		}
	}
}

func head(s string) string {
	if r := []rune(s); len(r) > 12 {
		return string(r[:6]) + "…" + string(r[len(r)-6:])
	}
	return s
}
