package cost

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/longrun-dev/longrun/internal/aws/sizing"
	"github.com/longrun-dev/longrun/internal/aws/stepfunctions"
	"github.com/longrun-dev/longrun/internal/local/ddbmeter"
	"github.com/longrun-dev/longrun/internal/service/recorder"
)

// Trace is what one run recorded for Operations distinct operations.
type Trace struct {
	Operations int `json:"operations"`
	// Admissions counts the admission requests, Replays those of them that replayed.
	Admissions  int              `json:"admissions"`
	Replays     int              `json:"replays"`
	APIRequests int              `json:"apiRequests"` // every request the client sent, admissions and polls
	Invocations []Invocation     `json:"invocations"`
	DynamoDB    ddbmeter.Totals  `json:"dynamodb"`
	Events      []int            `json:"events"` // sizes of the EventBridge entries published
	SQS         []SQSCall        `json:"sqs"`
	LogBytes    map[string]int64 `json:"logBytes"` // by function, prefix stripped
	LogLines    map[string]int64 `json:"logLines"`
	// Executions counts the Step Functions executions started (free: only their
	// transitions are billed).
	Executions int `json:"executions"`
}

// Workflow is what the model needs of the state machine.
type Workflow struct {
	// Path is the states an execution enters when the recorder decides decisions in turn
	// (stepfunctions.Path).
	Path func(decisions ...string) ([]string, error)
	// Retried reports whether the workflow retries a failed invocation of fn: a function
	// error, or no answer at all.
	Retried func(fn string, functionError bool) bool
}

// TemplateWorkflow is the workflow of internal/aws/stepfunctions: its Path and the retriers
// of its Task states.
func TemplateWorkflow() (Workflow, error) {
	retried, err := RetryPolicy(stepfunctions.Template())
	return Workflow{Path: stepfunctions.Path, Retried: retried}, err
}

// RetryPolicy reads which function invocations a States Language template retries: for each
// Task state, its function (a FunctionName parameter or Resource naming the recorder's or
// the worker's placeholder) and whether its retriers match a function error (States.ALL,
// States.TaskFailed) or a missing answer (those, States.Timeout, or a Lambda.* error).
func RetryPolicy(template string) (func(fn string, functionError bool) bool, error) {
	var asl struct {
		States map[string]struct {
			Type       string
			Resource   string
			Parameters map[string]any
			Retry      []struct{ ErrorEquals []string }
		}
	}
	if err := json.Unmarshal([]byte(template), &asl); err != nil {
		return nil, fmt.Errorf("cost: the workflow template: %w", err)
	}
	type policy struct{ functionErrors, noAnswer bool }
	byKind := map[string]policy{} // "recorder" or "worker"
	for _, st := range asl.States {
		if st.Type != "Task" {
			continue
		}
		fn, _ := st.Parameters["FunctionName"].(string)
		if fn == "" {
			fn = st.Resource
		}
		kind := ""
		switch {
		case strings.Contains(fn, "${"+stepfunctions.RecorderFunctionArn+"}"):
			kind = sizing.Recorder
		case strings.Contains(fn, "${"+stepfunctions.WorkerFunctionArn+"}"):
			kind = "worker"
		default:
			continue
		}
		p := byKind[kind]
		for _, r := range st.Retry {
			for _, e := range r.ErrorEquals {
				switch {
				case e == "States.ALL" || e == "States.TaskFailed":
					p.functionErrors, p.noAnswer = true, true
				case e == "States.Timeout" || strings.HasPrefix(e, "Lambda."):
					p.noAnswer = true
				}
			}
		}
		byKind[kind] = p
	}
	return func(fn string, functionError bool) bool {
		kind := fn
		if strings.HasPrefix(fn, stepfunctions.FunctionName("")) {
			kind = "worker"
		}
		p, ok := byKind[kind]
		if !ok {
			return false // not a Task of the workflow: whoever invoked it, it is no transition
		}
		if functionError {
			return p.functionErrors
		}
		return p.noAnswer
	}, nil
}

