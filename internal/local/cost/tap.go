package cost

import (
	"bytes"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/longrun-dev/longrun/internal/aws/sizing"
	"github.com/longrun-dev/longrun/internal/local/ddbmeter"
	"github.com/longrun-dev/longrun/internal/local/quotas"
)

// Invocation is one Lambda invocation seen at the edge.
type Invocation struct {
	Function string        `json:"function"`
	Start    time.Time     `json:"start"`
	Duration time.Duration `json:"durationNs"` // request to the end of the answer, as the caller waited
	// FunctionError is an answer with X-Amz-Function-Error: the function failed.
	FunctionError bool `json:"functionError,omitempty"`
	// NoResponse is an invocation that got no answer from the function (a transport failure
	// or the service's own 5xx).
	NoResponse bool `json:"noResponse,omitempty"`
	Async      bool `json:"async,omitempty"` // InvocationType Event: answered at once, duration unknown
	// OperationID is the first "operationId" string of the payload, "" when there is none.
	OperationID string `json:"operationId,omitempty"`
	// Next is the recorder's decision (its answer's "next"); "" for other functions.
	Next string `json:"next,omitempty"`
}

// Failed reports an invocation that did not answer normally.
func (i Invocation) Failed() bool { return i.FunctionError || i.NoResponse }

// SQSCall is one SQS API call seen at the edge.
type SQSCall struct {
	Action   string `json:"action"`
	Queue    string `json:"queue"`    // the queue's name (its URL's last segment)
	Messages int    `json:"messages"` // messages sent (SendMessage, SendMessageBatch)
	Bytes    int    `json:"bytes"`    // their payload: bodies and attributes
}

// Tap records what passes the local stack's AWS edge: it wraps the edge (devstack
// Options.Meter) and meters DynamoDB through a ddbmeter.Meter in front of DynamoDB Local.
type Tap struct {
	now func() time.Time

	mu          sync.Mutex
	ddb         *ddbmeter.Meter
	invocations []Invocation
	events      []int // sizes of the EventBridge entries published
	sqs         []SQSCall
	executions  int       // Step Functions executions started (StartExecution answered 200)
	last        time.Time // the last thing seen
}

// NewTap returns a Tap on clock now (nil: the wall clock).
func NewTap(now func() time.Time) *Tap {
	if now == nil {
		now = time.Now
	}
	return &Tap{now: now, last: now()}
}

// Wrap is devstack's Options.Meter: edge is the stack's edge and dynamoURL DynamoDB Local
// behind it.
func (t *Tap) Wrap(edge http.Handler, dynamoURL string) http.Handler {
	m, err := ddbmeter.New(dynamoURL, t.now)
	if err != nil {
		return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { http.Error(w, err.Error(), http.StatusBadGateway) })
	}
	t.mu.Lock()
	t.ddb = m
	t.mu.Unlock()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		target := r.Header.Get("X-Amz-Target")
		switch {
		case strings.HasPrefix(target, "DynamoDB"):
			t.touch()
			m.ServeHTTP(w, r)
			t.touch()
		case target == "AWSEvents.PutEvents":
			t.putEvents(edge, w, r)
		case strings.HasPrefix(target, "AmazonSQS."):
			t.sqsCall(edge, w, r, strings.TrimPrefix(target, "AmazonSQS."))
		case target == "AWSStepFunctions.StartExecution":
			t.startExecution(edge, w, r)
		default:
			if fn, ok := quotas.InvokedFunction(r); ok {
				t.invoke(edge, w, r, fn)
				return
			}
			edge.ServeHTTP(w, r) // everything else, the functions' Runtime API long polls among it
		}
	})
}

func (t *Tap) touch() {
	t.mu.Lock()
	t.last = t.now()
	t.mu.Unlock()
}

// Idle is how long the edge has seen nothing metered.
func (t *Tap) Idle() time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.now().Sub(t.last)
}

// Reset forgets everything recorded so far.
func (t *Tap) Reset() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.invocations, t.events, t.sqs, t.executions = nil, nil, nil, 0
	if t.ddb != nil {
		t.ddb.Reset()
	}
}

// Snapshot is what the tap recorded since the last Reset.
func (t *Tap) Snapshot() (invocations []Invocation, events []int, sqs []SQSCall, ddb ddbmeter.Totals) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ddb != nil {
		ddb = t.ddb.Totals()
	}
	return slices.Clone(t.invocations), slices.Clone(t.events), slices.Clone(t.sqs), ddb
}

// Executions is how many Step Functions executions were started since the last Reset: the
// StartExecution calls answered 200 (a start by a name already started is refused, and
// starts nothing).
func (t *Tap) Executions() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.executions
}

func (t *Tap) startExecution(edge http.Handler, w http.ResponseWriter, r *http.Request) {
	c := &capture{ResponseWriter: w}
	edge.ServeHTTP(c, r)
	t.mu.Lock()
	defer t.mu.Unlock()
	if c.status == http.StatusOK {
		t.executions++
	}
	t.last = t.now()
}

// capture passes a response on and keeps its status and (the start of) its body.
type capture struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
}

const captureLimit = 1 << 20

func (c *capture) WriteHeader(status int) {
	if c.status == 0 {
		c.status = status
	}
	c.ResponseWriter.WriteHeader(status)
}

