package construct_test

import (
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	"github.com/longrun-dev/longrun/construct"
	"github.com/longrun-dev/longrun/internal/aws/cdkid"
	"github.com/longrun-dev/longrun/internal/aws/sizing"
	"github.com/longrun-dev/longrun/internal/aws/stepfunctions"
	"github.com/longrun-dev/longrun/internal/testkit/cfntest"
	"github.com/longrun-dev/longrun/internal/testkit/nagtest"
)

// runtimeWorker is one worker of testdata/runtimes.types.yaml as a team would define it, on
// its own runtime.
type runtimeWorker struct {
	runtime, handler, arch string
	// stepTimeout is the longest of its types: what its function's timeout must cover.
	stepTimeout time.Duration
	// latest says whether cdk-nag takes its runtime for its family's latest.
	latest bool
}

// runtimeWorkers are the workers of testdata/runtimes.types.yaml: Go on provided.al2023,
// TypeScript compiled for Node.js 22, Python 3.12; the last on x86_64, where longrun's own
// functions run on arm64 (a worker's architecture is its own too).
var runtimeWorkers = map[string]runtimeWorker{
	"provisioner": {runtime: "provided.al2023", handler: "bootstrap", arch: "arm64", stepTimeout: 5 * time.Minute, latest: true},
	"exporter":    {runtime: "nodejs22.x", handler: "index.handler", arch: "arm64", stepTimeout: 2 * time.Minute},
	"mailer":      {runtime: "python3.12", handler: "index.handler", arch: "x86_64", stepTimeout: 30 * time.Second},
}

// newRuntimeWorkers defines the three workers in a's stack as docs/adopting.md advises
// (a role that writes its own log group only, JSON logs, an explicit memory size, the
// timeout WorkerTimeouts gives), and records on each the cdk-nag findings that are its
// team's choice, as infra/stack does for the built-in workers.
func newRuntimeWorkers(t *testing.T, a *app, props *construct.Props) map[string]awslambda.IFunction {
	t.Helper()
	timeouts, err := construct.WorkerTimeouts(props)
	if err != nil {
		t.Fatal(err)
	}
	goCode := t.TempDir() // what `go build -o bootstrap` leaves: a placeholder will do
	if err := os.WriteFile(filepath.Join(goCode, "bootstrap"), []byte("placeholder"), 0o755); err != nil {
		t.Fatal(err)
	}
	defs := map[string]*awslambda.FunctionProps{
		"provisioner": {Runtime: awslambda.Runtime_PROVIDED_AL2023(), Architecture: awslambda.Architecture_ARM_64(),
			Handler: jsii.String("bootstrap"), Code: awslambda.Code_FromAsset(jsii.String(goCode), nil)},
		"exporter": {Runtime: awslambda.Runtime_NODEJS_22_X(), Architecture: awslambda.Architecture_ARM_64(), Handler: jsii.String("index.handler"),
			Code: awslambda.Code_FromInline(jsii.String("exports.handler = async () => ({ status: 'succeeded' });\n"))},
		"mailer": {Runtime: awslambda.Runtime_PYTHON_3_12(), Architecture: awslambda.Architecture_X86_64(), Handler: jsii.String("index.handler"),
			Code: awslambda.Code_FromInline(jsii.String("def handler(event, context):\n    return {'status': 'succeeded'}\n"))},
	}
	workers := map[string]awslambda.IFunction{}
	for _, w := range slices.Sorted(maps.Keys(defs)) {
		p, id := defs[w], cdkid.Title(w)
		logs := awslogs.NewLogGroup(a.stack, jsii.String(id+"Logs"), &awslogs.LogGroupProps{Retention: awslogs.RetentionDays_ONE_MONTH})
		p.FunctionName = jsii.String("team-prod-" + w)
		p.Role = construct.FunctionRole(a.stack, id, logs)
		p.LogGroup = logs
		p.LoggingFormat = awslambda.LoggingFormat_JSON
		p.MemorySize = jsii.Number(256)
		p.Timeout = awscdk.Duration_Seconds(jsii.Number(timeouts[w].Seconds()))
		fn := awslambda.NewFunction(a.stack, jsii.String(id), p)
		suppressions := []*cdknag.NagPackSuppression{
			{Id: jsii.String("Serverless-LambdaDLQ"), Reason: jsii.String("The construct makes the recorder the worker's destination on failure: it records how each step ended.")},
			{Id: jsii.String("Serverless-LambdaTracing"), Reason: jsii.String("Whether a worker is traced is its team's choice; the recorder's span covers the invocation.")},
		}
		if !runtimeWorkers[w].latest {
			for _, rule := range []string{"AwsSolutions-L1", "Serverless-LambdaLatestVersion"} {
				suppressions = append(suppressions, &cdknag.NagPackSuppression{Id: jsii.String(rule),
					Reason: jsii.String("The team pins the runtime its code and SDK are tested on, and moves when they move.")})
			}
		}
		cdknag.NagSuppressions_AddResourceSuppressions(fn, &suppressions, jsii.Bool(false))
		workers[w] = fn
	}
	return workers
}

