// Package jcs implements strict JSON parsing and the RFC 8785 JSON
// Canonicalization Scheme (JCS).
//
// It exists to fingerprint request bodies for idempotency: two bodies that
// mean the same JSON value must produce byte-identical canonical output, and
// bodies whose meaning is ambiguous (duplicate member names, invalid Unicode,
// numbers that do not fit a double, in either direction) are rejected rather
// than silently normalised, so a retry can never be matched against a
// different request.
//
// Error messages are written to be safe to return to API clients: they name
// the problem and a byte offset, never Go types or internal state.
package jcs

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/longrun-dev/longrun/internal/core/runes"
)

// MaxDepth is the maximum nesting depth of objects and arrays accepted by
// Parse (and produced by Marshal). A top-level object or array is depth 1.
// The limit bounds recursion on untrusted input.
const MaxDepth = 32

// MaxNumberLen bounds the length of a number literal and MaxExponent the
// magnitude of its exponent. Both are checked on the text, before anything
// reads the value, because exact readers (math/big, and JSON Schema libraries
// built on it) do work that grows with the exponent: 1e-999999 took one of
// them 35-190 ms. Any double can be written in 24 characters with an exponent
// of at most 3 digits, so neither limit refuses a value a double can hold.
const (
	MaxNumberLen = 64
	MaxExponent  = 999
)

// Sentinel errors; every error returned by this package wraps one of them
// (except Marshal's rejection of unsupported Go types), so callers can
// classify failures with errors.Is.
var (
	// ErrDuplicateMember reports an object with two members whose names are
	// equal after unescaping.
	ErrDuplicateMember = errors.New("duplicate member name")
	// ErrInvalidUTF8 reports bytes that are not valid UTF-8, or a \u escape
	// that is an unpaired surrogate (which has no UTF-8 encoding).
	ErrInvalidUTF8 = errors.New("invalid UTF-8")
	// ErrTooDeep reports nesting deeper than MaxDepth.
	ErrTooDeep = errors.New("nesting too deep")
	// ErrSyntax reports input that is not RFC 8259 JSON.
	ErrSyntax = errors.New("invalid JSON")
	// ErrNumber reports a number that is not a finite IEEE-754 double, a
	// nonzero number that a double reads as 0, or a literal beyond
	// MaxNumberLen or MaxExponent.
	ErrNumber = errors.New("number out of range")
)

// errUnsupported is deliberately unexported: it can only arise from a
// programming error in the caller of Marshal, never from client input.
var errUnsupported = errors.New("unsupported value type")

// maxNameInError bounds how much of a member name (in characters) is echoed in errors, so a
// hostile client cannot make us build (or log) huge messages.
const maxNameInError = 64

// Parse decodes exactly one JSON text (RFC 8259), surrounded by optional
// whitespace, and rejects anything ambiguous: invalid UTF-8, unpaired
// surrogate escapes, duplicate member names, nesting deeper than MaxDepth
// and numbers that a double does not hold (see ErrNumber).
//
// Objects decode to map[string]any, arrays to []any (never nil), strings to
// string, true/false to bool, null to nil and numbers to json.Number holding
// the original literal.
func Parse(data []byte) (any, error) {
	p := parser{data: data}
	return p.document()
}

// Canonicalize parses data strictly and returns its RFC 8785 canonical form.
// It is equivalent to Marshal(Parse(data)).
func Canonicalize(data []byte) ([]byte, error) {
	// Parsing objects into sorted member lists rather than maps saves the
	// map round trip and, more importantly, makes the work done depend only
	// on the input, not on random map iteration order (which otherwise makes
	// coverage-guided fuzzing see spurious new coverage).
	p := parser{data: data, ordered: true}
	v, err := p.document()
	if err != nil {
		return nil, err
	}
	// Canonical output is rarely larger than the input, so this usually
	// avoids regrowing the buffer.
	return appendValue(make([]byte, 0, len(data)), v, 0)
}

