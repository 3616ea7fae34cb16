package worker

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"
)

// Progress is how far the work has come, shown on the operation. It may go with a report of
// any status. Every member is optional, and its zero value is "not reported". longrun
// counts the steps completed itself; a worker never reports them.
type Progress struct {
	// TotalSteps is how many steps the work is expected to take, at least 1.
	TotalSteps int `json:"totalSteps,omitempty"`
	// Percent is how much of the work is done, 0 to 100; nil is not reported (write
	// new(40.0) for 40 %).
	Percent *float64 `json:"percent,omitempty"`
	// Message says what is going on, in at most [MaxMessageChars] characters;
	// [Report.WithProgress] cuts a longer one.
	Message string `json:"message,omitempty"`
}

// Problem says why a step failed (or, optionally, why its outcome is unknown), in the
// protocol's terms: Code matches ^[a-z][a-z0-9_]{0,63}$ and names the kind of failure for
// programs, Title (required, at most [MaxTitleChars] characters) says it to people, and
// Detail (at most [MaxDetailChars] characters) says what happened this time. A longer title
// or detail is cut to its limit, ending with "…" (see [Fail]).
//
// A *Problem is also an error: a [Func] that returns one as its error (even wrapped) makes
// a failed report, as [Fail] does, instead of failing the invocation.
type Problem struct {
	Code   string `json:"code"`
	Title  string `json:"title"`
	Detail string `json:"detail,omitempty"`
}

func (p *Problem) Error() string {
	if p.Detail == "" {
		return p.Code + ": " + p.Title
	}
	return p.Code + ": " + p.Title + ": " + p.Detail
}

// Report is what a step returns to longrun. Build one with [Continue], [Succeed], [Fail] or
// [ResultLost]; its methods return modified copies. The zero Report is no report: a Func
// that returns it without an error fails its invocation.
//
// A Report is checked against the protocol when it is encoded (by [Handler], [Run] and
// MarshalJSON): a report that breaks the protocol's limits is an error there, not a report
// longrun would have to reject.
type Report struct {
	status   Status
	state    json.RawMessage
	result   json.RawMessage
	problem  *Problem
	progress *Progress
	delay    *int // seconds
	wait     bool
	await    *await
	err      error // from building it
}

// await is a continue report's wait for a signal, as it is sent.
type await struct {
	Signal         string `json:"signal"`
	TimeoutSeconds int    `json:"timeoutSeconds"`
}

// Continue reports that the work is not done: longrun invokes the next step with state, the
// JSON encoding of state (at most [MaxStateBytes]), as the next step's [Step.State]. A nil
// state, or one that encodes as null, carries none.
//
// Without [Report.Wait], [Report.After] or [Report.AwaitSignal] the next step is invoked at
// once.
func Continue(state any) Report {
	r := Report{status: StatusContinue}
	r.state, r.err = encode("state", state)
	return r
}

// Succeed reports that the work is done, with result, the JSON encoding of result, as the
// operation's result. It must encode as a JSON object of at most [MaxResultBytes]; a nil
// result (or one that encodes as null) is the empty object.
func Succeed(result any) Report {
	r := Report{status: StatusSucceeded}
	r.result, r.err = encode("result", result)
	return r
}

// Fail reports that the work did not and will not happen, for the reason the problem says
// (see [Problem] for what code, title and detail must be; detail may be empty). longrun
// records the operation failed with this problem.
//
// A title longer than [MaxTitleChars] characters, or a detail longer than
// [MaxDetailChars], is cut to its limit on a character boundary and ends with "…". So text
// from elsewhere, such as an error message, never makes a report that the protocol refuses:
// that would fail the invocation, which longrun records as outcome_unknown.
//
// Fail only when nothing of the work happened, or what happened is undone: after an effect
// whose result is lost, report [ResultLost].
func Fail(code, title, detail string) Report {
	return Report{status: StatusFailed, problem: newProblem(code, title, detail)}
}

// ResultLost reports that the work may have happened and its result is lost (status
// outcome_unknown), with the problem code [CodeResultLost] and detail, if not empty, cut as
// [Fail] cuts it. longrun records outcome_unknown and never retries the work blindly:
// someone resolves it.
func ResultLost(detail string) Report {
	return Report{status: StatusOutcomeUnknown, problem: newProblem(CodeResultLost, "The result of the step is lost.", detail)}
}

