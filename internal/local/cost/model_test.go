package cost

import (
	"fmt"
	"math"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/longrun-dev/longrun/internal/aws/stepfunctions"
	"github.com/longrun-dev/longrun/internal/local/ddbmeter"
)

// testPrices are the list prices of the price file, written out so that the figures below
// are computed by hand from them.
func testPrices() Prices {
	var p Prices
	p.AsOf, p.Region = "2026-12-01", "us-east-1"
	q := &p.Prices
	q.Transition.USD = 0.000025
	q.WriteUnit.USD = 0.000000625
	q.ReadUnit.USD = 0.000000125
	q.APIRequest.USD = 0.0000035
	q.LambdaRequest.USD = 0.0000002
	q.LambdaGBSecond.USD = 0.0000133334
	q.Event.USD = 0.000001
	q.SQSRequest.USD = 0.0000004
	q.LogsIngestedGB.USD = 0.5
	return p
}

// testWorkflow enters three states per decision (Gate, Route, then the decision's state),
// ends only on "done", retries every failed recorder invocation and a worker's only when it
// got no answer.
func testWorkflow() Workflow {
	return Workflow{
		Path: func(decisions ...string) ([]string, error) {
			var path []string
			for i, d := range decisions {
				path = append(path, "Gate", "Route", d)
				if (d == "done") != (i == len(decisions)-1) {
					return path, fmt.Errorf("decisions %v do not end at done", decisions)
				}
			}
			return path, nil
		},
		Retried: func(fn string, functionError bool) bool {
			return fn == "recorder" || (strings.HasPrefix(fn, "worker-") && !functionError)
		},
	}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9*math.Max(1, math.Abs(b)) }

