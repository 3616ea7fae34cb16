package api_test

import (
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v4"

	"github.com/longrun-dev/longrun/client/internal/contracttest"
)

// TestOverlayOnlyNames holds oapi-overlay.yaml to what its header says: its actions add
// x-go-name (a Go name, nothing on the wire) or put back a `description` written beside a
// `$ref` (which oapi-codegen drops when it applies an overlay), each exactly the contract's;
// and every such description of the contract is put back.
func TestOverlayOnlyNames(t *testing.T) {
	var doc any
	if err := yaml.Unmarshal(contracttest.OpenAPI(t), &doc); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{} // target → the contract's description beside a $ref
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch n := v.(type) {
		case map[string]any:
			if _, ref := n["$ref"]; ref {
				if d, ok := n["description"].(string); ok {
					want[path] = d
				}
			}
			for k, child := range n {
				walk(path+"."+k, child)
			}
		case []any:
			for _, child := range n {
				walk(path+"[]", child)
			}
		}
	}
	walk("$", doc)

	raw, err := os.ReadFile("oapi-overlay.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var overlay struct {
		Actions []struct {
			Target string         `yaml:"target"`
			Update map[string]any `yaml:"update"`
			Remove bool           `yaml:"remove"`
		} `yaml:"actions"`
	}
	if err := yaml.Unmarshal(raw, &overlay); err != nil {
		t.Fatal(err)
	}
	if len(overlay.Actions) == 0 {
		t.Fatal("oapi-overlay.yaml has no actions")
	}
	got := map[string]string{}
	for _, a := range overlay.Actions {
		if a.Remove {
			t.Errorf("%s: the overlay removes", a.Target)
		}
		for k, v := range a.Update {
			switch k {
			case "x-go-name":
			case "description":
				got[a.Target] = v.(string)
			default:
				t.Errorf("%s: the overlay sets %s, which is more than a name", a.Target, k)
			}
		}
	}
	for _, target := range slices.Sorted(maps.Keys(want)) {
		if strings.Contains(target, "[]") {
			t.Errorf("%s: a description beside a $ref inside a list, which an overlay target here cannot name", target)
			continue
		}
		if g, ok := got[target]; !ok {
			t.Errorf("%s: the contract's description beside its $ref is not put back by oapi-overlay.yaml", target)
		} else if strings.Join(strings.Fields(g), " ") != strings.Join(strings.Fields(want[target]), " ") {
			t.Errorf("%s: the overlay's description\n%s\nis not the contract's\n%s", target, g, want[target])
		}
	}
	for target := range got {
		if _, ok := want[target]; !ok {
			t.Errorf("%s: the overlay sets a description the contract has no $ref-sibling for", target)
		}
	}
}