func newProblem(code, title, detail string) *Problem {
	return &Problem{Code: code, Title: clamp(title, MaxTitleChars), Detail: clamp(detail, MaxDetailChars)}
}

// clamp cuts s to at most limit characters, the last of them "…" when it cut. A byte that
// is not UTF-8 counts as one character and becomes U+FFFD, as encoding/json writes it, so
// the result is what the protocol counts and valid UTF-8. It is longrun's runes.Cut, copied
// because this module imports nothing of longrun's; api/workerclamp_test.go holds the two to
// one behaviour.
func clamp(s string, limit int) string {
	if utf8.RuneCountInString(s) <= limit {
		return s
	}
	var b strings.Builder
	n := 0
	for _, r := range s { // an invalid byte is one utf8.RuneError
		if n == limit-1 {
			break
		}
		b.WriteRune(r)
		n++
	}
	b.WriteString("…")
	return b.String()
}

// Wait returns a continue report that asks longrun to wait the type's configured stepDelay
// before the next step: how a worker polls an external system without sleeping in Lambda.
// [Report.After] wins over it.
func (r Report) Wait() Report {
	if r.continuing("Wait") {
		r.wait = true
	}
	return r
}

// After returns a continue report that asks longrun to wait d (rounded up to a whole
// second, at most [MaxDelay]) before the next step. It wins over [Report.Wait]; After(0)
// asks for the next step at once even if Wait was called.
func (r Report) After(d time.Duration) Report {
	if !r.continuing("After") {
		return r
	}
	if d < 0 || d > MaxDelay {
		r.err = errors.Join(r.err, fmt.Errorf("worker: a delay of %v is not between 0 and %v", d, MaxDelay))
		return r
	}
	secs := int((d + time.Second - 1) / time.Second)
	r.delay = &secs
	return r
}

// AwaitSignal returns a continue report that asks longrun to run the next step when the
// signal called name arrives, or when timeout (rounded up to a whole second, more than 0
// and at most [MaxAwait]) has passed without it: how a worker waits for an approval or a
// third party's webhook without polling. If such a signal arrived before and no step was
// given it yet, the next step runs at once. The next step finds the signal with
// [Step.Signal], what the wait came to in [Step.Awaited], and the report's state as usual.
//
// Nothing runs while the work waits, neither the worker nor longrun's workflow, and nothing
// polls: the signal wakes the work, or longrun's reconciler does at the timeout. A cancel
// during the wait ends the operation canceled at once; the operation's deadline, if it
// comes first, ends it failed (deadline_exceeded).
//
// name must match ^[a-z][a-z0-9_-]{0,63}$ and be a signal the type declares (no other can
// arrive). A report waits for a signal or for a time, not both: AwaitSignal with
// [Report.Wait] or [Report.After] is an error when the report is encoded.
func (r Report) AwaitSignal(name string, timeout time.Duration) Report {
	if !r.continuing("AwaitSignal") {
		return r
	}
	if timeout <= 0 || timeout > MaxAwait {
		r.err = errors.Join(r.err, fmt.Errorf("worker: the timeout %v of the wait for the signal %q is not more than 0 and at most %v", timeout, clamp(name, 80), MaxAwait))
		return r
	}
	secs := int((timeout + time.Second - 1) / time.Second)
	r.await = &await{Signal: name, TimeoutSeconds: secs}
	return r
}

func (r *Report) continuing(method string) bool {
	if r.status == StatusContinue {
		return true
	}
	r.err = errors.Join(r.err, fmt.Errorf("worker: %s is only for a continue report, not a %q one", method, r.statusName()))
	return false
}

// WithProgress returns the report with p as its progress, its message cut to
// [MaxMessageChars] characters as [Fail] cuts a detail (a percent of -0 is sent as 0).
func (r Report) WithProgress(p Progress) Report {
	if p.Percent != nil {
		percent := *p.Percent + 0 // -0 is 0, as longrun records it
		p.Percent = &percent
	}
	p.Message = clamp(p.Message, MaxMessageChars)
	r.progress = &p
	return r
}

// Status is the report's status ("" for the zero Report).
func (r Report) Status() Status { return r.status }