// document parses the whole input as one JSON text.
func (p *parser) document() (any, error) {
	// Checking the whole input up front covers bytes outside strings too and
	// lets the string decoder copy raw bytes without re-validating them.
	if !utf8.Valid(p.data) {
		return nil, fmt.Errorf("%w at offset %d", ErrInvalidUTF8, invalidUTF8Offset(p.data))
	}
	p.skipSpace()
	v, err := p.value()
	if err != nil {
		return nil, err
	}
	p.skipSpace()
	if p.pos < len(p.data) {
		return nil, p.syntaxError("unexpected data after top-level value")
	}
	return v, nil
}

// Marshal returns the RFC 8785 canonical encoding of v.
//
// Supported values are those Parse returns (map[string]any, []any, string,
// bool, nil, json.Number) plus float64, int and int64. Like encoding/json, a
// nil map or slice encodes as null. All numbers are encoded as IEEE-754
// doubles, as JCS requires, so integers beyond ±2^53 lose precision.
// Strings must be valid UTF-8, numbers finite, and nesting at most MaxDepth
// (which also stops cyclic values).
func Marshal(v any) ([]byte, error) {
	return appendValue(nil, v, 0)
}

// ---------------------------------------------------------------------------
// Parsing

type parser struct {
	data  []byte
	pos   int
	depth int
	// ordered makes objects parse to sortedObject instead of map[string]any.
	ordered bool
}

// sortedObject is Canonicalize's internal object form: members already in
// canonical order with unique names.
type sortedObject []member

type member struct {
	name  string
	value any
}

// linearDupLimit is the member count up to which duplicate names are found
// by scanning earlier members; larger objects switch to a set. Most objects
// are small, and the scan avoids allocating a map for them.
const linearDupLimit = 16

func (p *parser) syntaxError(msg string) error {
	return fmt.Errorf("%w: %s at offset %d", ErrSyntax, msg, p.pos)
}

// unexpected describes the byte at p.pos (or end of input). The input is
// known to be valid UTF-8, and %q escapes anything unprintable.
func (p *parser) unexpected(context string) error {
	if p.pos >= len(p.data) {
		return p.syntaxError("unexpected end of input" + context)
	}
	r, _ := utf8.DecodeRune(p.data[p.pos:])
	return p.syntaxError(fmt.Sprintf("unexpected character %q%s", r, context))
}

func (p *parser) skipSpace() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *parser) value() (any, error) {
	if p.pos >= len(p.data) {
		return nil, p.unexpected("")
	}
	switch c := p.data[p.pos]; {
	case c == '{':
		return p.object()
	case c == '[':
		return p.array()
	case c == '"':
		return p.string()
	case c == 't':
		return true, p.literal("true")
	case c == 'f':
		return false, p.literal("false")
	case c == 'n':
		return nil, p.literal("null")
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	default:
		return nil, p.unexpected("")
	}
}

func (p *parser) literal(lit string) error {
	if len(p.data)-p.pos < len(lit) || string(p.data[p.pos:p.pos+len(lit)]) != lit {
		return p.syntaxError("invalid literal")
	}
	p.pos += len(lit)
	return nil
}

// enter/leave track nesting depth; checked on entry so the error points at
// the bracket that crossed the limit.
func (p *parser) enter() error {
	p.depth++
	if p.depth > MaxDepth {
		return fmt.Errorf("%w at offset %d (limit %d)", ErrTooDeep, p.pos, MaxDepth)
	}
	return nil
}

func (p *parser) leave() { p.depth-- }