func (c *capture) Write(b []byte) (int, error) {
	if c.status == 0 {
		c.status = http.StatusOK
	}
	if room := captureLimit - c.body.Len(); room > 0 {
		c.body.Write(b[:min(len(b), room)])
	}
	return c.ResponseWriter.Write(b)
}

func (c *capture) Flush() {
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// readBody reads r's body and puts it back for the edge.
func readBody(r *http.Request) ([]byte, error) {
	b, err := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(b))
	return b, err
}

func (t *Tap) invoke(edge http.Handler, w http.ResponseWriter, r *http.Request, fn string) {
	payload, err := readBody(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	inv := Invocation{Function: fn, Start: t.now(), OperationID: FindString(payload, "operationId"),
		Async: r.Header.Get("X-Amz-Invocation-Type") == "Event"}
	c := &capture{ResponseWriter: w}
	edge.ServeHTTP(c, r)
	inv.Duration = t.now().Sub(inv.Start)
	inv.FunctionError = c.Header().Get("X-Amz-Function-Error") != ""
	inv.NoResponse = c.status == 0 || c.status >= 500
	if fn == sizing.Recorder && !inv.Failed() {
		var d struct {
			Next string `json:"next"`
		}
		if json.Unmarshal(c.body.Bytes(), &d) == nil {
			inv.Next = d.Next
		}
	}
	t.mu.Lock()
	t.invocations = append(t.invocations, inv)
	t.last = t.now()
	t.mu.Unlock()
}

// FindString returns the first string value of key in the JSON document doc, looking
// breadth first (so a top-level one wins over a nested one) and, at one depth, in the order
// of the keys' names; "" when there is none.
func FindString(doc []byte, key string) string {
	var v any
	if json.Unmarshal(doc, &v) != nil {
		return ""
	}
	level := []any{v}
	for len(level) > 0 {
		var next []any
		for _, v := range level {
			switch v := v.(type) {
			case map[string]any:
				if s, ok := v[key].(string); ok {
					return s
				}
				for _, k := range slices.Sorted(maps.Keys(v)) {
					next = append(next, v[k])
				}
			case []any:
				next = append(next, v...)
			}
		}
		level = next
	}
	return ""
}

// EntrySize is a PutEvents entry's size as EventBridge counts it ("Calculating PutEvents
// event entry size"): 14 bytes for Time when set, and the UTF-8 bytes of Source,
// DetailType, Detail and each of Resources. Each started 64 KB of it is billed as an event.
func EntrySize(source, detailType, detail string, resources []string, hasTime bool) int {
	n := len(source) + len(detailType) + len(detail)
	for _, r := range resources {
		n += len(r)
	}
	if hasTime {
		n += 14
	}
	return n
}

func (t *Tap) putEvents(edge http.Handler, w http.ResponseWriter, r *http.Request) {
	body, err := readBody(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var in struct {
		Entries []struct {
			Source, DetailType, Detail string
			Resources                  []string
			Time                       any
		}
	}
	_ = json.Unmarshal(body, &in)
	c := &capture{ResponseWriter: w}
	edge.ServeHTTP(c, r)
	if c.status != http.StatusOK {
		t.touch()
		return
	}
	var out struct {
		Entries []struct{ ErrorCode string }
	}
	_ = json.Unmarshal(c.body.Bytes(), &out)
	t.mu.Lock()
	defer t.mu.Unlock()
	for i, e := range in.Entries {
		if i < len(out.Entries) && out.Entries[i].ErrorCode != "" {
			continue // refused: not published, not billed
		}
		t.events = append(t.events, EntrySize(e.Source, e.DetailType, e.Detail, e.Resources, e.Time != nil))
	}
	t.last = t.now()
}

type sqsMessage struct {
	MessageBody       string
	MessageAttributes map[string]struct {
		DataType, StringValue string
		BinaryValue           []byte
	}
}

// size is what SQS counts of a message: its body and its attributes' names, types and values.
func (m sqsMessage) size() int {
	n := len(m.MessageBody)
	for name, a := range m.MessageAttributes {
		n += len(name) + len(a.DataType) + len(a.StringValue) + len(a.BinaryValue)
	}
	return n
}

func (t *Tap) sqsCall(edge http.Handler, w http.ResponseWriter, r *http.Request, action string) {
	body, err := readBody(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	call := SQSCall{Action: action}
	var q struct{ QueueUrl string }
	if json.Unmarshal(body, &q) == nil {
		call.Queue = q.QueueUrl[strings.LastIndexByte(q.QueueUrl, '/')+1:]
	}
	switch action {
	case "SendMessage":
		var m sqsMessage
		_ = json.Unmarshal(body, &m)
		call.Messages, call.Bytes = 1, m.size()
	case "SendMessageBatch":
		var in struct{ Entries []sqsMessage }
		_ = json.Unmarshal(body, &in)
		for _, m := range in.Entries {
			call.Messages++
			call.Bytes += m.size()
		}
	}
	c := &capture{ResponseWriter: w}
	edge.ServeHTTP(c, r)
	t.mu.Lock()
	defer t.mu.Unlock()
	if c.status == http.StatusOK {
		t.sqs = append(t.sqs, call)
	}
	t.last = t.now()
}