// State is the state a continue report carries, as JSON; nil when it carries none.
func (r Report) State() json.RawMessage { return r.state }

// Result is a succeeded report's result, as JSON ({} when it was given none); nil for the
// other statuses.
func (r Report) Result() json.RawMessage {
	if r.status == StatusSucceeded && r.result == nil {
		return json.RawMessage("{}")
	}
	return r.result
}

// Problem is the report's problem, or nil.
func (r Report) Problem() *Problem {
	if r.problem == nil {
		return nil
	}
	p := *r.problem
	return &p
}

// Progress is the report's progress, or nil.
func (r Report) Progress() *Progress {
	if r.progress == nil {
		return nil
	}
	return r.WithProgress(*r.progress).progress
}

// Delay is the delay a continue report asks for with [Report.After], and whether it asks
// for one.
func (r Report) Delay() (time.Duration, bool) {
	if r.delay == nil {
		return 0, false
	}
	return time.Duration(*r.delay) * time.Second, true
}

// WaitsStepDelay reports whether a continue report asks for the type's stepDelay
// ([Report.Wait]). A delay from [Report.After] wins over it.
func (r Report) WaitsStepDelay() bool { return r.wait }

// AwaitsSignal is the signal a continue report waits for with [Report.AwaitSignal] and the
// wait's timeout, and whether it waits for one.
func (r Report) AwaitsSignal() (name string, timeout time.Duration, ok bool) {
	if r.await == nil {
		return "", 0, false
	}
	return r.await.Signal, time.Duration(r.await.TimeoutSeconds) * time.Second, true
}

func (r Report) statusName() Status {
	if r.status == "" {
		return "zero"
	}
	return r.status
}

// wireReport is a report as it is sent, members in the protocol's order.
type wireReport struct {
	Status       Status          `json:"status"`
	State        json.RawMessage `json:"state,omitempty"`
	Result       json.RawMessage `json:"result,omitempty"`
	Problem      *Problem        `json:"problem,omitempty"`
	Progress     *Progress       `json:"progress,omitempty"`
	DelaySeconds *int            `json:"delaySeconds,omitempty"`
	Wait         bool            `json:"wait,omitempty"`
	Await        *await          `json:"await,omitempty"`
}

// MarshalJSON writes the report as the step's return value, after checking it against the
// protocol.
func (r Report) MarshalJSON() ([]byte, error) {
	if err := r.validate(); err != nil {
		return nil, err
	}
	return json.Marshal(wireReport{
		Status: r.status, State: r.state, Result: r.result, Problem: r.problem,
		Progress: r.progress, DelaySeconds: r.delay, Wait: r.wait, Await: r.await,
	})
}

// UnmarshalJSON reads a step report exactly as longrun's recorder reads one. It is as strict
// as the protocol's schema: an unknown or wrongly cased member, a member the status does not
// allow (null too), a value of the wrong JSON type or out of its range is an error. Numbers
// are read exactly, as JSON Schema reads them: 30.0 and 3e1 are the integer 30, and
// 100.00000000000000001 is more than 100; a totalSteps too big for an int is math.MaxInt.
// The state and the result are held to the size limits the schema cannot say, measured as
// compact JSON, and a state of null is no state. The one fault it forgives, as longrun
// does, is text over its length limit: a problem's title or detail, or a progress message,
// is cut to its limit as [Fail] cuts it. The protocol's test vectors (api/worker/vectors)
// hold it to the recorder.
func (r *Report) UnmarshalJSON(b []byte) error {
	rep, err := decodeReport(b)
	if err != nil {
		return fmt.Errorf("worker: invalid report: %w", err)
	}
	if err := rep.validate(); err != nil {
		return err
	}
	*r = rep
	return nil
}

// allowed is the members each status allows.
var allowed = map[Status][]string{
	StatusContinue:       {"status", "state", "progress", "delaySeconds", "wait", "await"},
	StatusSucceeded:      {"status", "result", "progress"},
	StatusFailed:         {"status", "problem", "progress"},
	StatusOutcomeUnknown: {"status", "problem", "progress"},
}

