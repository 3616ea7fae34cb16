package optype

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/unicode/norm"

	"github.com/longrun-dev/longrun/internal/core/problem"
)

// Type is one registered operation type. Build it by loading a definitions file (Parse,
// Load, Builtin): a Type made in Go has no schema, so it accepts any input object, and
// unless it mints its target its Target fails.
type Type struct {
	Name        string
	Description string
	// Version is the template revision; it is part of the admission fingerprint, so a
	// changed definition does not replay answers given under the old one.
	Version int
	// Worker is the logical worker (it becomes function and state-machine names).
	Worker string
	// Deadline bounds the whole operation; StepTimeout one worker invocation; StepDelay is
	// the pause between steps when a worker asks to wait.
	Deadline, StepTimeout, StepDelay time.Duration
	// Retention is how long the idempotency record answers replays (0: the deployment
	// default).
	Retention time.Duration
	// MaxSteps bounds the worker invocations of one operation.
	MaxSteps int
	// QuotaWeight is how many active-operation quota slots one operation takes.
	QuotaWeight int
	// MintsTarget is true when the server mints the target (from the operation id) rather
	// than deriving it from the input; such targets are left out of the fingerprint.
	MintsTarget bool
	// Demo marks a type that exists for tests, the demo and benchmarks (demo.task can end
	// outcome_unknown on request, holding its lock and quota slot until an operator resolves
	// it): a deployment serves it only when demo types are enabled (Deployed).
	Demo bool

	schema    *jsonschema.Schema
	rawSchema json.RawMessage
	doc       map[string]any // rawSchema decoded with json.Number numbers, for defaults
	target    *template
	checks    []check
}

// Target validates input (the schema, then the checks, then the target) and returns the
// canonical target. Field errors come back as one problem.Invalid. operationID is used only
// by types that mint their target.
func (t Type) Target(input map[string]any, operationID string) (string, error) {
	if t.schema != nil {
		if err := t.schema.Validate(asValue(input)); err != nil {
			return "", problem.Invalid(fieldErrors(err)...)
		}
	}
	// Checks run only on input the schema accepted, so they can rely on its shape.
	var fields []problem.FieldError
	for _, c := range t.checks {
		fields = append(fields, c.apply(input)...)
	}
	if len(fields) > 0 {
		return "", problem.Invalid(sortFields(fields)...)
	}
	if t.MintsTarget {
		return NormalizeTarget(t.Name, operationID)
	}
	if t.target == nil {
		return "", problem.New(problem.Internal, "Operation type %q has no target template.", t.Name)
	}
	return t.target.expand(input)
}

// asValue hands the validator a nil input as an empty object (the shape admission gives an
// absent input), so a required member is reported missing rather than the input mistyped.
func asValue(input map[string]any) any {
	if input == nil {
		return map[string]any{}
	}
	return input
}

// InputSchema returns the input's JSON Schema as compact JSON, members in the order the
// definitions file wrote them (what a discovery API shows). A Type made in Go has none.
func (t Type) InputSchema() json.RawMessage {
	return bytes.Clone(t.rawSchema)
}

// WithDefaults returns input with the `default` of every schema property that input leaves
// out, descending into nested objects input has, so a worker's step request carries every
// setting explicitly. Numbers keep their exact spelling; members come out sorted by key.
func (t Type) WithDefaults(input json.RawMessage) (json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(input))
	dec.UseNumber()
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil {
		return nil, fmt.Errorf("%s input: %w", t.Name, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%s input: more than one JSON value", t.Name)
	}
	if obj == nil {
		return nil, fmt.Errorf("%s input: must be a JSON object", t.Name)
	}
	applyDefaults(t.doc, obj)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(obj); err != nil {
		return nil, fmt.Errorf("%s input: %w", t.Name, err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

func applyDefaults(schema map[string]any, obj map[string]any) {
	props, _ := schema["properties"].(map[string]any)
	for name, ps := range props {
		sub, ok := ps.(map[string]any)
		if !ok {
			continue
		}
		v, present := obj[name]
		if !present {
			if d, ok := sub["default"]; ok {
				obj[name] = d
			}
			continue
		}
		if nested, ok := v.(map[string]any); ok {
			applyDefaults(sub, nested)
		}
	}
}

// Registry maps type names to types. It is not changed after NewRegistry, so it may be
// shared freely.
type Registry struct{ types map[string]Type }

// NewRegistry builds a registry of the given types (a later type replaces an earlier one
// of the same name; a definitions file cannot hold two).
func NewRegistry(types ...Type) *Registry {
	r := &Registry{types: map[string]Type{}}
	for _, t := range types {
		r.types[t.Name] = t
	}
	return r
}

// Lookup finds a type by its exact name.
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
	slices.Sort(names)
	return names
}

// Types lists the registered types, sorted by name.
func (r *Registry) Types() []Type {
	types := make([]Type, 0, len(r.types))
	for _, n := range r.Names() {
		types = append(types, r.types[n])
	}
	return types
}

// Workers lists the distinct workers of the registered types, sorted: the functions and
// state machines a deployment needs.
func (r *Registry) Workers() []string {
	var workers []string
	for _, t := range r.types {
		if !slices.Contains(workers, t.Worker) {
			workers = append(workers, t.Worker)
		}
	}
	slices.Sort(workers)
	return workers
}

// Registry returns the registry of the file's types, without the demo types (Type.Demo)
// unless demo is true.
func (f *File) Registry(demo bool) *Registry {
	var types []Type
	for _, t := range f.Types {
		if demo || !t.Demo {
			types = append(types, t)
		}
	}
	return NewRegistry(types...)
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