// One operation's trace, recorded by hand, priced by hand.
func TestOneOperationPricedByHand(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	ms := func(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	tr := Trace{
		Operations: 1, Admissions: 2, Replays: 1,
		APIRequests: 4, // the admission, its replay, two polls
		Invocations: []Invocation{
			{Function: "api", Start: at(0), Duration: ms(10.2)}, // billed 11 ms
			{Function: "api", Start: at(1), Duration: ms(20)},   // 20 ms
			{Function: "api", Start: at(2), Duration: ms(0.4)},  // 1 ms, the least billed
			{Function: "dispatcher", Start: at(3), Duration: ms(100)},
			// The recorder's decisions, out of order in the trace: work, then done. Its
			// failed attempt between them is no decision but a retry.
			{Function: "recorder", Start: at(6), Duration: ms(30), OperationID: "op_1", Next: "done"},
			{Function: "recorder", Start: at(4), Duration: ms(50), OperationID: "op_1", Next: "work"},
			{Function: "recorder", Start: at(5), Duration: ms(5), OperationID: "op_1", FunctionError: true},
			{Function: "worker-demo", Start: at(4), Duration: ms(2.5), OperationID: "op_1"}, // 3 ms
			// A worker's function error is caught, not retried: no transition.
			{Function: "worker-demo", Start: at(5), Duration: ms(4), OperationID: "op_1", FunctionError: true},
		},
		DynamoDB: ddbmeter.Totals{Usage: ddbmeter.Usage{WRU: 10, IndexWRU: 2, RRU: 3.5},
			// The meter's own reads kept the api waiting 12 ms: they come off its billed time.
			OverheadByCaller: map[string]time.Duration{"api": 12 * time.Millisecond},
			ByCaller:         map[string]ddbmeter.Usage{"api": {WRU: 8, IndexWRU: 2, RRU: 1}, "recorder": {WRU: 2, RRU: 2.5}},
			Calls:            map[string]int{"TransactWriteItems": 2, "Query": 3}, ByCall: map[string]ddbmeter.Usage{
				"TransactWriteItems": {WRU: 10, IndexWRU: 2}, "Query": {RRU: 3.5}}},
		Events:   []int{100, 70000}, // 1 and 2 chunks of 64 KB
		SQS:      []SQSCall{{Action: "SendMessage", Messages: 1, Bytes: 200}},
		LogBytes: map[string]int64{"api": 1000, "recorder": 500},
	}
	memory := map[string]int{"api": 512, "dispatcher": 256, "recorder": 256, "worker-demo": 512}
	m := Model{Prices: testPrices(), Workflow: testWorkflow(), MemoryMB: func(fn string) int { return memory[fn] }}
	r, err := m.Compute(tr)
	if err != nil {
		t.Fatal(err)
	}
	u := r.PerOperation
	// GB-s: api 32 - 12 ms × 0.5 GB, dispatcher 100 ms × 0.25, recorder 85 ms × 0.25, worker 7 ms × 0.5.
	const gbs = 0.010 + 0.025 + 0.02125 + 0.0035
	// Lambda's own lines of the workers' two invocations only (longrun's log at WARN).
	platform := float64(2 * (len(PlatformLogLine) + len(ReportLogLine)))
	access := float64(4 * len(AccessLogLine))
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"API requests", u.APIRequests, 4},
		{"invocations", u.Invocations, 9},
		{"billed ms", u.BilledMs, 32 - 12 + 100 + 85 + 7},
		{"overhead ms", u.OverheadMs, 12},
		{"measured ms", u.MeasuredMs, 10.2 + 20 + 0.4 + 100 + 30 + 50 + 5 + 2.5 + 4},
		{"GB-s", u.GBSeconds, gbs},
		{"transitions: two decisions of three states, one retry", u.Transitions, 7},
		{"retries", u.Retries, 1},
		{"WRU", u.WRU, 10}, {"index WRU", u.IndexWRU, 2}, {"RRU", u.RRU, 3.5},
		{"events", u.Events, 3},
		{"SQS requests", u.SQSRequests, 1},
		{"log bytes", u.LogBytes(), 1500 + platform + access},
		{"Step Functions $", r.PerMillion.StepFunctions, 7 * 25},
		{"DynamoDB $", r.PerMillion.DynamoDB, 12*0.625 + 3.5*0.125},
		{"API Gateway $", r.PerMillion.APIGateway, 4 * 3.5},
		{"Lambda $", r.PerMillion.Lambda, 9*0.2 + gbs*13.3334},
		{"EventBridge $", r.PerMillion.EventBridge, 3},
		{"SQS $", r.PerMillion.SQS, 0.4},
		{"logs $", r.PerMillion.Logs, (1500 + platform + access) / (1 << 30) * 0.5 * 1e6},
		{"other $", r.PerMillion.Other, 3 + 0.4 + (1500+platform+access)/(1<<30)*0.5*1e6},
		{"total $", r.PerMillion.Total, 175 + 7.9375 + 14 + 9*0.2 + gbs*13.3334 + 3.4 + (1500+platform+access)/(1<<30)*0.5*1e6},
	} {
		if !near(c.got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, c.got, c.want)
		}
	}
	if len(r.Functions) != 4 || r.Functions[0].Name != "api" || !near(r.Functions[0].GBSeconds, 0.010) || r.Functions[2].LogBytes != 500 {
		t.Errorf("functions: %+v", r.Functions)
	}
	if r.ByFunction["recorder"] != (ddbmeter.Usage{WRU: 2, RRU: 2.5}) || len(r.ByFunction) != 2 {
		t.Errorf("by function: %+v", r.ByFunction)
	}
	if c := r.ByCall["Query"]; c.Calls != 3 || c.RRU != 3.5 {
		t.Errorf("by call: %+v", r.ByCall)
	}
	if len(r.Notes) != 1 || !strings.Contains(r.Notes[0], "less the DynamoDB meter's own reads (12.0 ms per operation)") {
		t.Errorf("notes: %v", r.Notes)
	}

	// Overhead beyond an invocation's time leaves the least Lambda bills, a millisecond.
	tr.DynamoDB.OverheadByCaller["dispatcher"] = time.Second
	floor, err := m.Compute(tr)
	if err != nil {
		t.Fatal(err)
	}
	if d := floor.Functions[1]; d.Name != "dispatcher" || d.BilledMs != 1 {
		t.Errorf("dispatcher: %+v", d)
	}
	delete(tr.DynamoDB.OverheadByCaller, "dispatcher")

	// Two operations of the same trace cost half as much each.
	tr.Operations = 2
	half, err := m.Compute(tr)
	if err != nil {
		t.Fatal(err)
	}
	if !near(half.PerMillion.Total, r.PerMillion.Total/2) || half.PerOperation.Transitions != 3.5 {
		t.Errorf("per operation over two: %v, %v", half.PerMillion.Total, half.PerOperation.Transitions)
	}
}

func TestSummaryLine(t *testing.T) {
	r := Report{PerMillion: Dollars{StepFunctions: 74.984, DynamoDB: 20.5, APIGateway: 31.5, Lambda: 4.006, Other: 0.1, Total: 131.09}}
	want := "cost: $131.09 per million operations (Step Functions $74.98, DynamoDB $20.50, API Gateway $31.50, Lambda $4.01, other $0.10)"
	if got := r.Summary(); got != want {
		t.Fatalf("%q\nwant %q", got, want)
	}
	var b strings.Builder
	if err := r.Write(&b); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	last := lines[len(lines)-1]
	if !regexp.MustCompile(`^cost: \$\d+\.\d\d per million operations \(Step Functions \$\d+\.\d\d, DynamoDB \$\d+\.\d\d, API Gateway \$\d+\.\d\d, Lambda \$\d+\.\d\d, other \$\d+\.\d\d\)$`).MatchString(last) || last != want {
		t.Fatalf("last line %q", last)
	}
}

