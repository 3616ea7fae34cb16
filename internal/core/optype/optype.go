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
	// Signals are the messages its running operations accept from the world, in the
	// definitions file's order (signal.go).
	Signals []Signal

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

// Demo says whether a registry holds the demo types (Type.Demo): a deployment serves them
// only when asked (LONGRUN_DEMO_TYPES), tests and the local stack always do.
type Demo bool

const (
	// WithDemo holds the demo types beside the others.
	WithDemo Demo = true
	// WithoutDemo leaves them out.
	WithoutDemo Demo = false
)

// Registry returns the registry of the file's types, the demo types (Type.Demo) only
// WithDemo.
func (f *File) Registry(demo Demo) *Registry {
	var types []Type
	for _, t := range f.Types {
		if demo == WithDemo || !t.Demo {
			types = append(types, t)
		}
	}
	return NewRegistry(types...)
}

const maxTargetLen = 256

// NormalizeTarget is the one place a canonical target is made: "<namespace>:<value>", the
// value valid UTF-8 in one spelling per thing a reader sees, with no invisible characters and
// no word that mixes scripts, and bounded in length.
func NormalizeTarget(namespace, value string) (string, error) {
	if !utf8.ValidString(value) {
		return "", fmt.Errorf("must be valid UTF-8")
	}
	// One spelling per target, so that what a reader sees as one thing takes one lock. NFKC
	// (as Unicode recommends for identifiers, UAX #31) makes "é" typed as one character or as
	// "e" + U+0301 one target, and full-width "ｂ４２", half-width kana and ligatures such as
	// "ﬁ" their ordinary characters. Every space character (no-break, ideographic, thin) is a
	// space and a run of them is one, as they display; surrounding whitespace is dropped.
	v := strings.TrimSpace(foldSpaces(norm.NFKC.String(value)))
	switch {
	case v == "":
		return "", fmt.Errorf("must not be empty")
	case len(v) > maxTargetLen:
		return "", fmt.Errorf("must be at most %d bytes", maxTargetLen)
	case strings.IndexFunc(v, invisible) >= 0:
		return "", fmt.Errorf("must not contain control, format (bidi, zero-width) or line and paragraph separator characters")
	}
	if word, scripts := mixedWord(v); word != "" {
		return "", fmt.Errorf("must not mix scripts in one word, where a letter of one passes for a letter of another: %+q mixes %s",
			word, strings.Join(scripts, " and "))
	}
	return namespace + ":" + v, nil
}

// foldSpaces writes every run of space characters (Unicode's Zs) as one ASCII space.
func foldSpaces(s string) string {
	var b strings.Builder
	space := false
	for _, r := range s {
		if unicode.Is(unicode.Zs, r) {
			space = true
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(r)
	}
	return b.String()
}

// invisible reports characters that change how a target reads without being seen: controls
// (Cc), format characters (Cf: bidi overrides and isolates, zero-width spaces and joiners,
// the BOM, soft hyphens) and line and paragraph separators.
func invisible(r rune) bool {
	return unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp)
}

// mixedWord returns the first word of v whose letters come from scripts that are not written
// together, and those scripts in the order they appear; "" when there is none. A word is a
// run of characters between those every script uses (spaces, digits, punctuation, symbols).
// A Cyrillic "а" in "bаd" displays as the Latin "a", so "bаd" could pass for "bad" and hold a
// lock of its own: such words are refused (Unicode TR39's "highly restrictive" level, per
// word, so "shop/прод" is fine). A word wholly in one script is not judged: "сор" is a
// Russian word, not a disguise of "cop", and folding it to Latin would fold ASCII's own
// look-alikes ("l", "1", "I") too, so that distinct ids would share a lock.
func mixedWord(v string) (string, []string) {
	for _, word := range strings.FieldsFunc(v, everyScripts) {
		var scripts []string
		for _, r := range word {
			if n := len(scripts); n > 0 && unicode.Is(unicode.Scripts[scripts[n-1]], r) {
				continue
			}
			if s := scriptOf(r); s != "" && !slices.Contains(scripts, s) {
				scripts = append(scripts, s)
			}
		}
		if !writtenTogether(scripts) {
			return word, scripts
		}
	}
	return "", nil
}

// everyScripts reports characters of Unicode's Common script: those every script uses.
func everyScripts(r rune) bool {
	if r < utf8.RuneSelf {
		return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z')
	}
	return unicode.Is(unicode.Common, r)
}

// scriptOf names r's script (Unicode's Script property), or "" for a combining mark, which
// takes the script of the letter it marks, and for a character of no script.
func scriptOf(r rune) string {
	if r < utf8.RuneSelf {
		return "Latin" // mixedWord asks only of letters and marks
	}
	for name, table := range unicode.Scripts {
		if name != "Common" && name != "Inherited" && unicode.Is(table, r) {
			return name
		}
	}
	return ""
}

// writtenTogether reports whether one word may hold letters of all these scripts: one
// script, or Latin with the scripts that Chinese, Japanese and Korean text writes beside it.
func writtenTogether(scripts []string) bool {
	if len(scripts) <= 1 {
		return true
	}
	for _, together := range [][]string{
		{"Latin", "Han", "Hiragana", "Katakana"},
		{"Latin", "Han", "Bopomofo"},
		{"Latin", "Han", "Hangul"},
	} {
		if !slices.ContainsFunc(scripts, func(s string) bool { return !slices.Contains(together, s) }) {
			return true
		}
	}
	return false
}
