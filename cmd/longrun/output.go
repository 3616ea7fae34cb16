package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"

	"golang.org/x/term"

	"github.com/longrun-dev/longrun/client"
)

// terminal reports whether w is a terminal.
func (c *cli) terminal(w io.Writer) bool {
	if c.isTerminal != nil {
		return c.isTerminal(w)
	}
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// writeJSON prints v indented, as the API sent it (no HTML escaping).
func writeJSON(w io.Writer, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		fmt.Fprintf(w, "null\n")
		return
	}
	_, _ = w.Write(buf.Bytes())
}

// printOperation prints one operation's representation in the chosen format.
func (x *invocation) printOperation(op *client.Operation) {
	switch x.g.output {
	case "json":
		writeJSON(x.stdout, op)
	case "id":
		fmt.Fprintln(x.stdout, op.OperationID)
	default:
		x.operationTable([]client.Operation{*op})
	}
}

func (x *invocation) printOperations(ops []client.Operation) {
	switch x.g.output {
	case "json":
		writeJSON(x.stdout, ops)
	case "id":
		for _, op := range ops {
			fmt.Fprintln(x.stdout, op.OperationID)
		}
	default:
		if len(ops) == 0 {
			fmt.Fprintln(x.stderr, "longrun: no operations")
			return
		}
		x.operationTable(ops)
	}
}

// admission is create's JSON output: the admission's answer (the contract's Accepted), the
// key it was made with and whether it was a replay of that key's first answer.
type admission struct {
	OperationID    string       `json:"operationId"`
	Type           string       `json:"type"`
	Target         string       `json:"target"`
	State          client.State `json:"state"`
	StatusURL      string       `json:"statusUrl"`
	CreatedAt      time.Time    `json:"createdAt"`
	IdempotencyKey string       `json:"idempotencyKey"`
	Replayed       bool         `json:"replayed"`
}

func (x *invocation) printAdmission(op *client.Operation) {
	if x.g.output == "json" {
		writeJSON(x.stdout, admission{op.OperationID, op.Type, op.Target, op.State, op.StatusURL, op.CreatedAt, op.IdempotencyKey, op.Replayed})
		return
	}
	x.printOperation(op)
}

