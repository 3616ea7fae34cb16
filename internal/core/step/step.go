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
	"regexp"
	"time"
	"unicode/utf8"
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
	State       json.RawMessage `json:"state,omitempty"`
	Deadline    string          `json:"deadline"`
	// StepTimeoutSeconds is how long this step may run before longrun gives up on it.
	StepTimeoutSeconds int `json:"stepTimeoutSeconds"`
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

// Limits of a report (api/worker/step-report.schema.json says the same).
const (
	MaxStateBytes   = 32 << 10
	MaxResultBytes  = 64 << 10
	MaxDelaySeconds = 86400
	maxMessage      = 200
	maxTitle        = 200
	maxDetail       = 2000
)

var codePattern = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)

// ErrInvalidReport means a worker's answer is not a report of this protocol.
var ErrInvalidReport = errors.New("invalid step report")

// ParseReport reads and checks a report. Members a status does not allow, unknown members
// and values out of range are refused, so that a worker's mistake is seen, not guessed at.
func ParseReport(raw []byte) (Report, error) {
	var r Report
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return Report{}, fmt.Errorf("%w: %v", ErrInvalidReport, err)
	}
	if dec.More() {
		return Report{}, fmt.Errorf("%w: more than one JSON value", ErrInvalidReport)
	}
	if err := r.check(); err != nil {
		return Report{}, fmt.Errorf("%w: %v", ErrInvalidReport, err)
	}
	return r, nil
}

func (r Report) check() error {
	present := func(m json.RawMessage) bool { return len(m) > 0 && string(m) != "null" }
	if p := r.Progress; p != nil {
		switch {
		case p.TotalSteps < 0:
			return errors.New("progress.totalSteps must be at least 1")
		case p.Percent != nil && (*p.Percent < 0 || *p.Percent > 100):
			return errors.New("progress.percent must be from 0 to 100")
		case utf8.RuneCountInString(p.Message) > maxMessage:
			return fmt.Errorf("progress.message must be at most %d characters", maxMessage)
		}
	}
	if r.Status != Continue && (present(r.State) || r.Wait || r.DelaySeconds != nil) {
		return fmt.Errorf("state, wait and delaySeconds belong to status continue, not %q", r.Status)
	}
	if r.Status != Succeeded && present(r.Result) {
		return fmt.Errorf("result belongs to status succeeded, not %q", r.Status)
	}
	if r.Status != Failed && r.Status != OutcomeUnknown && r.Problem != nil {
		return fmt.Errorf("problem belongs to status failed or outcome_unknown, not %q", r.Status)
	}
	switch r.Status {
	case Continue:
		if len(r.State) > MaxStateBytes {
			return fmt.Errorf("state must be at most %d bytes", MaxStateBytes)
		}
		if d := r.DelaySeconds; d != nil && (*d < 0 || *d > MaxDelaySeconds) {
			return fmt.Errorf("delaySeconds must be from 0 to %d", MaxDelaySeconds)
		}
	case Succeeded:
		if len(r.Result) > MaxResultBytes {
			return fmt.Errorf("result must be at most %d bytes", MaxResultBytes)
		}
		if present(r.Result) && r.Result[0] != '{' {
			return errors.New("result must be a JSON object")
		}
	case Failed:
		if r.Problem == nil {
			return errors.New("status failed needs a problem")
		}
	case OutcomeUnknown:
	default:
		return fmt.Errorf("status %q is not one of continue, succeeded, failed, outcome_unknown", r.Status)
	}
	if p := r.Problem; p != nil {
		switch {
		case !codePattern.MatchString(p.Code):
			return fmt.Errorf("problem.code %q must match %s", p.Code, codePattern)
		case p.Title == "" || utf8.RuneCountInString(p.Title) > maxTitle:
			return fmt.Errorf("problem.title must be 1 to %d characters", maxTitle)
		case utf8.RuneCountInString(p.Detail) > maxDetail:
			return fmt.Errorf("problem.detail must be at most %d characters", maxDetail)
		}
	}
	return nil
}