// Model prices a Trace.
type Model struct {
	Prices   Prices
	Workflow Workflow
	// MemoryMB is a function's configured memory.
	MemoryMB func(fn string) int
}

// DefaultModel is the list prices, the workflow's template and the functions' sizes on
// Lambda (internal/aws/sizing; the demo workers' DemoWorkerMemoryMB).
func DefaultModel() (Model, error) {
	p, err := ListPrices()
	if err != nil {
		return Model{}, err
	}
	wf, err := TemplateWorkflow()
	if err != nil {
		return Model{}, err
	}
	return Model{Prices: p, Workflow: wf, MemoryMB: FunctionMemoryMB}, nil
}

// FunctionMemoryMB is fn's memory as deployed: longrun's own from sizing.Functions, a
// worker-* the demo workers' size, anything else Lambda's default of 128 MB.
func FunctionMemoryMB(fn string) int {
	if f, ok := sizing.Functions()[fn]; ok {
		return f.MemoryMB
	}
	if strings.HasPrefix(fn, stepfunctions.FunctionName("")) {
		return sizing.DemoWorkerMemoryMB
	}
	return 128
}

// Units are what one operation asks of AWS, on average over a run.
type Units struct {
	APIRequests float64 `json:"apiRequests"`
	Invocations float64 `json:"invocations"`
	MeasuredMs  float64 `json:"measuredMs"` // invocation time as measured locally
	OverheadMs  float64 `json:"overheadMs"` // of which the DynamoDB meter's own reads
	// BilledMs is the time priced: each invocation's rounded up to the millisecond, less the
	// meter's overhead.
	BilledMs    float64 `json:"billedMs"`
	GBSeconds   float64 `json:"gbSeconds"`
	Transitions float64 `json:"transitions"` // state transitions, retries included
	Retries     float64 `json:"retries"`     // of which retries
	Executions  float64 `json:"executions"`  // Step Functions executions started
	WRU         float64 `json:"wru"`         // the table's write request units
	IndexWRU    float64 `json:"indexWru"`    // its indexes'
	RRU         float64 `json:"rru"`
	Events      float64 `json:"events"` // EventBridge events billed (64 KB chunks)
	SQSRequests float64 `json:"sqsRequests"`
	SQSMessages float64 `json:"sqsMessages"`
	// Log bytes ingested: the functions' own lines, Lambda's platform lines (an estimate per
	// invocation) and API Gateway's access log lines (an estimate per request).
	AppLogBytes      float64 `json:"appLogBytes"`
	PlatformLogBytes float64 `json:"platformLogBytes"`
	AccessLogBytes   float64 `json:"accessLogBytes"`
}

// LogBytes is all log bytes ingested.
func (u Units) LogBytes() float64 { return u.AppLogBytes + u.PlatformLogBytes + u.AccessLogBytes }

// Function is one function's share of an operation.
type Function struct {
	Name        string  `json:"name"`
	MemoryMB    int     `json:"memoryMb"`
	Invocations float64 `json:"invocations"`
	MeasuredMs  float64 `json:"measuredMs"`
	OverheadMs  float64 `json:"overheadMs"` // the DynamoDB meter's, taken off
	BilledMs    float64 `json:"billedMs"`
	GBSeconds   float64 `json:"gbSeconds"`
	LogBytes    float64 `json:"logBytes"`
	USD         float64 `json:"usdPerMillion"` // requests and duration, per million operations
}

// Dollars are per million operations.
type Dollars struct {
	StepFunctions  float64 `json:"stepFunctions"`
	DynamoDB       float64 `json:"dynamodb"`
	DynamoDBWrites float64 `json:"dynamodbWrites"` // table and index write units
	DynamoDBReads  float64 `json:"dynamodbReads"`
	APIGateway     float64 `json:"apiGateway"`
	Lambda         float64 `json:"lambda"`
	LambdaRequests float64 `json:"lambdaRequests"`
	LambdaDuration float64 `json:"lambdaDuration"`
	Other          float64 `json:"other"` // EventBridge, SQS and CloudWatch Logs
	EventBridge    float64 `json:"eventBridge"`
	SQS            float64 `json:"sqs"`
	Logs           float64 `json:"logs"`
	Total          float64 `json:"total"`
}

