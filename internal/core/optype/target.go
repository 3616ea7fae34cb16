package optype

import (
	"encoding/json"
	"fmt"
	"math/big"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/longrun-dev/longrun/internal/core/problem"
)

// mintedTarget is the target setting of a type whose server mints the target from the
// operation id.
const mintedTarget = "minted"

var namespacePattern = regexp.MustCompile(`^[a-z][a-z0-9.-]*$`)

// maxNamespaceLen bounds a target's namespace as a type's name is bounded, so a canonical
// target is at most maxNamespaceLen + 1 + maxTargetLen bytes (api/openapi.yaml, Target).
const maxNamespaceLen = maxTypeNameLen

// pointer is an RFC 6901 JSON pointer into an operation's input.
type pointer struct {
	text   string
	tokens []string
}

func parsePointer(s string) (pointer, error) {
	if !strings.HasPrefix(s, "/") {
		return pointer{}, fmt.Errorf("pointer %q must start with \"/\" (an RFC 6901 JSON pointer into the input)", s)
	}
	var tokens []string
	for _, raw := range strings.Split(s[1:], "/") {
		tok, ok := unescapeToken(raw)
		if !ok {
			return pointer{}, fmt.Errorf("pointer %q: \"~\" must be followed by 0 or 1", s)
		}
		tokens = append(tokens, tok)
	}
	return pointer{text: s, tokens: tokens}, nil
}

func unescapeToken(s string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '~' {
			b.WriteByte(s[i])
			continue
		}
		if i+1 == len(s) || (s[i+1] != '0' && s[i+1] != '1') {
			return "", false
		}
		b.WriteByte("~/"[s[i+1]-'0'])
		i++
	}
	return b.String(), true
}

