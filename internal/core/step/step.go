// Package step is longrun's side of the worker protocol (docs/worker-protocol.md): the step
// request longrun sends a type's worker, and the step report it reads back. The public
// worker package (worker/) is the other side; both are held to the JSON Schemas in
// api/worker/, so that a worker written in any language and one written with the Go package
// see the same protocol.
package step

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/longrun-dev/longrun/internal/core/runes"
)

// Protocol names this version of the protocol in every request.
const Protocol = "longrun.step.v1"

// Request is what a worker receives for one step.
type Request struct {
	Protocol    string          `json:"protocol"`
	OperationID string          `json:"operationId"`
	Type        string          `json:"type"`
	Version     int             `json:"version"`
	Input       json.RawMessage `json:"input"`
	Step        int             `json:"step"` // 1-based
	MaxSteps    int             `json:"maxSteps"`
	// Attempt is the how-manieth run of this step: 0 (absent) on its first, 2 and up when
	// an operator had it run again after its outcome was unknown (operation.Retry).
	Attempt  int             `json:"attempt,omitempty"`
	State    json.RawMessage `json:"state,omitempty"`
	Deadline string          `json:"deadline"`
	// StepTimeoutSeconds is how long this step may run before longrun gives up on it.
	StepTimeoutSeconds int `json:"stepTimeoutSeconds"`
	// CorrelationID is the operation's correlation id (docs/observability.md), for the
	// worker's own logs; absent for operations admitted before it was recorded.
	CorrelationID string `json:"correlationId,omitempty"`
	// Signals are the signals that arrived since the step before was given its own, in
	// the order they arrived (absent: none).
	Signals []Signal `json:"signals,omitempty"`
	// Awaited is, on the step after a wait for a signal, what the wait came to.
	Awaited *Awaited `json:"awaited,omitempty"`
	// Callbacks are the callback URLs of the type's callable signals, by signal name: a
	// worker hands one to a third party, which sends the signal by POSTing its data there.
	Callbacks map[string]string `json:"callbacks,omitempty"`
	// Seal is longrun's MAC over the rest of the request (internal/core/seal), by which the
	// recorder knows the request when the worker's destination hands it back. It is
	// opaque to the worker, which ignores it.
	Seal string `json:"seal,omitempty"`
}

// Signal is a signal as a step receives it: its name, its data, when it arrived, and who
// sent it (the principal; absent for a callback, whose sender holds no credentials).
type Signal struct {
	Name       string          `json:"name"`
	Data       json.RawMessage `json:"data"`
	ReceivedAt string          `json:"receivedAt"`
	Sender     string          `json:"sender,omitempty"`
	Via        string          `json:"via"` // api or callback
}

// Awaited is what a wait for a signal came to: the signal waited for, and whether the wait
// timed out before it came (then Signals holds no signal of that name).
type Awaited struct {
	Signal   string `json:"signal"`
	TimedOut bool   `json:"timedOut"`
}

// Await is a continue report's wait for a signal: the next step runs when the signal
// arrives, or after TimeoutSeconds without it.
type Await struct {
	Signal         string `json:"signal"`
	TimeoutSeconds int    `json:"timeoutSeconds"`
}

// Status is what a report says the step came to.
type Status string

const (
	Continue       Status = "continue"
	Succeeded      Status = "succeeded"
	Failed         Status = "failed"
	OutcomeUnknown Status = "outcome_unknown" // the effect may have happened; the result is lost
)

// Report is a worker's answer for one step.
type Report struct {
	Status       Status          `json:"status"`
	State        json.RawMessage `json:"state,omitempty"`
	Progress     *Progress       `json:"progress,omitempty"`
	Wait         bool            `json:"wait,omitempty"`
	DelaySeconds *int            `json:"delaySeconds,omitempty"`
	Await        *Await          `json:"await,omitempty"`
	Result       json.RawMessage `json:"result,omitempty"`
	Problem      *Problem        `json:"problem,omitempty"`
}

