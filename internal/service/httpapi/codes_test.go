package httpapi

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/longrun-dev/longrun/internal/core/problem"
	"github.com/longrun-dev/longrun/internal/testkit/openapitest"
)

// The contract's codes are the spec's ErrorCode enum; each has the status the spec's Problem
// schema ties it to, and a title. A code added on one side only fails here.
func TestSpecCodesMatchStatusOfAndTitles(t *testing.T) {
	t.Parallel()
	v, err := openapitest.New(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	schemas := v.Doc().Components.Schemas
	specStatus := map[problem.Code]string{}
	for _, rule := range schemas["Problem"].Value.AllOf {
		code := rule.Value.If.Value.Properties["code"].Value.Const
		status := rule.Value.Then.Value.Properties["status"].Value.Const
		specStatus[problem.Code(fmt.Sprint(code))] = fmt.Sprint(status)
	}
	enum := schemas["ErrorCode"].Value.Enum
	for _, c := range enum {
		code := problem.Code(fmt.Sprint(c))
		if status, _ := describe(code); fmt.Sprint(status) != specStatus[code] {
			t.Errorf("%s: status %d, the spec says %q", code, status, specStatus[code])
		}
	}
	var codes []string
	for _, c := range enum {
		codes = append(codes, fmt.Sprint(c))
	}
	var ours []string
	for _, c := range problem.Codes() {
		ours = append(ours, string(c))
	}
	slices.Sort(codes)
	slices.Sort(ours)
	if !slices.Equal(codes, ours) || len(specStatus) != len(enum) {
		t.Errorf("the spec's codes %v, problem.Codes %v, %d with a spec status", codes, ours, len(specStatus))
	}
}

// Every code of the contract has an HTTP status and a title.
func TestEveryCodeHasAStatusAndATitle(t *testing.T) {
	t.Parallel()
	for _, code := range problem.Codes() {
		if status, title := describe(code); status < 400 || title == "" {
			t.Errorf("%s: status %d, title %q", code, status, title)
		}
	}
	if status, title := describe("no_such_code"); status != 0 || title != "" || StatusOf("no_such_code") != 500 {
		t.Errorf("an unknown code is described: %d %q", status, title)
	}
}