// Report is a run priced.
type Report struct {
	Operations   int             `json:"operations"`
	Admissions   int             `json:"admissions"`
	Replays      int             `json:"replays"`
	PricesAsOf   string          `json:"pricesAsOf"`
	Region       string          `json:"region"`
	PerOperation Units           `json:"perOperation"`
	Functions    []Function      `json:"functions"`
	ByCall       map[string]Call `json:"dynamodbByCall"` // DynamoDB per operation, by API call
	// ByFunction is DynamoDB per operation by the function that called ("" for callers that
	// named none).
	ByFunction map[string]ddbmeter.Usage `json:"dynamodbByFunction"`
	PerMillion Dollars                   `json:"perMillionOperations"`
	Notes      []string                  `json:"notes,omitempty"`
}

// Call is one DynamoDB API call's share of an operation.
type Call struct {
	Calls float64 `json:"calls"`
	ddbmeter.Usage
}

// PlatformLogLine and ReportLogLine are Lambda's own lines per invocation in the JSON log
// format, with a typical request id and figures: their length is the estimate of what each
// invocation of a worker adds to its log group. longrun's own functions log at the system
// log level WARN (the construct), which leaves these INFO lines out.
const (
	PlatformLogLine = `{"time":"2026-11-30T10:00:05.123Z","type":"platform.start","record":{"requestId":"6f4e2c1a-8b0d-4a55-9f7e-1c2d3e4f5a6b","version":"$LATEST"}}`
	ReportLogLine   = `{"time":"2026-11-30T10:00:05.223Z","type":"platform.report","record":{"requestId":"6f4e2c1a-8b0d-4a55-9f7e-1c2d3e4f5a6b","metrics":{"durationMs":12.345,"billedDurationMs":13,"memorySizeMB":256,"maxMemoryUsedMB":40},"status":"success"}}`
	// AccessLogLine is one line of the API's access log in the construct's format
	// (construct/api.go accessLogFields) for a typical IAM-signed poll.
	AccessLogLine = `{"requestId":"6f4e2c1a-8b0d-4a55-9f7e-1c2d3e4f5a6b","ip":"203.0.113.7","caller":"AROAEXAMPLEROLEID:session","user":"AROAEXAMPLEROLEID:session","userArn":"arn:aws:sts::123456789012:assumed-role/longrun-client/session","accountId":"123456789012","sub":"-","httpMethod":"GET","resourcePath":"/{proxy+}","status":"200","errorType":"-","responseLength":"412","requestTime":"30/Nov/2026:10:00:05 +0000","integrationLatency":"23"}`
)

const (
	chunk = 64 << 10 // EventBridge and SQS bill each started 64 KB
	gib   = 1 << 30
)

func chunks(size int) int { return max(1, (size+chunk-1)/chunk) }

