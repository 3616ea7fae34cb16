package optype

import (
	"strings"
	"testing"
)

// The worked example's input is bounded: a string field a caller fills freely is text the
// worker, the events and the logs may carry, so each has a pattern of at most 40
// characters. A 2,000-character template is refused at admission (issue #20, 3), before any
// worker could echo it.
func TestTheWorkedExampleBoundsItsInput(t *testing.T) {
	f, err := Load("../../../examples/provision-environment/longrun.types.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r := f.Registry(WithoutDemo)
	ok := func(project, environment, template string) string {
		return `{"project":"` + project + `","environment":"` + environment + `","template":"` + template + `"}`
	}
	long := strings.Repeat("x", 41)
	checkTargets(t, r, []targetCase{
		{"provision.environment", ok("shop", "qa-1", "small"), "env:shop/qa-1", nil},
		{"provision.environment", ok("shop", "qa-1", strings.Repeat("x", 40)), "env:shop/qa-1", nil},
		{"provision.environment", ok("shop", "qa-1", long), "", []string{"/input/template"}},
		{"provision.environment", ok("shop", "qa-1", strings.Repeat("x", 2000)), "", []string{"/input/template"}},
		{"provision.environment", ok("shop", "qa-1", ""), "", []string{"/input/template"}},
		{"provision.environment", ok("shop", "qa-1", `small\"><script>`), "", []string{"/input/template"}},
		{"provision.environment", ok(long, long, long), "", []string{"/input/environment", "/input/project", "/input/template"}},
	})
}