func decodeReport(b []byte) (Report, error) {
	m, err := members(b, "a report")
	if err != nil {
		return Report{}, err
	}
	raw, ok := m["status"]
	if !ok {
		return Report{}, errors.New("status is missing")
	}
	status, err := str(raw, "status")
	if err != nil {
		return Report{}, err
	}
	rep := Report{status: Status(status)}
	names, ok := allowed[rep.status]
	if !ok {
		return Report{}, fmt.Errorf("status %q is not one of continue, succeeded, failed, outcome_unknown", status)
	}
	for _, k := range sortedKeys(m) {
		if !slices.Contains(names, k) {
			return Report{}, fmt.Errorf("%q is not a member of a %s report", k, rep.status)
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
				rep.state = state
			}
		case "result":
			if _, err := members(v, "result"); err != nil {
				return Report{}, err
			}
			result, err := compact(v, "result")
			if err != nil {
				return Report{}, err
			}
			if len(result) > MaxResultBytes {
				return Report{}, fmt.Errorf("result takes %d bytes as compact JSON, more than %d", len(result), MaxResultBytes)
			}
			rep.result = result
		case "problem":
			if rep.problem, err = decodeProblem(v); err != nil {
				return Report{}, err
			}
		case "progress":
			if rep.progress, err = decodeProgress(v); err != nil {
				return Report{}, err
			}
		case "delaySeconds":
			secs, err := integer(v, "delaySeconds", 0, uint64(MaxDelay/time.Second))
			if err != nil {
				return Report{}, err
			}
			rep.delay = &secs
		case "wait":
			switch string(v) {
			case "true":
				rep.wait = true
			case "false":
			default:
				return Report{}, fmt.Errorf("wait must be true or false, not %.40s", v)
			}
		case "await":
			if rep.await, err = decodeAwait(v); err != nil {
				return Report{}, err
			}
		}
	}
	if rep.status == StatusFailed && rep.problem == nil {
		return Report{}, errors.New("status failed needs a problem")
	}
	if rep.await != nil && (rep.wait || rep.delay != nil) {
		return Report{}, errors.New("await cannot go with wait or delaySeconds: a report waits for a signal or for a time")
	}
	return rep, nil
}