func (p *parser) object() (any, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	p.pos++ // '{'
	var (
		m       map[string]any // !p.ordered
		members sortedObject   // p.ordered
		seen    map[string]struct{}
	)
	if !p.ordered {
		m = map[string]any{}
	}
	// isDup reports whether name was already used in this object. It is
	// checked as each name is read, so errors are identical in both modes.
	isDup := func(name string) bool {
		if !p.ordered {
			_, dup := m[name]
			return dup
		}
		if seen == nil && len(members) < linearDupLimit {
			for i := range members {
				if members[i].name == name {
					return true
				}
			}
			return false
		}
		if seen == nil {
			seen = make(map[string]struct{}, 2*len(members))
			for i := range members {
				seen[members[i].name] = struct{}{}
			}
		}
		_, dup := seen[name]
		seen[name] = struct{}{}
		return dup
	}
	done := func() any {
		if !p.ordered {
			return m
		}
		slices.SortFunc(members, func(a, b member) int { return compareUTF16(a.name, b.name) })
		if members == nil {
			members = sortedObject{} // empty object, not null
		}
		return members
	}
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		return done(), nil
	}
	for {
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return nil, p.unexpected(", expected member name")
		}
		nameOff := p.pos
		name, err := p.string()
		if err != nil {
			return nil, err
		}
		if isDup(name) {
			return nil, fmt.Errorf("%w %q at offset %d", ErrDuplicateMember, runes.Cut(name, maxNameInError), nameOff)
		}
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return nil, p.unexpected(", expected ':'")
		}
		p.pos++
		p.skipSpace()
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		if p.ordered {
			members = append(members, member{name, v})
		} else {
			m[name] = v
		}
		p.skipSpace()
		if p.pos < len(p.data) {
			switch p.data[p.pos] {
			case ',':
				p.pos++
				continue
			case '}':
				p.pos++
				return done(), nil
			}
		}
		return nil, p.unexpected(", expected ',' or '}'")
	}
}

func (p *parser) array() (any, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	p.pos++ // '['
	a := []any{}
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		return a, nil
	}
	for {
		p.skipSpace()
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		a = append(a, v)
		p.skipSpace()
		if p.pos < len(p.data) {
			switch p.data[p.pos] {
			case ',':
				p.pos++
				continue
			case ']':
				p.pos++
				return a, nil
			}
		}
		return nil, p.unexpected(", expected ',' or ']'")
	}
}

// string decodes the string starting at the opening quote at p.pos.
func (p *parser) string() (string, error) {
	p.pos++ // opening '"'
	start := p.pos
	// Fast path: most strings have no escapes and can be converted directly.
	for p.pos < len(p.data) {
		c := p.data[p.pos]
		if c == '"' {
			s := string(p.data[start:p.pos])
			p.pos++
			return s, nil
		}
		if c == '\\' {
			break
		}
		if c < 0x20 {
			return "", p.syntaxError("control character in string")
		}
		p.pos++
	}
	if p.pos >= len(p.data) {
		return "", p.syntaxError("unterminated string")
	}

	buf := append([]byte(nil), p.data[start:p.pos]...)
	for p.pos < len(p.data) {
		c := p.data[p.pos]
		switch {
		case c == '"':
			p.pos++
			return string(buf), nil
		case c < 0x20:
			return "", p.syntaxError("control character in string")
		case c != '\\':
			// Raw bytes (including multi-byte UTF-8) were validated up front.
			buf = append(buf, c)
			p.pos++
			continue
		}
		escOff := p.pos
		p.pos++
		if p.pos >= len(p.data) {
			break
		}
		e := p.data[p.pos]
		p.pos++
		switch e {
		case '"', '\\', '/':
			buf = append(buf, e)
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		case 'u':
			r, err := p.unicodeEscape(escOff)
			if err != nil {
				return "", err
			}
			buf = utf8.AppendRune(buf, r)
		default:
			p.pos = escOff
			return "", p.syntaxError("invalid escape sequence")
		}
	}
	return "", p.syntaxError("unterminated string")
}