// Compute prices tr: each component's units per operation, and dollars per million.
func (m Model) Compute(tr Trace) (Report, error) {
	if tr.Operations <= 0 {
		return Report{}, fmt.Errorf("cost: a trace of %d operations", tr.Operations)
	}
	n := float64(tr.Operations)
	q := m.Prices.Prices
	r := Report{Operations: tr.Operations, Admissions: tr.Admissions, Replays: tr.Replays,
		PricesAsOf: m.Prices.AsOf, Region: m.Prices.Region, ByCall: map[string]Call{}, ByFunction: map[string]ddbmeter.Usage{}}
	u := &r.PerOperation

	// Lambda: requests, and GB-seconds of each invocation's duration rounded up to the ms.
	fns := map[string]*Function{}
	async := 0
	for _, inv := range tr.Invocations {
		f := fns[inv.Function]
		if f == nil {
			f = &Function{Name: inv.Function, MemoryMB: m.MemoryMB(inv.Function)}
			fns[inv.Function] = f
		}
		ms := float64(inv.Duration.Nanoseconds()) / 1e6
		billed := math.Max(1, math.Ceil(ms))
		if inv.Async {
			async++
			ms, billed = 0, 0
		}
		f.Invocations++
		f.MeasuredMs += ms
		f.BilledMs += billed
	}
	// The meter's own reads are no part of the functions' work on AWS: they come off the
	// billed time of the function that waited for them (at least a millisecond an
	// invocation stays).
	for name, f := range fns {
		f.OverheadMs = float64(tr.DynamoDB.OverheadByCaller[name].Microseconds()) / 1000
		f.BilledMs = math.Max(f.Invocations, f.BilledMs-f.OverheadMs)
		f.GBSeconds = f.BilledMs / 1000 * float64(f.MemoryMB) / 1024
	}
	if async > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("%d asynchronous invocations: their duration is unknown and not priced", async))
	}
	for name, b := range tr.LogBytes {
		if fns[name] == nil {
			fns[name] = &Function{Name: name, MemoryMB: m.MemoryMB(name)}
		}
		fns[name].LogBytes = float64(b)
	}
	for _, f := range fns {
		f.Invocations, f.MeasuredMs, f.OverheadMs, f.BilledMs, f.GBSeconds, f.LogBytes = f.Invocations/n, f.MeasuredMs/n, f.OverheadMs/n, f.BilledMs/n, f.GBSeconds/n, f.LogBytes/n
		f.USD = 1e6 * (f.Invocations*q.LambdaRequest.USD + f.GBSeconds*q.LambdaGBSecond.USD)
		u.Invocations += f.Invocations
		u.MeasuredMs += f.MeasuredMs
		u.OverheadMs += f.OverheadMs
		u.BilledMs += f.BilledMs
		u.GBSeconds += f.GBSeconds
		u.AppLogBytes += f.LogBytes
		r.Functions = append(r.Functions, *f)
	}
	slices.SortFunc(r.Functions, func(a, b Function) int { return cmp.Compare(a.Name, b.Name) })

	// Step Functions: the path each execution took from the recorder's decisions, and the
	// retries of failed Task invocations.
	transitions, retries, err := m.transitions(tr.Invocations)
	if err != nil {
		r.Notes = append(r.Notes, err.Error())
	}
	u.Transitions, u.Retries = float64(transitions+retries)/n, float64(retries)/n
	u.Executions = float64(tr.Executions) / n

	// DynamoDB.
	d := tr.DynamoDB.Usage
	u.WRU, u.IndexWRU, u.RRU = d.WRU/n, d.IndexWRU/n, d.RRU/n
	for op, c := range tr.DynamoDB.Calls {
		use := tr.DynamoDB.ByCall[op]
		r.ByCall[op] = Call{Calls: float64(c) / n, Usage: ddbmeter.Usage{WRU: use.WRU / n, IndexWRU: use.IndexWRU / n, RRU: use.RRU / n}}
	}
	if u.OverheadMs > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("Lambda is priced at the durations measured locally less the DynamoDB meter's own reads (%.1f ms per operation): "+
			"an upper bound, DynamoDB Local and kumo being slower than AWS", u.OverheadMs))
	}
	for fn, use := range tr.DynamoDB.ByCaller {
		if use != (ddbmeter.Usage{}) {
			r.ByFunction[fn] = ddbmeter.Usage{WRU: use.WRU / n, IndexWRU: use.IndexWRU / n, RRU: use.RRU / n}
		}
	}
	if tr.DynamoDB.Unpriced > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("%d DynamoDB calls could not be priced: the DynamoDB figure is low", tr.DynamoDB.Unpriced))
	}

	// The rest.
	u.APIRequests = float64(tr.APIRequests) / n
	events := 0
	for _, s := range tr.Events {
		events += chunks(s)
	}
	u.Events = float64(events) / n
	sqsRequests, sqsMessages := 0, 0
	for _, c := range tr.SQS {
		sqsRequests += chunks(c.Bytes) // a batch of small messages is one request
		sqsMessages += c.Messages
	}
	u.SQSRequests, u.SQSMessages = float64(sqsRequests)/n, float64(sqsMessages)/n
	// Lambda's per-invocation lines of the workers only: longrun's own functions log at the
	// system log level WARN (the construct), which leaves them out.
	own := sizing.Functions()
	workers := 0
	for _, inv := range tr.Invocations {
		if _, ok := own[inv.Function]; !ok {
			workers++
		}
	}
	u.PlatformLogBytes = float64(workers) / n * float64(len(PlatformLogLine)+len(ReportLogLine))
	u.AccessLogBytes = u.APIRequests * float64(len(AccessLogLine))

	p := &r.PerMillion
	p.StepFunctions = 1e6 * u.Transitions * q.Transition.USD
	p.DynamoDBWrites = 1e6 * (u.WRU + u.IndexWRU) * q.WriteUnit.USD
	p.DynamoDBReads = 1e6 * u.RRU * q.ReadUnit.USD
	p.DynamoDB = p.DynamoDBWrites + p.DynamoDBReads
	p.APIGateway = 1e6 * u.APIRequests * q.APIRequest.USD
	p.LambdaRequests = 1e6 * u.Invocations * q.LambdaRequest.USD
	p.LambdaDuration = 1e6 * u.GBSeconds * q.LambdaGBSecond.USD
	p.Lambda = p.LambdaRequests + p.LambdaDuration
	p.EventBridge = 1e6 * u.Events * q.Event.USD
	p.SQS = 1e6 * u.SQSRequests * q.SQSRequest.USD
	p.Logs = 1e6 * u.LogBytes() / gib * q.LogsIngestedGB.USD
	p.Other = p.EventBridge + p.SQS + p.Logs
	p.Total = p.StepFunctions + p.DynamoDB + p.APIGateway + p.Lambda + p.Other
	return r, nil
}