func (x *invocation) operationTable(ops []client.Operation) {
	tw := tabwriter.NewWriter(x.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tTYPE\tTARGET\tSTATE\tVERSION\tPROGRESS\tCREATED")
	for _, op := range ops {
		state := string(op.State)
		if op.Problem != nil && op.Problem.Code != "" {
			state += " (" + op.Problem.Code + ")"
		}
		if w := awaiting(op); w != "" {
			state += " (" + w + ")"
		}
		version := "-"
		if op.Version > 0 {
			version = strconv.Itoa(op.Version)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", op.OperationID, cell(op.Type), cell(op.Target), state, version,
			cell(progressCell(op.Progress)), cell(timestamp(op.CreatedAt)))
	}
	_ = tw.Flush()
}

// awaiting says what the operation's work waits for: "awaiting approval until
// 2026-11-30T10:10:01Z", or "" while it waits for no signal.
func awaiting(op client.Operation) string {
	a := op.Awaiting
	if a == nil {
		return ""
	}
	s := "awaiting " + oneLine(a.Signal)
	if u := timestamp(a.Until); u != "" {
		s += " until " + u
	}
	return s
}

// progressCell is progress in a few characters: "2/3 66%", "2 steps", or "".
func progressCell(p *client.Progress) string {
	if p == nil {
		return ""
	}
	parts := []string{stepsDone(*p, "")}
	if p.Percent != nil {
		parts = append(parts, percent(*p.Percent))
	}
	return strings.Join(parts, " ")
}

// stepsDone is how many steps completed: "2/3" and then ofTotal when the total is known (" steps"
// says it in words), else "1 step", "2 steps".
func stepsDone(p client.Progress, ofTotal string) string {
	switch {
	case p.TotalSteps != nil:
		return fmt.Sprintf("%d/%d%s", p.CompletedSteps, *p.TotalSteps, ofTotal)
	case p.CompletedSteps == 1:
		return "1 step"
	default:
		return fmt.Sprintf("%d steps", p.CompletedSteps)
	}
}

func percent(p float64) string { return strconv.FormatFloat(p, 'f', -1, 64) + "%" }

func timestamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// cell keeps a table cell one line, and not empty.
func cell(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	if s == "" {
		return "-"
	}
	return s
}

func (x *invocation) printTypes(ts []client.OperationType) {
	switch x.g.output {
	case "json":
		if ts == nil {
			ts = []client.OperationType{}
		}
		writeJSON(x.stdout, ts)
	case "id":
		for _, t := range ts {
			fmt.Fprintln(x.stdout, t.Name)
		}
	default:
		tw := tabwriter.NewWriter(x.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tVERSION\tDEADLINE\tDESCRIPTION")
		for _, t := range ts {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", t.Name, t.Version, seconds(t.DeadlineSeconds), cell(t.Description))
		}
		_ = tw.Flush()
	}
}

func (x *invocation) printType(t *client.OperationType) {
	if x.g.output == "json" {
		writeJSON(x.stdout, t)
		return
	}
	x.printTypes([]client.OperationType{*t})
}

// seconds writes a whole number of seconds in its largest whole unit: 2h, 15m, 90s.
func seconds(s int) string {
	switch {
	case s > 0 && s%3600 == 0:
		return fmt.Sprintf("%dh", s/3600)
	case s > 0 && s%60 == 0:
		return fmt.Sprintf("%dm", s/60)
	}
	return fmt.Sprintf("%ds", s)
}

// fail reports a call that did not work on stderr, as a person reads it (a problem's status,
// code and detail; never a body that is not a problem), and returns exit status 5.
func (x *invocation) fail(err error) int {
	var pe *client.ProblemError
	var te *client.TransportError
	switch {
	case errors.Is(err, client.ErrRetryWindowPassed):
		fmt.Fprintln(x.stderr, prefixed(err.Error()))
	case errors.As(err, &te):
		fmt.Fprintf(x.stderr, "longrun: no answer from the API (%s %s): %v\n", te.Method, te.URL, te.Err)
	case errors.As(err, &pe):
		writeProblem(x.stderr, pe)
	default:
		fmt.Fprintln(x.stderr, prefixed(err.Error()))
	}
	return exitAPI
}

func prefixed(msg string) string {
	if strings.HasPrefix(msg, "longrun: ") {
		return msg
	}
	return "longrun: " + msg
}

func writeProblem(w io.Writer, pe *client.ProblemError) {
	head := strconv.Itoa(pe.Status)
	text := pe.Detail
	if pe.Code != "" {
		head += " " + string(pe.Code)
		if text == "" {
			text = pe.Title
		}
	} else {
		if t := http.StatusText(pe.Status); t != "" {
			head += " " + t
		}
		if !plainText(text) { // an intermediary's page, not a problem: nothing to show of it
			text = ""
		}
	}
	if text != "" {
		head += ": " + oneLine(text)
	}
	fmt.Fprintln(w, "longrun: "+head)
	for _, f := range pe.Fields {
		fmt.Fprintf(w, "  %s: %s\n", oneLine(f.Pointer), oneLine(f.Detail))
	}
	if pe.OperationID != "" {
		fmt.Fprintf(w, "  operation: %s\n", pe.OperationID)
	}
	if pe.RetryAfter > 0 {
		fmt.Fprintf(w, "  retry after: %s\n", pe.RetryAfter)
	}
	if pe.RequestID != "" {
		fmt.Fprintf(w, "  request id: %s\n", pe.RequestID)
	}
}

// plainText: a short message, not markup or bytes.
func plainText(s string) bool {
	if s == "" || len(s) > 200 || strings.ContainsAny(s, "<>{}") {
		return false
	}
	for _, r := range s {
		if r == unicode.ReplacementChar || (unicode.IsControl(r) && r != '\n' && r != '\t') {
			return false
		}
	}
	return true
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