func decodeAwait(raw json.RawMessage) (*await, error) {
	m, err := members(raw, "await")
	if err != nil {
		return nil, err
	}
	var a await
	for _, k := range sortedKeys(m) {
		switch k {
		case "signal":
			if a.Signal, err = str(m[k], "await.signal"); err != nil {
				return nil, err
			}
		case "timeoutSeconds":
			if a.TimeoutSeconds, err = integer(m[k], "await.timeoutSeconds", 1, uint64(MaxAwait/time.Second)); err != nil {
				return nil, err
			}
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

// decodeProblem reads a problem, its title and detail cut to their limits.
func decodeProblem(raw json.RawMessage) (*Problem, error) {
	m, err := members(raw, "problem")
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
	p.Title, p.Detail = clamp(p.Title, MaxTitleChars), clamp(p.Detail, MaxDetailChars)
	return &p, nil
}

// decodeProgress reads a progress, its message cut to its limit.
func decodeProgress(raw json.RawMessage) (*Progress, error) {
	m, err := members(raw, "progress")
	if err != nil {
		return nil, err
	}
	var p Progress
	for _, k := range sortedKeys(m) {
		v := m[k]
		switch k {
		case "totalSteps":
			if p.TotalSteps, err = integer(v, "progress.totalSteps", 1, unbounded); err != nil {
				return nil, err
			}
		case "percent":
			d, err := parseNumber(v, "progress.percent")
			if err != nil {
				return nil, err
			}
			if d.cmp(0) < 0 || d.cmp(100) > 0 {
				return nil, fmt.Errorf("progress.percent %.40s is not from 0 to 100", v)
			}
			f := d.float(v)
			p.Percent = &f
		case "message":
			if p.Message, err = str(v, "progress.message"); err != nil {
				return nil, err
			}
			p.Message = clamp(p.Message, MaxMessageChars)
		default:
			return nil, fmt.Errorf("%q is not a member of progress", k)
		}
	}
	return &p, nil
}

// members decodes a JSON object into its members, matched by their exact names. It refuses
// any other JSON value (null too), and anything after the object but JSON whitespace.
func members(raw []byte, what string) (map[string]json.RawMessage, error) {
	if t := bytes.TrimLeft(raw, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return nil, fmt.Errorf("%s must be a JSON object", what)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return m, nil
}

// str decodes a member that must be a JSON string (not null).
func str(raw json.RawMessage, member string) (string, error) {
	if len(raw) == 0 || raw[0] != '"' {
		return "", fmt.Errorf("%s must be a string, not %.40s", member, raw)
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fmt.Errorf("%s: %w", member, err)
	}
	return s, nil
}

func compact(raw json.RawMessage, member string) (json.RawMessage, error) {
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, fmt.Errorf("%s: %w", member, err)
	}
	return buf.Bytes(), nil
}

func sortedKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func encode(what string, v any) (json.RawMessage, error) {
	if v == nil {
		return nil, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("worker: encode the %s: %w", what, err)
	}
	if string(b) == "null" {
		return nil, nil
	}
	return b, nil
}

var (
	codePattern       = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)
	signalNamePattern = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,63}$`)
)

// validate checks the report against the protocol's rules and limits.
func (r Report) validate() error {
	if r.err != nil {
		return r.err
	}
	if r.status == "" {
		return errors.New("worker: the zero Report is no report: build one with Continue, Succeed, Fail or ResultLost")
	}
	names, ok := allowed[r.status]
	if !ok {
		return fmt.Errorf("worker: invalid report: status %q is not one of continue, succeeded, failed, outcome_unknown", r.status)
	}
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	for _, m := range []struct {
		name    string
		present bool
	}{
		{"state", r.state != nil}, {"result", r.result != nil}, {"problem", r.problem != nil},
		{"delaySeconds", r.delay != nil}, {"wait", r.wait}, {"await", r.await != nil},
	} {
		if m.present && !slices.Contains(names, m.name) {
			bad("%s is not a member of a %s report", m.name, r.status)
		}
	}
	if len(r.state) > MaxStateBytes {
		bad("the state takes %d bytes, more than %d", len(r.state), MaxStateBytes)
	}
	if r.result != nil {
		if r.result[0] != '{' {
			bad("the result must be a JSON object, not %.40s", r.result)
		} else if len(r.result) > MaxResultBytes {
			bad("the result takes %d bytes, more than %d", len(r.result), MaxResultBytes)
		}
	}
	if r.delay != nil && (*r.delay < 0 || *r.delay > int(MaxDelay/time.Second)) {
		bad("delaySeconds %d is not between 0 and %d", *r.delay, int(MaxDelay/time.Second))
	}
	if a := r.await; a != nil {
		if !signalNamePattern.MatchString(a.Signal) {
			bad("the signal name %q does not match %s", clamp(a.Signal, 80), signalNamePattern)
		}
		if a.TimeoutSeconds < 1 || a.TimeoutSeconds > int(MaxAwait/time.Second) {
			bad("await timeoutSeconds %d is not between 1 and %d", a.TimeoutSeconds, int(MaxAwait/time.Second))
		}
		if r.wait || r.delay != nil {
			bad("a report waits for a signal (AwaitSignal) or for a time (Wait, After), not both")
		}
	}
	if r.status == StatusFailed && r.problem == nil {
		bad("a failed report needs a problem")
	}
	if p := r.problem; p != nil {
		if !codePattern.MatchString(p.Code) {
			bad("problem code %q does not match %s", p.Code, codePattern)
		}
		if n := utf8.RuneCountInString(p.Title); n == 0 || n > MaxTitleChars {
			bad("the problem's title must have 1 to %d characters, not %d", MaxTitleChars, n)
		}
		if n := utf8.RuneCountInString(p.Detail); n > MaxDetailChars {
			bad("the problem's detail must have at most %d characters, not %d", MaxDetailChars, n)
		}
	}
	if p := r.progress; p != nil {
		if p.TotalSteps < 0 {
			bad("progress totalSteps %d is less than 1", p.TotalSteps)
		}
		if p.Percent != nil && !(*p.Percent >= 0 && *p.Percent <= 100) {
			bad("progress percent %v is not between 0 and 100", *p.Percent)
		}
		if n := utf8.RuneCountInString(p.Message); n > MaxMessageChars {
			bad("the progress message must have at most %d characters, not %d", MaxMessageChars, n)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("worker: invalid %s report: %w", r.status, errors.Join(errs...))
	}
	return nil
}