// transitions follows each execution: the recorder's decisions for one operation, in the
// order they were made, give its path; a failed Task invocation the workflow retries is one
// transition more.
func (m Model) transitions(invs []Invocation) (transitions, retries int, err error) {
	decisions := map[string][]Invocation{}
	var problems []string
	unattributed := 0
	for _, inv := range invs {
		if inv.Failed() {
			if m.Workflow.Retried(inv.Function, inv.FunctionError) {
				retries++
			}
			continue
		}
		if inv.Function != sizing.Recorder || inv.Next == recorder.NextParked {
			// A parked Run's invocations (it sent a step, or heard of one that ended and
			// sent the next) move no state: the Run task waits on its token.
			continue
		}
		if inv.OperationID == "" || inv.Next == "" {
			unattributed++
			continue
		}
		decisions[inv.OperationID] = append(decisions[inv.OperationID], inv)
	}
	for _, id := range slices.Sorted(maps.Keys(decisions)) {
		calls := decisions[id]
		slices.SortStableFunc(calls, func(a, b Invocation) int { return a.Start.Compare(b.Start) })
		next := make([]string, len(calls))
		for i, c := range calls {
			next[i] = c.Next
		}
		path, err := m.Workflow.Path(next...)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s (decisions %v): %v", id, next, err))
		}
		transitions += len(path)
	}
	if unattributed > 0 {
		problems = append(problems, fmt.Sprintf("%d recorder invocations without an operation id or a decision were not followed", unattributed))
	}
	if len(problems) > 0 {
		return transitions, retries, fmt.Errorf("cost: transitions: %s", strings.Join(problems, "; "))
	}
	return transitions, retries, nil
}