// Progress is what a worker may say about how far it has come; longrun counts the
// completed steps itself.
type Progress struct {
	TotalSteps int      `json:"totalSteps,omitempty"`
	Percent    *float64 `json:"percent,omitempty"`
	Message    string   `json:"message,omitempty"`
}

// Problem is a worker's typed failure.
type Problem struct {
	Code   string `json:"code"`
	Title  string `json:"title"`
	Detail string `json:"detail,omitempty"`
}

// MaxPause is the longest the workflow waits before longrun looks at the operation again
// while a worker waits between steps: a long wait is taken in pauses of at most this, so
// that a cancel or a deadline during it is seen within it.
const MaxPause = 5 * time.Minute

// Limits of a report (api/worker/step-report.schema.json and docs/worker-protocol.md say the
// same). State and result are measured as compact JSON, which the schema cannot check; the
// lengths of strings are counted in characters (Unicode code points), as JSON Schema counts.
const (
	MaxStateBytes   = 32 << 10
	MaxResultBytes  = 64 << 10
	MaxDelaySeconds = 86400
	// MaxAwaitSeconds is the longest wait for a signal a report may ask for (30 days);
	// the operation's deadline may end it sooner.
	MaxAwaitSeconds = 30 * 86400
	maxMessage      = 200
	maxTitle        = 200
	maxDetail       = 2000
)

var codePattern = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)

// ErrInvalidReport means a worker's answer is not a report of this protocol.
var ErrInvalidReport = errors.New("invalid step report")

// allowed is the members each status allows (the schema's additionalProperties: false).
var allowed = map[Status][]string{
	Continue:       {"status", "state", "progress", "delaySeconds", "wait", "await"},
	Succeeded:      {"status", "result", "progress"},
	Failed:         {"status", "problem", "progress"},
	OutcomeUnknown: {"status", "problem", "progress"},
}

// ParseReport reads and checks a report exactly as api/worker/step-report.schema.json does,
// and holds it to the size limits the schema cannot say: a member a status does not allow
// (whatever its value, null too), an unknown or wrongly cased member, a value of the wrong
// JSON type and a value out of range are refused, so that a worker's mistake is seen, not
// guessed at. Numbers are read exactly, as JSON Schema reads them: 30.0 is the integer 30,
// and 100.00000000000000001 is more than 100.
//
// In the Report, State and Result are compact JSON; a state of null is no state (nil), and
// an absent result is nil. A totalSteps too big for an int is math.MaxInt.
func ParseReport(raw []byte) (Report, error) {
	return parse(raw, false)
}

// ParseReportCuttingText is ParseReport, except that a problem's title or detail, or a
// progress message, longer than the protocol allows is cut to its limit (its first
// characters, the last of them "…") rather than refused. Such text often comes from
// elsewhere, a downstream error or the caller's own input, and refusing it would record
// outcome_unknown, which holds the operation's target and quota until an operator acts: a
// caller could do that on demand. Cutting it changes no status, state, result or number,
// so nothing the worker meant is guessed at. A report with any other fault, an empty title
// included, is still ErrInvalidReport.
func ParseReportCuttingText(raw []byte) (Report, error) {
	return parse(raw, true)
}

func parse(raw []byte, cutText bool) (Report, error) {
	r, err := parseReport(raw, cutText)
	if err != nil {
		return Report{}, fmt.Errorf("%w: %v", ErrInvalidReport, err)
	}
	return r, nil
}