// unicodeEscape decodes the rest of a \uXXXX escape (p.pos is just past the
// 'u'), combining a surrogate pair into one rune. Unpaired surrogates are
// rejected: they cannot be represented in UTF-8, and replacing them with
// U+FFFD would make distinct inputs canonicalize identically.
func (p *parser) unicodeEscape(escOff int) (rune, error) {
	r, ok := hex4(p.data, p.pos)
	if !ok {
		return 0, p.syntaxError("invalid \\u escape")
	}
	p.pos += 4
	switch {
	case r >= 0xDC00 && r <= 0xDFFF:
		return 0, fmt.Errorf("%w: unpaired surrogate escape at offset %d", ErrInvalidUTF8, escOff)
	case r >= 0xD800 && r <= 0xDBFF:
		if p.pos+1 < len(p.data) && p.data[p.pos] == '\\' && p.data[p.pos+1] == 'u' {
			if lo, ok := hex4(p.data, p.pos+2); ok && lo >= 0xDC00 && lo <= 0xDFFF {
				p.pos += 6
				return 0x10000 + (r-0xD800)<<10 + (lo - 0xDC00), nil
			}
		}
		return 0, fmt.Errorf("%w: unpaired surrogate escape at offset %d", ErrInvalidUTF8, escOff)
	}
	return r, nil
}

func hex4(b []byte, i int) (rune, bool) {
	if len(b)-i < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

func (p *parser) number() (any, error) {
	start := p.pos
	end, msg := scanNumber(p.data, start)
	if msg != "" {
		p.pos = end
		return nil, p.syntaxError(msg)
	}
	p.pos = end
	lit := string(p.data[start:end])
	if _, why := readFloat(lit); why != "" {
		return nil, fmt.Errorf("%w: %s at offset %d", ErrNumber, why, start)
	}
	return json.Number(lit), nil
}

// readFloat reads a literal that matches the number grammar as a double, or
// says why it is refused. The length and the exponent are checked on the text
// first, so what follows never works on an unbounded literal. A nonzero
// literal that rounds to 0 is refused like one that rounds to ±Inf:
// ECMAScript accepts both, but either would let a request mean something
// other than what it says (1e-400 would pass a schema's exclusiveMinimum of
// 0 and then reach the worker as 0).
func readFloat(lit string) (float64, string) {
	if len(lit) > MaxNumberLen {
		return 0, fmt.Sprintf("longer than %d characters", MaxNumberLen)
	}
	mantissa := lit
	if i := strings.IndexAny(lit, "eE"); i >= 0 {
		mantissa = lit[:i]
		exp := 0
		for _, c := range []byte(lit[i+1:]) {
			if isDigit(c) {
				if exp = exp*10 + int(c-'0'); exp > MaxExponent {
					return 0, fmt.Sprintf("exponent beyond ±%d", MaxExponent)
				}
			}
		}
	}
	f, err := strconv.ParseFloat(lit, 64)
	switch {
	case err != nil || math.IsInf(f, 0):
		// The grammar was checked, so the only possible failure is overflow.
		return 0, "beyond the largest double"
	case f == 0 && strings.ContainsAny(mantissa, "123456789"):
		return 0, "nonzero but would read as 0"
	}
	return f, ""
}

// scanNumber matches the RFC 8259 number grammar
//
//	-? (0 | [1-9][0-9]*) (\.[0-9]+)? ([eE][+-]?[0-9]+)?
//
// starting at s[i]. It returns the end offset, or the offset of the problem
// and a description. It is generic so Marshal can validate json.Number
// strings with the same code.
func scanNumber[T string | []byte](s T, i int) (int, string) {
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i >= len(s) || !isDigit(s[i]):
		return i, "invalid number"
	case s[i] == '0':
		i++
		if i < len(s) && isDigit(s[i]) {
			return i, "leading zero in number"
		}
	default:
		for i < len(s) && isDigit(s[i]) {
			i++
		}
	}
	if i < len(s) && s[i] == '.' {
		i++
		if i >= len(s) || !isDigit(s[i]) {
			return i, "expected digit after decimal point"
		}
		for i < len(s) && isDigit(s[i]) {
			i++
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if i >= len(s) || !isDigit(s[i]) {
			return i, "expected digit in exponent"
		}
		for i < len(s) && isDigit(s[i]) {
			i++
		}
	}
	return i, ""
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// invalidUTF8Offset returns the offset of the first invalid UTF-8 sequence.
func invalidUTF8Offset(b []byte) int {
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			return i
		}
		i += size
	}
	return len(b)
}