// A worker is a Lambda function of any runtime: the construct wires a Go worker on
// provided.al2023, a Node.js one and a Python one alike, through their ARNs alone. Each is
// handed to the recorder (LONGRUN_WORKERS, and its workflows' substitution), which alone may
// invoke it; each gets the event invoke config that sends its steps' ends to the recorder,
// and the recorder lets its role deliver them; the construct changes nothing of the
// function itself (runtime, handler, architecture, environment, layers, tracing, its role's
// policy); and cdk-nag's packs find nothing unsuppressed in the stack, the construct's
// resources and the workers alike, once each worker records the findings that are its
// team's choice (no dead-letter queue, no tracing, a runtime it pins).
func TestWorkersOfAnyRuntime(t *testing.T) {
	a := newApp(t)
	props := &construct.Props{Stage: "prod", TypesFiles: []string{"testdata/runtimes.types.yaml"}, CodeDir: codeDir()}
	props.Workers = newRuntimeWorkers(t, a, props)
	construct.New(a.stack, "Longrun", props)
	nagtest.Check(a.stack)
	if findings := nagtest.Findings(a.stack); len(findings) > 0 {
		t.Errorf("%d unsuppressed findings, by rule %v:\n%s", len(findings), nagtest.Rules(findings), strings.Join(findings, "\n"))
	}
	tpl := a.template(t)

	recorder, recorderProps := tpl.function(t, "longrun-prod-recorder")
	recorderArn := "${" + recorder + ".Arn}"
	var invokes []string
	for _, st := range tpl.roleStatements(roleOf(t, recorderProps, "Role")) {
		if slices.Contains(cfntest.Actions(st), "lambda:InvokeFunction") {
			invokes = append(invokes, cfntest.Resources(st)...)
		}
	}
	handedOver := cfntest.Render(envOf(recorderProps)["LONGRUN_WORKERS"])
	configs := map[string]map[string]any{}
	for _, c := range tpl.of("AWS::Lambda::EventInvokeConfig") {
		configs[cfntest.Render(c.Properties["FunctionName"])] = c.Properties
	}
	deliverers := map[string]bool{}
	for _, p := range tpl.of("AWS::Lambda::Permission") {
		if cfntest.Render(p.Properties["FunctionName"]) == recorderArn && p.Properties["Action"] == "lambda:InvokeFunction" {
			deliverers[cfntest.Render(p.Properties["Principal"])] = true
		}
	}

	var wantInvokes []string
	for w, want := range runtimeWorkers {
		id, fn := tpl.function(t, "team-prod-"+w)
		arn := "${" + id + ".Arn}"
		wantInvokes = append(wantInvokes, arn, arn+":*")
		// The function is as the team defined it.
		if fn["Runtime"] != want.runtime || fn["Handler"] != want.handler || !reflect.DeepEqual(fn["Architectures"], []any{want.arch}) {
			t.Errorf("%s: runtime %v, handler %v, architectures %v; want %s, %s, %s", w, fn["Runtime"], fn["Handler"], fn["Architectures"], want.runtime, want.handler, want.arch)
		}
		if fn["Environment"] != nil || fn["Layers"] != nil || fn["TracingConfig"] != nil {
			t.Errorf("%s: the construct set environment %v, layers %v, tracing %v", w, fn["Environment"], fn["Layers"], fn["TracingConfig"])
		}
		if fn["Timeout"] != want.stepTimeout.Seconds() {
			t.Errorf("%s: timeout %v, want its types' longest stepTimeout %v", w, fn["Timeout"], want.stepTimeout.Seconds())
		}
		// Its role may write its own logs, and the construct added nothing to it.
		role := roleOf(t, fn, "Role")
		for _, st := range tpl.roleStatements(role) {
			for _, action := range cfntest.Actions(st) {
				if !strings.HasPrefix(action, "logs:") {
					t.Errorf("%s's role may %s on %v", w, action, cfntest.Resources(st))
				}
			}
		}
		// The recorder knows it by its ARN, and both its workflows hand the recorder that ARN.
		if !strings.Contains(handedOver, `"`+w+`":"`+arn+`"`) {
			t.Errorf("LONGRUN_WORKERS %s does not map %s to %s", handedOver, w, arn)
		}
		for _, machine := range []string{w, w + "-resume"} {
			_, sm := tpl.machine(t, "longrun-prod-"+machine)
			subs := sm.Properties["DefinitionSubstitutions"].(map[string]any)
			if got := cfntest.Render(subs[stepfunctions.WorkerFunctionArn]); got != arn {
				t.Errorf("%s: the workflow hands the recorder %s, want %s", machine, got, arn)
			}
			limits, _ := sm.Metadata["longrun:types"].(map[string]any)
			for typ, l := range limits {
				if got := l.(map[string]any)["stepTimeoutSeconds"]; got != want.stepTimeout.Seconds() {
					t.Errorf("%s: %s's stepTimeoutSeconds %v, want %v", machine, typ, got, want.stepTimeout.Seconds())
				}
			}
		}
		// Its steps' ends go to the recorder, as its role invokes it.
		c, ok := configs["${"+id+"}"]
		dest, _ := c["DestinationConfig"].(map[string]any)
		to := func(k string) string { d, _ := dest[k].(map[string]any); return cfntest.Render(d["Destination"]) }
		if !ok || c["Qualifier"] != "$LATEST" || c["MaximumRetryAttempts"] != float64(sizing.WorkerRetryAttempts) ||
			to("OnSuccess") != recorderArn || to("OnFailure") != recorderArn {
			t.Errorf("%s: event invoke config %v", w, c)
		}
		if !deliverers["${"+role+".Arn}"] {
			t.Errorf("%s: the recorder may be invoked by %v, not by the worker's role %s", w, deliverers, role)
		}
	}
	sort.Strings(invokes)
	sort.Strings(wantInvokes)
	if !reflect.DeepEqual(invokes, wantInvokes) {
		t.Errorf("the recorder may invoke\n%v\nwant the three workers\n%v", invokes, wantInvokes)
	}
	if len(configs) != len(runtimeWorkers) {
		t.Errorf("%d event invoke configs, want one per worker: %v", len(configs), configs)
	}
}
