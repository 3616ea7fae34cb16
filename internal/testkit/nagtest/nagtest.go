// Package nagtest runs cdk-nag's AwsSolutions and Serverless packs over CDK constructs for
// tests: what they report that no suppression covers, one line per finding, so a test can
// require none (docs/security.md, "The rule packs").
package nagtest

import (
	"fmt"
	"sort"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/cxapi"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
)

// Check adds both packs to scope (a construct and everything under it), before synthesis.
func Check(scope constructs.IConstruct) {
	awscdk.Aspects_Of(scope).Add(cdknag.NewAwsSolutionsChecks(&cdknag.NagPackProps{Verbose: jsii.Bool(false)}), nil)
	awscdk.Aspects_Of(scope).Add(cdknag.NewServerlessChecks(&cdknag.NagPackProps{Verbose: jsii.Bool(false)}), nil)
}

// Findings synthesizes stack and returns the unsuppressed findings of the packs Check
// added, as "<path> <rule>: <message>", sorted: every error and warning annotation the packs
// wrote (a rule that could not be evaluated is an error too, CdkNagValidationFailure).
// Annotations of other origins are left out.
func Findings(stack awscdk.Stack) []string {
	a := assertions.Annotations_FromStack(stack)
	var out []string
	for _, found := range [][]*cxapi.SynthesisMessage{
		*a.FindError(jsii.String("*"), assertions.Match_AnyValue()),
		*a.FindWarning(jsii.String("*"), assertions.Match_AnyValue()),
	} {
		for _, m := range found {
			text := fmt.Sprint(m.Entry.Data)
			if !strings.HasPrefix(text, "AwsSolutions-") && !strings.HasPrefix(text, "Serverless-") && !strings.Contains(text, "CdkNagValidationFailure") {
				continue
			}
			if i := strings.Index(text, "\n"); i > 0 {
				text = text[:i]
			}
			out = append(out, *m.Id+" "+text)
		}
	}
	sort.Strings(out)
	return out
}

// Rules counts findings by rule (the text before ':' of each finding, without the path).
func Rules(findings []string) map[string]int {
	rules := map[string]int{}
	for _, f := range findings {
		_, rest, _ := strings.Cut(f, " ")
		rule, _, _ := strings.Cut(rest, ":")
		if i := strings.Index(rule, "["); i > 0 {
			rule = rule[:i]
		}
		rules[rule]++
	}
	return rules
}
