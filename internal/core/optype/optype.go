// Package optype is the registry of operation types: for each, its version (template
// revision), its input validator, how its canonical target is derived, and which executor
// (workflow) runs it. Target normalization lives here and nowhere else.
package optype

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/longrun-dev/longrun/internal/core/problem"
)

// Type is one registered operation type.
type Type struct {
	Name     string
	Version  int
	Executor string // logical workflow name; adapters map it to a provider resource
	// MintsTarget is true when the server mints the target (from the operation id) rather
	// than deriving it from the input; such targets are left out of the fingerprint.
	MintsTarget bool
	// Demo marks a type that exists for tests, the demo and benchmarks (demo.task can end
	// outcome_unknown on request, holding its lock and quota slot until an operator resolves
	// it): a deployment serves it only when demo types are enabled (Deployed).
	Demo     bool
	validate func(input map[string]any) (target string, fields []problem.FieldError)
}

// Target validates input and returns the canonical target. operationID is used only by
// types that mint their target.
func (t Type) Target(input map[string]any, operationID string) (string, error) {
	target, fields := t.validate(input)
	if len(fields) > 0 {
		sort.Slice(fields, func(i, j int) bool { return fields[i].Pointer < fields[j].Pointer })
		return "", problem.Invalid(fields...)
	}
	if t.MintsTarget {
		return NormalizeTarget(t.Name, operationID)
	}
	return target, nil
}

// Registry maps type names to types.
type Registry struct{ types map[string]Type }

// NewRegistry builds a registry of the given types.
func NewRegistry(types ...Type) *Registry {
	r := &Registry{types: map[string]Type{}}
	for _, t := range types {
		r.types[t.Name] = t
	}
	return r
}

// Builtin returns the registry of every built-in type, demo types included: what tests and
// the local stack run. A deployed function takes Deployed's registry instead.
func Builtin() *Registry { return Deployed(true) }

// Deployed returns the registry a deployment serves: the built-in types, without the demo
// types (Type.Demo) unless demo is true. The functions read demo from LONGRUN_DEMO_TYPES
// (internal/aws/config), which the CDK stack sets to true on dev stages only.
func Deployed(demo bool) *Registry {
	var types []Type
	for _, t := range []Type{ExportOrders(), DemoTask()} {
		if demo || !t.Demo {
			types = append(types, t)
		}
	}
	return NewRegistry(types...)
}

// Lookup finds a type by name.
func (r *Registry) Lookup(name string) (Type, bool) {
	t, ok := r.types[name]
	return t, ok
}