func escapeToken(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// field is the name a message uses for the pointed-at member.
func (p pointer) field() string { return p.tokens[len(p.tokens)-1] }

// inputPointer is the pointer as a problem field names it: into the request body.
func (p pointer) inputPointer() string { return "/input" + p.text }

func (p pointer) get(input map[string]any) (any, bool) {
	var v any = input
	for _, tok := range p.tokens {
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = obj[tok]; !ok {
			return nil, false
		}
	}
	return v, true
}

// resolve checks at load that p names a property every valid input has: declared under
// properties and listed in required at every level, with a schema type among allowed. Then
// a template or check never meets a missing or mistyped value at admission.
func (p pointer) resolve(doc map[string]any, allowed ...string) error {
	cur := doc
	for i, tok := range p.tokens {
		at := "in the input schema"
		if i > 0 {
			parent := "/" + strings.Join(escapeAll(p.tokens[:i]), "/")
			if cur["type"] != "object" {
				return fmt.Errorf("pointer %q: the property %q is not declared type: object", p.text, parent)
			}
			at = fmt.Sprintf("under %q", parent)
		}
		props, _ := cur["properties"].(map[string]any)
		sub, declared := props[tok]
		if !declared {
			return fmt.Errorf("unknown pointer %q: no property %q is declared %s", p.text, tok, at)
		}
		required, _ := cur["required"].([]any)
		if !slices.Contains(required, any(tok)) {
			return fmt.Errorf("optional pointer %q: %q is not listed in required %s, so an input may leave it out", p.text, tok, at)
		}
		cur, _ = sub.(map[string]any)
	}
	typ := "no declared type"
	switch t := cur["type"].(type) {
	case string:
		if slices.Contains(allowed, t) {
			return nil
		}
		typ = "type " + t
	case []any:
		ok := len(t) > 0
		for _, x := range t {
			s, isString := x.(string)
			ok = ok && isString && slices.Contains(allowed, s)
		}
		if ok {
			return nil
		}
		b, _ := json.Marshal(t)
		typ = "type " + string(b)
	}
	return fmt.Errorf("pointer %q names a property of %s; it must name a %s property", p.text, typ, strings.Join(allowed, " or "))
}

func escapeAll(tokens []string) []string {
	out := make([]string, len(tokens))
	for i, t := range tokens {
		out[i] = escapeToken(t)
	}
	return out
}

// template derives a target from input: "<namespace>:<text>" where {<pointer>} in the text
// stands for the input's value there.
type template struct {
	namespace string
	parts     []templatePart
}

type templatePart struct {
	literal string
	ptr     *pointer
}

// parseTemplate reads a target template; problems are every syntax error found.
func parseTemplate(s string) (*template, []string) {
	ns, text, ok := strings.Cut(s, ":")
	if !ok {
		return nil, []string{fmt.Sprintf("%q must be %q or <namespace>:<template>", s, mintedTarget)}
	}
	var problems []string
	if !namespacePattern.MatchString(ns) {
		problems = append(problems, fmt.Sprintf("namespace %q must match %s", ns, namespacePattern))
	} else if len(ns) > maxNamespaceLen {
		problems = append(problems, fmt.Sprintf("namespace %q is longer than %d bytes", ns, maxNamespaceLen))
	}
	if text == "" {
		problems = append(problems, "the template after the namespace is empty")
	}
	t := &template{namespace: ns}
	for rest, offset := text, len(ns)+1; rest != ""; {
		open, shut := strings.IndexByte(rest, '{'), strings.IndexByte(rest, '}')
		switch {
		case open < 0 && shut < 0:
			t.parts = append(t.parts, templatePart{literal: rest})
			rest = ""
		case shut >= 0 && (open < 0 || shut < open):
			problems = append(problems, fmt.Sprintf("unbalanced brace: \"}\" at byte %d has no matching \"{\"", offset+shut))
			rest, offset = rest[shut+1:], offset+shut+1
		default:
			if open > 0 {
				t.parts = append(t.parts, templatePart{literal: rest[:open]})
			}
			end := strings.IndexByte(rest[open+1:], '}')
			if end < 0 {
				problems = append(problems, fmt.Sprintf("unbalanced brace: \"{\" at byte %d has no matching \"}\"", offset+open))
				rest = ""
				continue
			}
			inner := rest[open+1 : open+1+end]
			if nested := strings.IndexByte(inner, '{'); nested >= 0 {
				problems = append(problems, fmt.Sprintf("unbalanced brace: \"{\" at byte %d opens inside a placeholder", offset+open+1+nested))
			} else if p, err := parsePointer(inner); err != nil {
				problems = append(problems, err.Error())
			} else {
				t.parts = append(t.parts, templatePart{ptr: &p})
			}
			rest, offset = rest[open+1+end+1:], offset+open+1+end+1
		}
	}
	for _, part := range t.parts {
		if part.ptr != nil {
			continue
		}
		if !utf8.ValidString(part.literal) || strings.IndexFunc(part.literal, invisible) >= 0 {
			problems = append(problems, "the template text must be valid UTF-8 without control, format or line and paragraph separator characters")
			break
		}
		// A word of the text that mixes scripts would have every admission refused.
		if word, scripts := mixedWord(part.literal); word != "" {
			problems = append(problems, fmt.Sprintf("the template text must not mix scripts in one word: %+q mixes %s", word, strings.Join(scripts, " and ")))
			break
		}
	}
	if len(problems) == 0 && t.pointers() == nil {
		// A constant target: one operation of the type at a time. It must itself be a
		// valid target, or every admission would fail.
		if _, err := NormalizeTarget(ns, text); err != nil {
			problems = append(problems, fmt.Sprintf("the constant target %s", err))
		}
	}
	if len(problems) > 0 {
		return nil, problems
	}
	return t, nil
}

func (t *template) pointers() []pointer {
	var ps []pointer
	for _, part := range t.parts {
		if part.ptr != nil {
			ps = append(ps, *part.ptr)
		}
	}
	return ps
}

// expand substitutes input's values and normalizes the result. A target NormalizeTarget
// refuses is reported at the first placeholder's member, the one a caller most likely
// mistyped.
func (t *template) expand(input map[string]any) (string, error) {
	var b strings.Builder
	for _, part := range t.parts {
		if part.ptr == nil {
			b.WriteString(part.literal)
			continue
		}
		v, ok := part.ptr.get(input)
		s, isText := placeholderText(v)
		if !ok || !isText {
			// The schema requires the member with a string or integer type, so this is a
			// definition the load checks did not catch.
			return "", problem.New(problem.Internal, "The target of this operation type could not be derived.")
		}
		b.WriteString(s)
	}
	target, err := NormalizeTarget(t.namespace, b.String())
	if err != nil {
		at := "/input"
		if ps := t.pointers(); len(ps) > 0 {
			at = ps[0].inputPointer()
		}
		return "", problem.Invalid(problem.FieldError{Pointer: at, Detail: fmt.Sprintf("target %v.", err)})
	}
	return target, nil
}

// placeholderText writes a string as is and an integer in decimal (2.0 and 2 are both 2).
func placeholderText(v any) (string, bool) {
	switch v := v.(type) {
	case string:
		return v, true
	case json.Number:
		r, ok := new(big.Rat).SetString(v.String())
		if !ok || !r.IsInt() {
			return "", false
		}
		return r.Num().String(), true
	case float64:
		if v != float64(int64(v)) {
			return "", false
		}
		return strconv.FormatInt(int64(v), 10), true
	case int:
		return strconv.Itoa(v), true
	case int64:
		return strconv.FormatInt(v, 10), true
	}
	return "", false
}

// check is a cross-field rule JSON Schema cannot express, run on schema-valid input.
type check interface {
	apply(input map[string]any) []problem.FieldError
}

// dateRange requires from <= to, both calendar dates, at most maxDays apart.
type dateRange struct {
	from, to pointer
	maxDays  int
}

func (c dateRange) apply(input map[string]any) []problem.FieldError {
	from, fromOK := c.date(input, c.from)
	to, toOK := c.date(input, c.to)
	var fields []problem.FieldError
	for _, bad := range []struct {
		ok bool
		p  pointer
	}{{fromOK, c.from}, {toOK, c.to}} {
		if !bad.ok {
			fields = append(fields, problem.FieldError{Pointer: bad.p.inputPointer(),
				Detail: fmt.Sprintf("%s must be a calendar date written YYYY-MM-DD.", bad.p.field())})
		}
	}
	if len(fields) > 0 {
		return fields
	}
	switch {
	case to.Before(from):
		return []problem.FieldError{{Pointer: c.to.inputPointer(),
			Detail: fmt.Sprintf("%s must not be before %s.", c.to.field(), c.from.field())}}
	case to.Sub(from) > time.Duration(c.maxDays)*24*time.Hour:
		return []problem.FieldError{{Pointer: c.to.inputPointer(),
			Detail: fmt.Sprintf("The range may span at most %d days.", c.maxDays)}}
	}
	return nil
}

func (dateRange) date(input map[string]any, p pointer) (time.Time, bool) {
	v, _ := p.get(input)
	s, ok := v.(string)
	if !ok {
		return time.Time{}, false
	}
	d, err := time.Parse(time.DateOnly, s)
	return d, err == nil
}