func TestTransitionsNoteWhatTheyCannotFollow(t *testing.T) {
	m := Model{Prices: testPrices(), Workflow: Workflow{
		Path:    stepfunctions.Path,
		Retried: func(string, bool) bool { return false },
	}, MemoryMB: func(string) int { return 128 }}
	r, err := m.Compute(Trace{Operations: 1, Invocations: []Invocation{
		{Function: "recorder", Duration: time.Millisecond}, // no operation id: not followed
	}})
	if err != nil {
		t.Fatal(err)
	}
	if r.PerOperation.Transitions != 0 || len(r.Notes) != 1 || !strings.Contains(r.Notes[0], "without an operation id") {
		t.Fatalf("%v %v", r.PerOperation.Transitions, r.Notes)
	}
	if _, err := m.Compute(Trace{}); err == nil {
		t.Fatal("a trace of no operations was priced")
	}
}

// A wait for a signal ends the execution: the Run that asked for it, then the Run of the
// execution the signal started, whatever came between.
func TestTransitionsOfAWaitForASignal(t *testing.T) {
	m, err := DefaultModel()
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	r, err := m.Compute(Trace{Operations: 1, Executions: 2, Invocations: []Invocation{
		{Function: "recorder", OperationID: "op_1", Next: "await", Start: at, Duration: time.Millisecond},
		{Function: "dispatcher", Start: at.Add(24 * time.Hour), Duration: time.Millisecond},
		{Function: "recorder", OperationID: "op_1", Next: "done", Start: at.Add(24 * time.Hour), Duration: time.Millisecond},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if u := r.PerOperation; u.Transitions != 2 || u.Executions != 2 || len(r.Notes) != 0 {
		t.Fatalf("%v transitions in %v executions, notes %v", u.Transitions, u.Executions, r.Notes)
	}
}

func TestRetryPolicy(t *testing.T) {
	// The shape before #14: the recorder and the worker are both Tasks.
	two := `{"StartAt":"Gate","States":{
		"Gate":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke","Parameters":{"FunctionName":"${RecorderFunctionArn}"},
			"Retry":[{"ErrorEquals":["States.ALL"]}],"Next":"Work"},
		"Work":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke","Parameters":{"FunctionName":"${WorkerFunctionArn}"},
			"Retry":[{"ErrorEquals":["Lambda.ServiceException"]}],"Next":"Done"},
		"Done":{"Type":"Succeed"}}}`
	// The recorder invoking the worker itself: the worker is no Task.
	one := `{"StartAt":"Run","States":{
		"Run":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke","Parameters":{"FunctionName":"${RecorderFunctionArn}",
			"Payload":{"worker":"${WorkerFunctionArn}"}},"Retry":[{"ErrorEquals":["States.TaskFailed"]}],"Next":"Done"},
		"Done":{"Type":"Succeed"}}}`
	for _, tc := range []struct {
		template string
		fn       string
		fnErr    bool
		want     bool
	}{
		{two, "recorder", true, true}, {two, "recorder", false, true},
		{two, "worker-demo-task", true, false}, {two, "worker-demo-task", false, true},
		{two, "api", false, false},
		{one, "recorder", true, true}, {one, "worker-demo-task", false, false}, {one, "worker-demo-task", true, false},
	} {
		retried, err := RetryPolicy(tc.template)
		if err != nil {
			t.Fatal(err)
		}
		if got := retried(tc.fn, tc.fnErr); got != tc.want {
			t.Errorf("%s (function error %v) in %.20s…: retried %v, want %v", tc.fn, tc.fnErr, tc.template, got, tc.want)
		}
	}
	if _, err := RetryPolicy("{"); err == nil {
		t.Fatal("a broken template parsed")
	}
	// The real template: the recorder's Task retries whatever failed.
	wf, err := TemplateWorkflow()
	if err != nil {
		t.Fatal(err)
	}
	if !wf.Retried("recorder", true) || wf.Retried("api", true) {
		t.Fatal("the template's recorder Task does not retry, or the api is a Task")
	}
}

func TestListPrices(t *testing.T) {
	p, err := ListPrices()
	if err != nil {
		t.Fatal(err)
	}
	if p.AsOf != "2026-12-01" || p.Region != "us-east-1" || p.Prices.Transition.USD != 0.000025 || p.Prices.APIRequest.USD != 0.0000035 ||
		p.Prices.LambdaGBSecond.USD != 0.0000133334 || !strings.HasPrefix(p.Prices.WriteUnit.Source, "https://aws.amazon.com/") {
		t.Fatalf("%+v", p)
	}
}

func TestFunctionMemory(t *testing.T) {
	if FunctionMemoryMB("api") != 512 || FunctionMemoryMB("worker-demo-task") != 512 || FunctionMemoryMB("unknown") != 128 {
		t.Fatal(FunctionMemoryMB("api"), FunctionMemoryMB("worker-demo-task"))
	}
}