// Names lists the registered type names, sorted.
func (r *Registry) Names() []string {
	names := make([]string, 0, len(r.types))
	for n := range r.types {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

const maxTargetLen = 256

// NormalizeTarget is the one place a canonical target is made: "<namespace>:<value>" with
// surrounding whitespace trimmed, no control characters, valid UTF-8 and a bounded length.
func NormalizeTarget(namespace, value string) (string, error) {
	v := strings.TrimSpace(value)
	switch {
	case v == "":
		return "", fmt.Errorf("must not be empty")
	case !utf8.ValidString(v):
		return "", fmt.Errorf("must be valid UTF-8")
	}
	// One spelling per target: "é" as one code point or as "e" + U+0301 is one target, so
	// two spellings cannot take two locks on what a reader sees as one thing.
	v = norm.NFC.String(v)
	switch {
	case strings.IndexFunc(v, invisible) >= 0:
		return "", fmt.Errorf("must not contain control, format (bidi, zero-width) or separator characters")
	case len(v) > maxTargetLen:
		return "", fmt.Errorf("must be at most %d bytes", maxTargetLen)
	}
	return namespace + ":" + v, nil
}

// invisible reports characters that change how a target reads without being seen: controls
// (Cc), format characters (Cf: bidi overrides and isolates, zero-width spaces and joiners,
// the BOM, soft hyphens) and line and paragraph separators.
func invisible(r rune) bool {
	return unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp)
}

// fieldChecker collects field errors for one input object.
type fieldChecker struct {
	input  map[string]any
	fields []problem.FieldError
}

func (c *fieldChecker) fail(name, format string, args ...any) {
	c.fields = append(c.fields, problem.FieldError{Pointer: "/input/" + name, Detail: fmt.Sprintf(format, args...)})
}

// only rejects members outside allowed, so a misspelled option is not silently ignored.
func (c *fieldChecker) only(allowed ...string) {
	for name := range c.input {
		ok := false
		for _, a := range allowed {
			ok = ok || a == name
		}
		if !ok {
			c.fail(name, "%q is not a field of this operation type.", name)
		}
	}
}

func (c *fieldChecker) str(name string, required bool) (string, bool) {
	v, present := c.input[name]
	if !present {
		if required {
			c.fail(name, "%s is required.", name)
		}
		return "", false
	}
	s, ok := v.(string)
	if !ok {
		c.fail(name, "%s must be a string.", name)
		return "", false
	}
	return s, true
}

func (c *fieldChecker) integer(name string, min, max, def int) int {
	v, present := c.input[name]
	if !present {
		return def
	}
	n, ok := v.(json.Number)
	f, err := n.Float64()
	if !ok || err != nil || f != math.Trunc(f) || f < float64(min) || f > float64(max) {
		c.fail(name, "%s must be an integer from %d to %d.", name, min, max)
		return def
	}
	return int(f)
}

func (c *fieldChecker) enum(name, def string, values ...string) string {
	s, ok := c.str(name, false)
	if !ok {
		return def
	}
	for _, v := range values {
		if s == v {
			return s
		}
	}
	c.fail(name, "%s must be one of %s.", name, strings.Join(values, ", "))
	return def
}

// ExportOrders is "export.orders": export the caller's orders for a date range.
func ExportOrders() Type {
	return Type{Name: "export.orders", Version: 1, Executor: "export-orders", validate: func(input map[string]any) (string, []problem.FieldError) {
		c := &fieldChecker{input: input}
		c.only("from", "to")
		from, to := c.date("from"), c.date("to")
		if len(c.fields) > 0 {
			return "", c.fields
		}
		switch {
		case to.Before(from):
			c.fail("to", "to must not be before from.")
		case to.Sub(from) > maxExportRange:
			c.fail("to", "The range may span at most %d days.", int(maxExportRange/(24*time.Hour)))
		}
		if len(c.fields) > 0 {
			return "", c.fields
		}
		target, err := NormalizeTarget("orders", from.Format(time.DateOnly)+".."+to.Format(time.DateOnly))
		if err != nil {
			c.fail("from", "%v", err)
		}
		return target, c.fields
	}}
}

const maxExportRange = 366 * 24 * time.Hour

func (c *fieldChecker) date(name string) time.Time {
	s, ok := c.str(name, true)
	if !ok {
		return time.Time{}
	}
	d, err := time.Parse(time.DateOnly, s)
	if err != nil {
		c.fail(name, "%s must be a calendar date written YYYY-MM-DD.", name)
	}
	return d
}

// DemoTaskInput is demo.task's input with defaults applied.
type DemoTaskInput struct {
	Target  string `json:"target"`
	Steps   int    `json:"steps"`
	SleepMs int    `json:"sleepMs"`
	Outcome string `json:"outcome"`
}

// DemoTask is "demo.task": a configurable task used by tests, the demo and benchmarks.
func DemoTask() Type {
	return Type{Name: "demo.task", Version: 1, Executor: "demo-task", Demo: true, validate: func(input map[string]any) (string, []problem.FieldError) {
		in, c := parseDemoTask(input)
		if len(c.fields) > 0 {
			return "", c.fields
		}
		target, err := NormalizeTarget("demo", in.Target)
		if err != nil {
			c.fail("target", "target %v.", err)
		}
		return target, c.fields
	}}
}

func parseDemoTask(input map[string]any) (DemoTaskInput, *fieldChecker) {
	c := &fieldChecker{input: input}
	c.only("target", "steps", "sleepMs", "outcome")
	target, _ := c.str("target", true)
	return DemoTaskInput{
		Target:  target,
		Steps:   c.integer("steps", 1, 20, 1),
		SleepMs: c.integer("sleepMs", 0, 5000, 0),
		Outcome: c.enum("outcome", "succeed", "succeed", "fail", "unknown"),
	}, c
}

// DecodeDemoTask reads a stored demo.task input and applies its defaults, for workers.
func DecodeDemoTask(raw json.RawMessage) (DemoTaskInput, error) {
	var input map[string]any
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	if err := dec.Decode(&input); err != nil {
		return DemoTaskInput{}, fmt.Errorf("decode demo.task input: %w", err)
	}
	in, c := parseDemoTask(input)
	if len(c.fields) > 0 {
		return in, problem.Invalid(c.fields...)
	}
	return in, nil
}