func parseReport(raw []byte, cutText bool) (Report, error) {
	m, err := object(raw, "a report")
	if err != nil {
		return Report{}, err
	}
	rawStatus, ok := m["status"]
	if !ok {
		return Report{}, errors.New("status is missing")
	}
	status, err := str(rawStatus, "status")
	if err != nil {
		return Report{}, err
	}
	r := Report{Status: Status(status)}
	names, ok := allowed[r.Status]
	if !ok {
		return Report{}, fmt.Errorf("status %q is not one of continue, succeeded, failed, outcome_unknown", status)
	}
	for _, k := range sortedKeys(m) {
		if !slices.Contains(names, k) {
			return Report{}, fmt.Errorf("%q is not a member of a %s report", k, r.Status)
		}
		v := m[k]
		switch k {
		case "state":
			state, err := compact(v, "state")
			if err != nil {
				return Report{}, err
			}
			if len(state) > MaxStateBytes {
				return Report{}, fmt.Errorf("state takes %d bytes as compact JSON, more than %d", len(state), MaxStateBytes)
			}
			if string(state) != "null" { // null is no state
				r.State = state
			}
		case "delaySeconds":
			d, err := parseNumber(v, "delaySeconds")
			if err != nil {
				return Report{}, err
			}
			if !d.integer() || d.cmp(0) < 0 || d.cmp(MaxDelaySeconds) > 0 {
				return Report{}, fmt.Errorf("delaySeconds %s is not an integer from 0 to %d", v, MaxDelaySeconds)
			}
			secs := d.int()
			r.DelaySeconds = &secs
		case "wait":
			switch string(v) {
			case "true":
				r.Wait = true
			case "false":
			default:
				return Report{}, fmt.Errorf("wait must be true or false, not %.40s", v)
			}
		case "await":
			if r.Await, err = parseAwait(v); err != nil {
				return Report{}, err
			}
		case "result":
			if _, err := object(v, "result"); err != nil {
				return Report{}, err
			}
			result, err := compact(v, "result")
			if err != nil {
				return Report{}, err
			}
			if len(result) > MaxResultBytes {
				return Report{}, fmt.Errorf("result takes %d bytes as compact JSON, more than %d", len(result), MaxResultBytes)
			}
			r.Result = result
		case "problem":
			if r.Problem, err = parseProblem(v, cutText); err != nil {
				return Report{}, err
			}
		case "progress":
			if r.Progress, err = parseProgress(v, cutText); err != nil {
				return Report{}, err
			}
		}
	}
	if r.Status == Failed && r.Problem == nil {
		return Report{}, errors.New("status failed needs a problem")
	}
	if r.Await != nil && (r.Wait || r.DelaySeconds != nil) {
		return Report{}, errors.New("await cannot go with wait or delaySeconds: a report waits for a signal or for a time")
	}
	return r, nil
}