// ---------------------------------------------------------------------------
// Canonical serialization

func appendValue(buf []byte, v any, depth int) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(buf, "null"...), nil
	case bool:
		if x {
			return append(buf, "true"...), nil
		}
		return append(buf, "false"...), nil
	case string:
		return appendString(buf, x)
	case json.Number:
		// json.Number is an arbitrary string, so re-check the grammar rather
		// than trusting that it came from Parse.
		if end, msg := scanNumber(string(x), 0); msg != "" || end != len(x) {
			return nil, fmt.Errorf("%w: invalid number literal", ErrNumber)
		}
		f, why := readFloat(string(x))
		if why != "" {
			return nil, fmt.Errorf("%w: %s", ErrNumber, why)
		}
		return appendNumber(buf, f), nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("%w: not a finite number", ErrNumber)
		}
		return appendNumber(buf, x), nil
	case int:
		return appendNumber(buf, float64(x)), nil
	case int64:
		return appendNumber(buf, float64(x)), nil
	case map[string]any:
		if x == nil {
			return append(buf, "null"...), nil
		}
		if depth++; depth > MaxDepth {
			return nil, fmt.Errorf("%w (limit %d)", ErrTooDeep, MaxDepth)
		}
		return appendObject(buf, x, depth)
	case sortedObject:
		// Only built by Canonicalize, whose parser already limited depth and
		// validated and sorted the names.
		depth++
		buf = append(buf, '{')
		for i, mb := range x {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf, _ = appendString(buf, mb.name)
			buf = append(buf, ':')
			var err error
			if buf, err = appendValue(buf, mb.value, depth); err != nil {
				return nil, err
			}
		}
		return append(buf, '}'), nil
	case []any:
		if x == nil {
			return append(buf, "null"...), nil
		}
		if depth++; depth > MaxDepth {
			return nil, fmt.Errorf("%w (limit %d)", ErrTooDeep, MaxDepth)
		}
		buf = append(buf, '[')
		for i, e := range x {
			if i > 0 {
				buf = append(buf, ',')
			}
			var err error
			if buf, err = appendValue(buf, e, depth); err != nil {
				return nil, err
			}
		}
		return append(buf, ']'), nil
	default:
		return nil, errUnsupported
	}
}

func appendObject(buf []byte, m map[string]any, depth int) ([]byte, error) {
	keys := make([]string, 0, len(m))
	for k := range m {
		// Validate before sorting: compareUTF16 assumes valid UTF-8.
		if !utf8.ValidString(k) {
			return nil, fmt.Errorf("%w in member name", ErrInvalidUTF8)
		}
		keys = append(keys, k)
	}
	slices.SortFunc(keys, compareUTF16)
	buf = append(buf, '{')
	for i, k := range keys {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf, _ = appendString(buf, k) // already validated
		buf = append(buf, ':')
		var err error
		if buf, err = appendValue(buf, m[k], depth); err != nil {
			return nil, err
		}
	}
	return append(buf, '}'), nil
}

// compareUTF16 orders valid UTF-8 strings as RFC 8785 §3.2.3 requires: by
// their UTF-16 code units. That matches byte (code point) order except that
// supplementary characters (surrogate pairs, 0xD800-0xDBFF lead unit) sort
// before U+E000..U+FFFF.
func compareUTF16(a, b string) int {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	if i == n {
		return len(a) - len(b)
	}
	// The prefixes are identical, so both strings have a rune boundary at
	// the same place; back up to it and compare whole runes.
	for i > 0 && !utf8.RuneStart(a[i]) {
		i--
	}
	ra, _ := utf8.DecodeRuneInString(a[i:])
	rb, _ := utf8.DecodeRuneInString(b[i:])
	return int(utf16Key(ra)) - int(utf16Key(rb))
}

