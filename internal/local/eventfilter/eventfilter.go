// Package eventfilter evaluates Lambda event filter patterns (the EventBridge pattern
// syntax) against an event, for the local stack's pollers. It supports the subset longrun's
// filters use — nested objects, arrays of exact values, and "prefix" — and rejects any other
// operator when the pattern is compiled, so a filter the emulation cannot honour fails
// loudly instead of matching differently than AWS would.
package eventfilter

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Pattern is a compiled filter pattern.
type Pattern struct{ root map[string]any }

// Compile parses and checks a pattern.
func Compile(pattern string) (*Pattern, error) {
	var root map[string]any
	dec := json.NewDecoder(strings.NewReader(pattern))
	dec.UseNumber()
	if err := dec.Decode(&root); err != nil {
		return nil, fmt.Errorf("eventfilter: pattern is not a JSON object: %w", err)
	}
	if err := check(root); err != nil {
		return nil, err
	}
	return &Pattern{root: root}, nil
}

func check(node map[string]any) error {
	for k, v := range node {
		switch v := v.(type) {
		case map[string]any:
			if err := check(v); err != nil {
				return err
			}
		case []any:
			for _, m := range v {
				if op, ok := m.(map[string]any); ok {
					if _, prefix := op["prefix"].(string); !prefix || len(op) != 1 {
						return fmt.Errorf("eventfilter: unsupported operator in %q: %v", k, op)
					}
				}
			}
		default:
			return fmt.Errorf("eventfilter: %q must be an object or an array of values", k)
		}
	}
	return nil
}

// Match reports whether event (a JSON object) matches.
func (p *Pattern) Match(event []byte) bool {
	var ev map[string]any
	dec := json.NewDecoder(strings.NewReader(string(event)))
	dec.UseNumber()
	if dec.Decode(&ev) != nil {
		return false
	}
	return match(p.root, ev)
}

func match(pattern, ev map[string]any) bool {
	for k, want := range pattern {
		got, present := ev[k]
		if !present {
			return false
		}
		switch want := want.(type) {
		case map[string]any:
			sub, ok := got.(map[string]any)
			if !ok || !match(want, sub) {
				return false
			}
		case []any:
			if !anyOf(want, got) {
				return false
			}
		}
	}
	return true
}

func anyOf(values []any, got any) bool {
	for _, v := range values {
		switch v := v.(type) {
		case map[string]any:
			if s, ok := got.(string); ok && strings.HasPrefix(s, v["prefix"].(string)) {
				return true
			}
		case json.Number:
			if n, ok := got.(json.Number); ok && n.String() == v.String() {
				return true
			}
		default:
			if v == got {
				return true
			}
		}
	}
	return false
}