// signalName is what a signal's name must be (optype.SignalNamePattern says the same).
var signalName = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,63}$`)

func parseAwait(raw json.RawMessage) (*Await, error) {
	m, err := object(raw, "await")
	if err != nil {
		return nil, err
	}
	var a Await
	for _, k := range sortedKeys(m) {
		v := m[k]
		switch k {
		case "signal":
			if a.Signal, err = str(v, "await.signal"); err != nil {
				return nil, err
			}
			if !signalName.MatchString(a.Signal) {
				return nil, fmt.Errorf("await.signal %q must match %s", runes.Cut(a.Signal, 80), signalName)
			}
		case "timeoutSeconds":
			d, err := parseNumber(v, "await.timeoutSeconds")
			if err != nil {
				return nil, err
			}
			if !d.integer() || d.cmp(1) < 0 || d.cmp(MaxAwaitSeconds) > 0 {
				return nil, fmt.Errorf("await.timeoutSeconds %s is not an integer from 1 to %d", v, MaxAwaitSeconds)
			}
			a.TimeoutSeconds = d.int()
		default:
			return nil, fmt.Errorf("%q is not a member of await", k)
		}
	}
	for _, k := range []string{"signal", "timeoutSeconds"} {
		if _, ok := m[k]; !ok {
			return nil, fmt.Errorf("await.%s is missing", k)
		}
	}
	return &a, nil
}

func parseProblem(raw json.RawMessage, cutText bool) (*Problem, error) {
	m, err := object(raw, "problem")
	if err != nil {
		return nil, err
	}
	var p Problem
	for _, k := range sortedKeys(m) {
		var dst *string
		switch k {
		case "code":
			dst = &p.Code
		case "title":
			dst = &p.Title
		case "detail":
			dst = &p.Detail
		default:
			return nil, fmt.Errorf("%q is not a member of problem", k)
		}
		if *dst, err = str(m[k], "problem."+k); err != nil {
			return nil, err
		}
	}
	for _, k := range []string{"code", "title"} {
		if _, ok := m[k]; !ok {
			return nil, fmt.Errorf("problem.%s is missing", k)
		}
	}
	if cutText {
		p.Title, p.Detail = runes.Cut(p.Title, maxTitle), runes.Cut(p.Detail, maxDetail)
	}
	switch {
	case !codePattern.MatchString(p.Code):
		return nil, fmt.Errorf("problem.code %q must match %s", p.Code, codePattern)
	case p.Title == "" || utf8.RuneCountInString(p.Title) > maxTitle:
		return nil, fmt.Errorf("problem.title must be 1 to %d characters", maxTitle)
	case utf8.RuneCountInString(p.Detail) > maxDetail:
		return nil, fmt.Errorf("problem.detail must be at most %d characters", maxDetail)
	}
	return &p, nil
}

func parseProgress(raw json.RawMessage, cutText bool) (*Progress, error) {
	m, err := object(raw, "progress")
	if err != nil {
		return nil, err
	}
	var p Progress
	for _, k := range sortedKeys(m) {
		v := m[k]
		switch k {
		case "totalSteps":
			n, err := parseNumber(v, "progress.totalSteps")
			if err != nil {
				return nil, err
			}
			if !n.integer() || n.cmp(1) < 0 {
				return nil, fmt.Errorf("progress.totalSteps %s is not an integer of at least 1", v)
			}
			p.TotalSteps = n.int()
		case "percent":
			n, err := parseNumber(v, "progress.percent")
			if err != nil {
				return nil, err
			}
			if n.cmp(0) < 0 || n.cmp(100) > 0 {
				return nil, fmt.Errorf("progress.percent %s is not from 0 to 100", v)
			}
			// In range, so neither infinite nor negative; a value too small for a float64 is 0.
			f, _ := strconv.ParseFloat(string(v), 64)
			f = math.Abs(f) // -0 is 0
			p.Percent = &f
		case "message":
			if p.Message, err = str(v, "progress.message"); err != nil {
				return nil, err
			}
			if cutText {
				p.Message = runes.Cut(p.Message, maxMessage)
			}
			if utf8.RuneCountInString(p.Message) > maxMessage {
				return nil, fmt.Errorf("progress.message must be at most %d characters", maxMessage)
			}
		default:
			return nil, fmt.Errorf("%q is not a member of progress", k)
		}
	}
	return &p, nil
}

// object decodes a JSON object into its members, matched by their exact names. It refuses
// any other JSON value, and anything after the object but JSON whitespace.
func object(raw []byte, what string) (map[string]json.RawMessage, error) {
	if t := bytes.TrimLeft(raw, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return nil, fmt.Errorf("%s must be a JSON object", what)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("%s: %v", what, err)
	}
	return m, nil
}

// str decodes a member that must be a JSON string (not null).
func str(raw json.RawMessage, member string) (string, error) {
	var s string
	if len(raw) == 0 || raw[0] != '"' {
		return "", fmt.Errorf("%s must be a string, not %.40s", member, raw)
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fmt.Errorf("%s: %v", member, err)
	}
	return s, nil
}

func compact(raw json.RawMessage, member string) (json.RawMessage, error) {
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, fmt.Errorf("%s: %v", member, err)
	}
	return buf.Bytes(), nil
}

func sortedKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// decimal is a JSON number read exactly, as JSON Schema compares numbers: the value is
// ±digits×10^exp, digits without leading or trailing zeros ("" for zero), so 30, 30.0, 3e1
// and 300e-1 are the same decimal.
type decimal struct {
	neg    bool
	digits string
	exp    int64
}

var numberSyntax = regexp.MustCompile(`^(-?)(0|[1-9][0-9]*)(?:\.([0-9]+))?(?:[eE]([+-]?)([0-9]+))?$`)

// maxExp bounds the exponents of a decimal: a JSON number whose exponent is beyond it is
// far out of every range a report has, and is taken as being at this bound.
const maxExp = 1 << 40

// parseNumber reads a member that must be a JSON number.
func parseNumber(raw json.RawMessage, member string) (decimal, error) {
	g := numberSyntax.FindSubmatch(raw)
	if g == nil {
		return decimal{}, fmt.Errorf("%s must be a number, not %.40s", member, raw)
	}
	var exp int64
	for _, c := range bytes.TrimLeft(g[5], "0") {
		if exp = exp*10 + int64(c-'0'); exp > maxExp {
			exp = maxExp
			break
		}
	}
	if string(g[4]) == "-" {
		exp = -exp
	}
	digits := string(g[2]) + string(g[3])
	exp -= int64(len(g[3]))
	trimmed := strings.TrimRight(digits, "0")
	exp += int64(len(digits) - len(trimmed))
	trimmed = strings.TrimLeft(trimmed, "0")
	if trimmed == "" {
		return decimal{}, nil // zero, -0 too
	}
	return decimal{neg: len(g[1]) > 0, digits: trimmed, exp: exp}, nil
}

func (d decimal) integer() bool { return d.digits == "" || d.exp >= 0 }

// magnitude is the number of digits of d's integer part: 10^(magnitude-1) <= |d| < 10^magnitude.
func (d decimal) magnitude() int64 { return int64(len(d.digits)) + d.exp }

// cmp compares d with n: -1 when d < n, 0 when they are equal, +1 when d > n.
func (d decimal) cmp(n uint64) int {
	switch {
	case d.digits == "" && n == 0:
		return 0
	case d.digits == "":
		return -1
	case d.neg:
		return -1
	case n == 0:
		return 1
	}
	e, _ := parseNumber(json.RawMessage(strconv.FormatUint(n, 10)), "")
	if c := cmpInt64(d.magnitude(), e.magnitude()); c != 0 {
		return c
	}
	// The same magnitude: compare digit by digit; of two that agree as far as the shorter
	// goes, the longer is more (its last digit is not zero).
	l := min(len(d.digits), len(e.digits))
	if c := strings.Compare(d.digits[:l], e.digits[:l]); c != 0 {
		return c
	}
	return cmpInt64(int64(len(d.digits)), int64(len(e.digits)))
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// int is an integer decimal as an int, saturated at math.MaxInt and math.MinInt.
func (d decimal) int() int {
	if d.digits == "" {
		return 0
	}
	if d.magnitude() <= 19 {
		s := d.digits + strings.Repeat("0", int(d.exp))
		if d.neg {
			s = "-" + s
		}
		if n, err := strconv.ParseInt(s, 10, 0); err == nil {
			return int(n)
		}
	}
	if d.neg {
		return math.MinInt
	}
	return math.MaxInt
}

// Names of the ways an invocation of a worker can fail before it answers, as Step Functions
// names a Lambda task's errors; any other name is the function's own errorType.
const (
	// ErrNotInvoked: Lambda refused the invocation (throttled, after retries, or any other
	// refusal before the function ran), so the step never ran. The name is Step Functions'
	// for a throttled Lambda task, which the workflow's Catch reported before the recorder
	// invoked workers itself.
	ErrNotInvoked = "Lambda.TooManyRequestsException"
	// ErrTimeout: the step did not answer within its stepTimeout; it may have acted.
	ErrTimeout = "States.Timeout"
)

// InvokeError is how an invocation of a worker for a step failed: Name is ErrThrottled,
// ErrTimeout, the function's errorType when the function itself failed, or another
// Lambda error; Cause says more, for the record.
type InvokeError struct {
	Name  string
	Cause string
}

func (e *InvokeError) Error() string { return "step invocation failed: " + e.Name + ": " + e.Cause }
