// The Step Functions definition every operation type runs, one source for the local stack
// and the CDK stack. Each type gets its own state machine from this template, with its
// worker function substituted.
package stepfunctions

import (
	_ "embed"
	"fmt"
	"strings"
)

//go:embed operation.asl.json
var template string

// Substitution names, in CDK's DefinitionSubstitutions syntax (${Name}).
const (
	WorkerFunctionArn   = "WorkerFunctionArn"
	RecorderFunctionArn = "RecorderFunctionArn"
)

// Template returns the definition with its ${…} placeholders, for CDK.
func Template() string { return template }

// Definition returns the definition with the placeholders replaced. Every placeholder must be
// given, so a missing function fails here and not at run time.
func Definition(subs map[string]string) (string, error) {
	def := template
	for k, v := range subs {
		def = strings.ReplaceAll(def, "${"+k+"}", v)
	}
	if i := strings.Index(def, "${"); i >= 0 {
		return "", fmt.Errorf("workflow: unsubstituted placeholder at %q", def[i:min(len(def), i+40)])
	}
	return def, nil
}

// FunctionName is the worker function of a type's workflow (optype.Type.Executor), as in
// functions/worker-<executor>.
func FunctionName(executor string) string { return "worker-" + executor }
