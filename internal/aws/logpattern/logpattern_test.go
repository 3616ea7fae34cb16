package logpattern_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/longrun-dev/longrun/internal/aws/lambdalog"
	"github.com/longrun-dev/longrun/internal/aws/logpattern"
)

// Each pattern, read as CloudWatch Logs reads a JSON filter pattern, matches the line the
// function's log handler writes for the event it counts, and no line of another event: a
// renamed field, a message said otherwise, or a number written as a string breaks it.
func TestPatternsMatchTheLinesTheyCount(t *testing.T) {
	line := func(msg string, attrs ...any) map[string]any {
		var buf bytes.Buffer
		slog.New(lambdalog.New(&buf, "longrun-test", slog.LevelInfo)).InfoContext(context.Background(), msg, attrs...)
		var out map[string]any
		if err := json.Unmarshal(buf.Bytes(), &out); err != nil {
			t.Fatalf("not a JSON line: %s", buf.Bytes())
		}
		return out
	}
	type kind string // as operation.Kind and operation.State are: named string types
	cases := []struct {
		name, pattern string
		match, miss   []map[string]any
	}{
		{"stuck", logpattern.Stuck,
			[]map[string]any{line("reconciled", "action", "stopped"), line("reconciled", "action", "recorded"), line("reconciled", "action", "dispatched")},
			[]map[string]any{line("reconciled", "action", "rescheduled"), line("recorded", "action", "stopped")}},
		{"quota exceeded", logpattern.QuotaExceeded,
			[]map[string]any{line("request", "status", 429)},
			[]map[string]any{line("request", "status", 409), line("request", "status", "429"), line("response", "status", 429)}},
		{"waiting", logpattern.Waiting,
			[]map[string]any{line("run", "outcome_unknown", 0), line("run", "outcome_unknown", 7)},
			[]map[string]any{line("run", "outcome_unknown", -1), line("run")}},
		{"recorder outcome_unknown", logpattern.RecorderOutcomeUnknown,
			[]map[string]any{line("recorded", "outcome", kind("outcome_unknown"), "state", kind("outcome_unknown"))},
			[]map[string]any{line("recorded", "outcome", kind("outcome_unknown"), "state", kind("succeeded")),
				line("reconciled", "outcome", kind("outcome_unknown"), "state", kind("outcome_unknown"))}},
		{"reconciler outcome_unknown", logpattern.ReconcilerOutcomeUnknown,
			[]map[string]any{line("reconciled", "action", "recorded", "outcome", "outcome_unknown", "state", "outcome_unknown")},
			[]map[string]any{line("reconciled", "outcome", "failed", "state", "failed")}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, l := range c.match {
				if ok, err := matches(c.pattern, l); err != nil || !ok {
					t.Errorf("%s does not match %v (%v)", c.pattern, l, err)
				}
			}
			for _, l := range c.miss {
				if ok, err := matches(c.pattern, l); err != nil || ok {
					t.Errorf("%s matches %v (%v)", c.pattern, l, err)
				}
			}
		})
	}
}

// matches evaluates a JSON filter pattern of the form CloudWatch Logs documents, as far as
// longrun's patterns use it: { expr } with &&, ||, parentheses and comparisons of $.field
// with a quoted string (= and != only) or a number (=, !=, <, <=, >, >=). A field that is
// absent, or of the other kind, does not match.
func matches(pattern string, line map[string]any) (bool, error) {
	p := &parser{s: strings.TrimSpace(pattern), line: line}
	if !p.eat("{") {
		return false, fmt.Errorf("no {")
	}
	v, err := p.or()
	if err == nil && !p.eat("}") {
		err = fmt.Errorf("no } at %q", p.s)
	}
	return v, err
}

type parser struct {
	s    string
	line map[string]any
}

func (p *parser) eat(tok string) bool {
	p.s = strings.TrimLeftFunc(p.s, unicode.IsSpace)
	if strings.HasPrefix(p.s, tok) {
		p.s = p.s[len(tok):]
		return true
	}
	return false
}

func (p *parser) or() (bool, error) {
	v, err := p.and()
	for err == nil && p.eat("||") {
		var w bool
		w, err = p.and()
		v = v || w
	}
	return v, err
}

func (p *parser) and() (bool, error) {
	v, err := p.factor()
	for err == nil && p.eat("&&") {
		var w bool
		w, err = p.factor()
		v = v && w
	}
	return v, err
}

func (p *parser) factor() (bool, error) {
	if p.eat("(") {
		v, err := p.or()
		if err == nil && !p.eat(")") {
			err = fmt.Errorf("no ) at %q", p.s)
		}
		return v, err
	}
	if !p.eat("$.") {
		return false, fmt.Errorf("no selector at %q", p.s)
	}
	i := strings.IndexFunc(p.s, func(r rune) bool { return !(unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_') })
	field := p.s[:i]
	p.s = p.s[i:]
	var op string
	for _, o := range []string{"!=", ">=", "<=", "=", ">", "<"} {
		if p.eat(o) {
			op = o
			break
		}
	}
	if op == "" {
		return false, fmt.Errorf("no operator at %q", p.s)
	}
	got, present := p.line[field]
	p.s = strings.TrimLeftFunc(p.s, unicode.IsSpace)
	if strings.HasPrefix(p.s, `"`) {
		end := strings.Index(p.s[1:], `"`) + 1
		want := p.s[1:end]
		p.s = p.s[end+1:]
		s, isString := got.(string)
		switch op {
		case "=":
			return present && isString && s == want, nil
		case "!=":
			return present && isString && s != want, nil
		}
		return false, fmt.Errorf("%s on a string", op)
	}
	end := strings.IndexFunc(p.s, func(r rune) bool { return !(unicode.IsDigit(r) || r == '-' || r == '.') })
	want, err := strconv.ParseFloat(p.s[:end], 64)
	if err != nil {
		return false, err
	}
	p.s = p.s[end:]
	n, isNumber := got.(float64)
	if !present || !isNumber {
		return false, nil
	}
	switch op {
	case "=":
		return n == want, nil
	case "!=":
		return n != want, nil
	case ">=":
		return n >= want, nil
	case "<=":
		return n <= want, nil
	case ">":
		return n > want, nil
	default:
		return n < want, nil
	}
}