// utf16Key maps a rune to a value whose order matches its UTF-16 encoding:
// U+E000..U+FFFF are moved above the supplementary planes.
func utf16Key(r rune) rune {
	if r >= 0xE000 && r <= 0xFFFF {
		return r + 0x110000
	}
	return r
}

// appendString writes s as a JSON string per RFC 8785 §3.2.2.2: only the
// characters JSON requires are escaped, using the short forms where they
// exist and lower-case \u00xx otherwise; everything else is literal UTF-8.
func appendString(buf []byte, s string) ([]byte, error) {
	if !utf8.ValidString(s) {
		return nil, fmt.Errorf("%w in string", ErrInvalidUTF8)
	}
	const hex = "0123456789abcdef"
	buf = append(buf, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		// Bytes of multi-byte sequences are all >= 0x80, so a byte-wise scan
		// never mistakes part of a character for something to escape.
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		buf = append(buf, s[start:i]...)
		switch c {
		case '"', '\\':
			buf = append(buf, '\\', c)
		case '\b':
			buf = append(buf, '\\', 'b')
		case '\f':
			buf = append(buf, '\\', 'f')
		case '\n':
			buf = append(buf, '\\', 'n')
		case '\r':
			buf = append(buf, '\\', 'r')
		case '\t':
			buf = append(buf, '\\', 't')
		default:
			buf = append(buf, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
		}
		start = i + 1
	}
	buf = append(buf, s[start:]...)
	return append(buf, '"'), nil
}

// appendNumber writes a finite f as ECMAScript's Number.prototype.toString
// would (ECMA-262 Number::toString), which RFC 8785 §3.2.2.3 mandates.
// strconv's shortest round-trip digits are the digits ECMAScript selects;
// only the layout differs.
func appendNumber(buf []byte, f float64) []byte {
	if f == 0 {
		return append(buf, '0') // covers -0, which ECMAScript prints as "0"
	}
	var tmp [32]byte
	s := strconv.AppendFloat(tmp[:0], f, 'e', -1, 64) // e.g. "-1.2345e+06"
	if s[0] == '-' {
		buf = append(buf, '-')
		s = s[1:]
	}

	// Split "d.ddde±XX" into digits "dddd" and exponent.
	var digitBuf [24]byte
	digits := digitBuf[:0]
	exp := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == 'e' {
			neg := s[i+1] == '-'
			for _, d := range s[i+2:] {
				exp = exp*10 + int(d-'0')
			}
			if neg {
				exp = -exp
			}
			break
		}
		if c != '.' {
			digits = append(digits, c)
		}
	}

	// In ECMA-262 terms the value is 0.digits × 10^n with k digits.
	k, n := len(digits), exp+1
	switch {
	case k <= n && n <= 21:
		// Integer: digits then zeros, e.g. 1e20 -> 100000000000000000000.
		buf = append(buf, digits...)
		for range n - k {
			buf = append(buf, '0')
		}
	case 0 < n && n <= 21:
		// Decimal point inside the digits, e.g. 123.45.
		buf = append(buf, digits[:n]...)
		buf = append(buf, '.')
		buf = append(buf, digits[n:]...)
	case -6 < n && n <= 0:
		// Small fraction, e.g. 0.000001.
		buf = append(buf, '0', '.')
		for range -n {
			buf = append(buf, '0')
		}
		buf = append(buf, digits...)
	default:
		// Exponential, e.g. 1e+21, 1.5e-7.
		buf = append(buf, digits[0])
		if k > 1 {
			buf = append(buf, '.')
			buf = append(buf, digits[1:]...)
		}
		buf = append(buf, 'e')
		if n-1 < 0 {
			buf = append(buf, '-')
		} else {
			buf = append(buf, '+')
		}
		e := n - 1
		if e < 0 {
			e = -e
		}
		buf = strconv.AppendInt(buf, int64(e), 10)
	}
	return buf
}
