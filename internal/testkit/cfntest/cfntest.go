// Package cfntest reads synthesized CloudFormation for tests: it flattens intrinsic
// functions into text and lists what an IAM statement allows, so assertions can compare
// plain strings.
package cfntest

import (
	"encoding/json"
	"sort"
	"strings"
)

// Render flattens a CloudFormation value (a literal, Ref, Fn::GetAtt or Fn::Join of them)
// into text with ${id} and ${id.attr} placeholders; anything else is its JSON.
func Render(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case map[string]any:
		if ref, ok := v["Ref"].(string); ok {
			return "${" + ref + "}"
		}
		if att, ok := v["Fn::GetAtt"].([]any); ok && len(att) == 2 {
			return "${" + att[0].(string) + "." + att[1].(string) + "}"
		}
		if join, ok := v["Fn::Join"].([]any); ok && len(join) == 2 {
			var parts []string
			for _, p := range join[1].([]any) {
				parts = append(parts, Render(p))
			}
			return strings.Join(parts, join[0].(string))
		}
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// Actions lists an IAM statement's actions (one string or a list).
func Actions(st map[string]any) []string {
	switch a := st["Action"].(type) {
	case string:
		return []string{a}
	case []any:
		var out []string
		for _, x := range a {
			out = append(out, x.(string))
		}
		return out
	}
	return nil
}

// Resources lists an IAM statement's resources, rendered and sorted.
func Resources(st map[string]any) []string {
	rs, ok := st["Resource"].([]any)
	if !ok {
		rs = []any{st["Resource"]}
	}
	var out []string
	for _, r := range rs {
		out = append(out, Render(r))
	}
	sort.Strings(out)
	return out
}
