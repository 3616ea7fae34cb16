package construct_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2/awscognito"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/jsii-runtime-go"

	"github.com/longrun-dev/longrun/construct"
	"github.com/longrun-dev/longrun/internal/aws/sizing"
	"github.com/longrun-dev/longrun/internal/aws/stepfunctions"
	"github.com/longrun-dev/longrun/internal/core/optype"
	"github.com/longrun-dev/longrun/internal/testkit/cfntest"
)

// The recorder runs the steps (docs/worker-protocol.md): each workflow may invoke the
// recorder and nothing else, handing it its worker's ARN; the recorder may invoke every
// worker (the one the app defines through its own grant, the imported one through the
// recorder role's policy alone: the construct cannot change an imported function's
// permissions), and no other role or resource permission names a worker.
func TestWorkflowsInvokeTheRecorderWhichInvokesTheWorkers(t *testing.T) {
	tpl := team(t)
	recorder, recorderProps := tpl.function(t, "longrun-prod-recorder")
	recorderRole := roleOf(t, recorderProps, "Role")
	workerArns := map[string]string{"provisioner": "${" + tpl.provisioner + ".Arn}", "mailer": mailerArn}
	roles := map[string]string{}
	for worker, arn := range workerArns {
		_, sm := tpl.machine(t, "longrun-prod-"+worker)
		subs := sm.Properties["DefinitionSubstitutions"].(map[string]any)
		if got := cfntest.Render(subs[stepfunctions.WorkerFunctionArn]); got != arn {
			t.Errorf("%s: the workflow hands the recorder %s, want %s", worker, got, arn)
		}
		if got := cfntest.Render(subs[stepfunctions.RecorderFunctionArn]); got != "${"+recorder+".Arn}" {
			t.Errorf("%s: the workflow invokes %s, want the recorder", worker, got)
		}
		role := roleOf(t, sm.Properties, "RoleArn")
		roles[role] = worker
		var got []string
		for _, st := range tpl.roleStatements(role) {
			if acts := cfntest.Actions(st); !reflect.DeepEqual(acts, []string{"lambda:InvokeFunction"}) {
				// Tracing: what X-Ray needs, on every resource as X-Ray has no others.
				if !reflect.DeepEqual(acts, []string{"xray:PutTraceSegments", "xray:PutTelemetryRecords", "xray:GetSamplingRules", "xray:GetSamplingTargets"}) || st["Resource"] != "*" {
					t.Errorf("%s's workflow may %v (%v) on %v", worker, acts, st["Effect"], st["Resource"])
				}
				continue
			}
			if st["Effect"] != "Allow" || st["Condition"] != nil {
				t.Errorf("%s's workflow: %v", worker, st)
			}
			got = append(got, cfntest.Resources(st)...)
		}
		sort.Strings(got)
		if want := []string{"${" + recorder + ".Arn}", "${" + recorder + ".Arn}:*"}; !reflect.DeepEqual(got, want) {
			t.Errorf("%s's workflow may invoke\n%v\nwant\n%v", worker, got, want)
		}
	}
	if len(roles) != 2 {
		t.Errorf("the workflows share a role: %v", roles)
	}
	var invokes []string
	for _, st := range tpl.roleStatements(recorderRole) {
		if slices.Contains(cfntest.Actions(st), "lambda:InvokeFunction") {
			if !reflect.DeepEqual(cfntest.Actions(st), []string{"lambda:InvokeFunction"}) || st["Condition"] != nil {
				t.Errorf("the recorder: %v", st)
			}
			invokes = append(invokes, cfntest.Resources(st)...)
		}
	}
	sort.Strings(invokes)
	var want []string
	for _, arn := range workerArns {
		want = append(want, arn, arn+":*")
	}
	sort.Strings(want)
	if !reflect.DeepEqual(invokes, want) {
		t.Errorf("the recorder may invoke\n%v\nwant the workers\n%v", invokes, want)
	}
	// Nothing else in the template may invoke a worker: no other role's statement and no
	// resource permission names either.
	for id, p := range tpl.of("AWS::IAM::Policy") {
		for _, role := range p.Properties["Roles"].([]any) {
			if role.(map[string]any)["Ref"].(string) == recorderRole {
				continue
			}
			for _, st := range p.Properties["PolicyDocument"].(map[string]any)["Statement"].([]any) {
				for _, r := range cfntest.Resources(st.(map[string]any)) {
					if strings.HasPrefix(r, mailerArn) || strings.HasPrefix(r, "${"+tpl.provisioner+".Arn}") {
						t.Errorf("%s: role %v may %v on a worker", id, role, cfntest.Actions(st.(map[string]any)))
					}
				}
			}
		}
	}
	for id, p := range tpl.of("AWS::Lambda::Permission") {
		if text := cfntest.Render(p.Properties["FunctionName"]); strings.Contains(text, mailerArn) || strings.Contains(text, tpl.provisioner) {
			t.Errorf("%s: a resource permission on a worker: %v", id, p.Properties)
		}
	}
}

// Workers never touch longrun's table (docs/worker-protocol.md): no role but longrun's
// functions' has any DynamoDB or KMS action or names the table, and the construct gives the
// worker the app defines no policy and no setting at all.
func TestWorkersHaveNoTableAccess(t *testing.T) {
	tpl := team(t)
	tableID, _ := tpl.only(t, "AWS::DynamoDB::Table")
	longrun := map[string]string{}
	for _, f := range longrunFunctions {
		_, props := tpl.function(t, "longrun-prod-"+f)
		longrun[roleOf(t, props, "Role")] = f
	}
	withData := map[string]bool{}
	for id, p := range tpl.of("AWS::IAM::Policy") {
		for _, role := range p.Properties["Roles"].([]any) {
			roleID := role.(map[string]any)["Ref"].(string)
			for _, st := range p.Properties["PolicyDocument"].(map[string]any)["Statement"].([]any) {
				st := st.(map[string]any)
				data := strings.Contains(cfntest.Render(st["Resource"]), tableID)
				for _, a := range cfntest.Actions(st) {
					data = data || strings.HasPrefix(a, "dynamodb:") || strings.HasPrefix(a, "kms:")
				}
				if !data {
					continue
				}
				if longrun[roleID] == "" {
					t.Errorf("%s: role %s (not longrun's) may %v on %v", id, roleID, cfntest.Actions(st), st["Resource"])
				}
				withData[longrun[roleID]] = true
			}
		}
	}
	// The test would pass on a template without grants: the functions that use the table
	// have theirs (the notifier reads the stream through its mapping).
	for _, f := range longrunFunctions {
		if !withData[f] {
			t.Errorf("%s has no access to the table", f)
		}
	}
	worker := tpl.Resources[tpl.provisioner].Properties
	if statements := tpl.roleStatements(roleOf(t, worker, "Role")); len(statements) != 0 {
		t.Errorf("the provisioner's role got statements: %v", statements)
	}
	if env := envOf(worker); len(env) != 0 || worker["Layers"] != nil {
		t.Errorf("the provisioner got settings: env %v, layers %v", env, worker["Layers"])
	}
}

// Each workflow carries its types' limits (metadata); its tasks invoke the recorder, which
// gives each step the type's stepTimeout itself.
func TestTypesLimitsAreOnTheirWorkflows(t *testing.T) {
	tpl := team(t)
	for worker, want := range map[string]map[string]any{
		"provisioner": {"provision.environment": map[string]any{"deadlineSeconds": float64(7200), "stepTimeoutSeconds": float64(300), "maxSteps": float64(240)}},
		"mailer":      {"notify.mail": map[string]any{"deadlineSeconds": float64(600), "stepTimeoutSeconds": float64(30), "maxSteps": float64(3)}},
	} {
		_, sm := tpl.machine(t, "longrun-prod-"+worker)
		if got := sm.Metadata["longrun:types"]; !reflect.DeepEqual(got, want) {
			t.Errorf("%s: metadata longrun:types = %v, want %v", worker, got, want)
		}
		if sm.Properties["DefinitionString"] != stepfunctions.Template() {
			t.Errorf("%s: the definition is not the template", worker)
		}
	}
	// Every Task of the workflow invokes the recorder; the worker's ARN is only data for it.
	var asl struct {
		States map[string]struct {
			Type       string
			Parameters map[string]any
		}
	}
	if err := json.Unmarshal([]byte(stepfunctions.Template()), &asl); err != nil {
		t.Fatal(err)
	}
	tasks := 0
	for name, st := range asl.States {
		if st.Type == "Task" {
			tasks++
			if st.Parameters["FunctionName"] != "${"+stepfunctions.RecorderFunctionArn+"}" {
				t.Errorf("task %s invokes %v, not the recorder", name, st.Parameters["FunctionName"])
			}
		}
	}
	if tasks == 0 || !strings.Contains(stepfunctions.Template(), `"${`+stepfunctions.WorkerFunctionArn+`}"`) {
		t.Errorf("%d tasks; the worker's ARN must reach the recorder", tasks)
	}
}

// layerFiles reads the files of the template's one types layer as they will be uploaded
// (the staged asset its S3Key names), and returns the layer's logical id.
func (tpl *template) layerFiles(t *testing.T) (string, map[string]string) {
	t.Helper()
	id, layer := tpl.only(t, "AWS::Lambda::LayerVersion")
	key, _ := layer.Properties["Content"].(map[string]any)["S3Key"].(string)
	hash, ok := strings.CutSuffix(key, ".zip")
	if !ok {
		t.Fatalf("layer content %v", layer.Properties["Content"])
	}
	entries, err := os.ReadDir(filepath.Join(tpl.outdir, "asset."+hash))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(tpl.outdir, "asset."+hash, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = string(b)
	}
	if runtimes := layer.Properties["CompatibleRuntimes"]; !reflect.DeepEqual(runtimes, []any{"provided.al2023"}) {
		t.Errorf("layer runtimes %v", runtimes)
	}
	return id, files
}

// The definitions file reaches longrun's functions: in a layer (on /opt), which every one of
// the five has, and LONGRUN_TYPES_FILE names it there; the worker has neither.
func TestTypesFileReachesLongrunsFunctions(t *testing.T) {
	tpl := team(t)
	layer, files := tpl.layerFiles(t)
	want, _ := os.ReadFile("testdata/team.types.yaml")
	if !reflect.DeepEqual(files, map[string]string{"team.types.yaml": string(want)}) {
		t.Errorf("layer files %v", files)
	}
	// What the functions will load is what was checked at synthesis.
	dir := t.TempDir()
	_ = os.WriteFile(filepath.Join(dir, "team.types.yaml"), []byte(files["team.types.yaml"]), 0o644)
	if f, err := optype.Load(filepath.Join(dir, "team.types.yaml")); err != nil || len(f.Types) != 2 {
		t.Errorf("the staged file: %v", err)
	}
	for _, f := range longrunFunctions {
		_, props := tpl.function(t, "longrun-prod-"+f)
		if got := envOf(props)["LONGRUN_TYPES_FILE"]; got != "/opt/team.types.yaml" {
			t.Errorf("%s: LONGRUN_TYPES_FILE=%v", f, got)
		}
		if layers, _ := props["Layers"].([]any); len(layers) != 2 || !reflect.DeepEqual(layers[0], map[string]any{"Ref": layer}) {
			t.Errorf("%s: layers %v, want the types layer (and the collector's)", f, props["Layers"])
		}
		if got := envOf(props)["LONGRUN_DEMO_TYPES"]; got != "false" {
			t.Errorf("%s: LONGRUN_DEMO_TYPES=%v", f, got)
		}
	}
	if got := team(t).lr.TypesFiles; !reflect.DeepEqual(got, []string{"/opt/team.types.yaml"}) {
		t.Errorf("TypesFiles %v", got)
	}
}

// What the construct exposes is what it created: the team's outputs of the API URL, table,
// bus and state machines refer to those resources, and the construct adds no output itself.
func TestExposedValuesAreTheResources(t *testing.T) {
	tpl := team(t)
	lr := tpl.lr
	if lr.API == nil || lr.APIURL == nil || lr.Table == nil || lr.Bus == nil || lr.TypesLayer == nil || lr.Node() == nil {
		t.Fatalf("unset: %+v", lr)
	}
	if lr.UserPool != nil || lr.UserPoolClient != nil {
		t.Errorf("an IAM deployment exposes a user pool")
	}
	if got := slices.Sorted(func(yield func(string) bool) {
		for k, f := range lr.Functions {
			if f != nil && !yield(k) {
				return
			}
		}
	}); !reflect.DeepEqual(got, longrunFunctions) {
		t.Errorf("Functions %v, want %v", got, longrunFunctions)
	}
	if len(lr.StateMachines) != 2 || lr.StateMachines["provisioner"] == nil || lr.StateMachines["mailer"] == nil {
		t.Errorf("StateMachines %v", lr.StateMachines)
	}
	if len(lr.DeadLetterQueues) != 2 {
		t.Errorf("DeadLetterQueues %v", lr.DeadLetterQueues)
	}
	restAPI, _ := tpl.only(t, "AWS::ApiGateway::RestApi")
	stage, _ := tpl.only(t, "AWS::ApiGateway::Stage")
	table, _ := tpl.only(t, "AWS::DynamoDB::Table")
	bus, _ := tpl.only(t, "AWS::Events::EventBus")
	provisioner, _ := tpl.machine(t, "longrun-prod-provisioner")
	mailer, _ := tpl.machine(t, "longrun-prod-mailer")
	for output, want := range map[string]string{
		"ApiUrl":      "https://${" + restAPI + "}.execute-api.${AWS::Region}.${AWS::URLSuffix}/${" + stage + "}/",
		"Table":       "${" + table + "}",
		"Bus":         "${" + bus + "}",
		"Provisioner": "${" + provisioner + "}",
		"Mailer":      "${" + mailer + "}",
	} {
		if got := cfntest.Render(tpl.Outputs[output+"Output"].Value); got != want {
			t.Errorf("output %s = %s, want %s", output, got, want)
		}
	}
	if len(tpl.Outputs) != 5 {
		t.Errorf("outputs %v: the construct must add none of its own", tpl.Outputs)
	}
	// GrantCall: the team's caller may invoke every method and path of the API's stage.
	var caller string
	for id := range tpl.of("AWS::IAM::Role") {
		if strings.HasPrefix(id, "Caller") {
			caller = id
		}
	}
	var calls []string
	for _, st := range tpl.roleStatements(caller) {
		if reflect.DeepEqual(cfntest.Actions(st), []string{"execute-api:Invoke"}) {
			calls = append(calls, cfntest.Resources(st)...)
		}
	}
	if want := []string{"arn:${AWS::Partition}:execute-api:${AWS::Region}:${AWS::AccountId}:${" + restAPI + "}/${" + stage + "}/*/*"}; !reflect.DeepEqual(calls, want) {
		t.Errorf("the caller may invoke %v, want %v", calls, want)
	}
	// IAM authorization by default, on every method but the callback URLs' (POST, and ANY
	// for the function's 405), whose token is their credential, and the console's files'
	// (GET and HEAD), which are public.
	open := map[string]bool{}
	for id, m := range tpl.of("AWS::ApiGateway::Method") {
		route := fmt.Sprint(m.Properties["HttpMethod"]) + " " + tpl.resourcePath(t, m.Properties["ResourceId"])
		want := "AWS_IAM"
		if strings.HasSuffix(route, " /v1/callbacks/{token}") || slices.Contains(consoleRoutes, route) {
			want = "NONE"
			open[route] = true
		}
		if m.Properties["AuthorizationType"] != want || m.Properties["AuthorizerId"] != nil {
			t.Errorf("%s (%s): %v by %v, want %s", id, route, m.Properties["AuthorizationType"], m.Properties["AuthorizerId"], want)
		}
	}
	if want := map[string]bool{"POST /v1/callbacks/{token}": true, "ANY /v1/callbacks/{token}": true,
		"GET /console": true, "HEAD /console": true, "GET /console/{proxy+}": true, "HEAD /console/{proxy+}": true}; !reflect.DeepEqual(open, want) {
		t.Errorf("methods without authorization %v, want %v", open, want)
	}
	// The recorder writes callback URLs under the stage's URL (ApiUrl without its slash).
	_, recorder := tpl.function(t, "longrun-prod-recorder")
	if got, want := cfntest.Render(envOf(recorder)["LONGRUN_CALLBACK_BASE"]),
		"https://${"+restAPI+"}.execute-api.${AWS::Region}.${AWS::URLSuffix}/${"+stage+"}"; got != want {
		t.Errorf("the recorder's LONGRUN_CALLBACK_BASE = %s, want %s", got, want)
	}
	for _, fname := range []string{"api", "dispatcher", "notifier", "reconciler"} {
		if _, fn := tpl.function(t, "longrun-prod-"+fname); envOf(fn)["LONGRUN_CALLBACK_BASE"] != nil {
			t.Errorf("%s has LONGRUN_CALLBACK_BASE", fname)
		}
	}
	// A stage other than dev keeps its data.
	if p := tpl.Resources[table].Properties; p["DeletionProtectionEnabled"] != true {
		t.Errorf("prod table without deletion protection: %v", p["DeletionProtectionEnabled"])
	}
}

// Several files: each is its own file on /opt (a name two share gets a prefix), all in
// LONGRUN_TYPES_FILE; a worker's timeout must cover its longest step; demo types, and a
// worker serving only them, exist only with DemoTypes.
func TestSeveralFiles(t *testing.T) {
	files := []string{"testdata/team.types.yaml", "testdata/more/team.types.yaml"}
	a := newApp(t)
	workers := map[string]awslambda.IFunction{
		"provisioner": a.pythonWorker("Provisioner", 10*time.Minute),
		"mailer":      awslambda.Function_FromFunctionArn(a.stack, jsii.String("Mailer"), jsii.String(mailerArn)),
	}
	lr := construct.New(a.stack, "Longrun", &construct.Props{Stage: "dev", TypesFiles: files, CodeDir: codeDir(), Workers: workers})
	tpl := a.template(t)
	_, got := tpl.layerFiles(t)
	first, _ := os.ReadFile("testdata/team.types.yaml")
	second, _ := os.ReadFile("testdata/more/team.types.yaml")
	if !reflect.DeepEqual(got, map[string]string{"team.types.yaml": string(first), "2-team.types.yaml": string(second)}) {
		t.Errorf("layer files %v", got)
	}
	for _, f := range longrunFunctions {
		_, props := tpl.function(t, "longrun-dev-"+f)
		if v := envOf(props)["LONGRUN_TYPES_FILE"]; v != "/opt/team.types.yaml,/opt/2-team.types.yaml" {
			t.Errorf("%s: LONGRUN_TYPES_FILE=%v", f, v)
		}
	}
	_, sm := tpl.machine(t, "longrun-dev-provisioner")
	if got := sm.Metadata["longrun:types"].(map[string]any); len(got) != 2 ||
		got["provision.cleanup"].(map[string]any)["stepTimeoutSeconds"] != float64(600) {
		t.Errorf("the provisioner's types: %v", got)
	}
	if len(tpl.of("AWS::StepFunctions::StateMachine")) != 4 || len(lr.StateMachines) != 2 || len(lr.ResumeStateMachines) != 2 {
		t.Errorf("a workflow for the demo-only worker without DemoTypes")
	}

	// The provisioner's 5m is enough for provision.environment, not for provision.cleanup.
	short := newApp(t)
	msg := mustPanic(t, func() {
		construct.New(short.stack, "Longrun", &construct.Props{Stage: "dev", TypesFiles: files, CodeDir: codeDir(), Workers: map[string]awslambda.IFunction{
			"provisioner": short.pythonWorker("Provisioner", 5*time.Minute), "mailer": workers["mailer"],
		}})
	})
	if !strings.Contains(msg, `worker "provisioner": its function's timeout 5m0s is shorter than the stepTimeout 10m0s of provision.cleanup`) {
		t.Errorf("a short worker: %q", msg)
	}
	// The demo-only worker is a stranger without DemoTypes, and required with it.
	demo := newApp(t)
	msg = mustPanic(t, func() {
		construct.New(demo.stack, "Longrun", &construct.Props{Stage: "dev", TypesFiles: files, CodeDir: codeDir(), Workers: map[string]awslambda.IFunction{
			"provisioner": demo.pythonWorker("Provisioner", 10*time.Minute), "mailer": workers["mailer"], "echo": demo.pythonWorker("Echo", time.Minute),
		}})
	})
	if !strings.Contains(msg, `Props.Workers["echo"]: the worker serves only demo types (demo.echo), which are not served without DemoTypes`) {
		t.Errorf("a demo worker without DemoTypes: %q", msg)
	}
	demo = newApp(t)
	msg = mustPanic(t, func() {
		construct.New(demo.stack, "Longrun", &construct.Props{Stage: "dev", TypesFiles: files, DemoTypes: true, CodeDir: codeDir(), Workers: map[string]awslambda.IFunction{
			"provisioner": demo.pythonWorker("Provisioner", 10*time.Minute), "mailer": workers["mailer"],
		}})
	})
	if !strings.Contains(msg, `worker "echo" (demo.echo) has no function in Props.Workers`) {
		t.Errorf("DemoTypes without the demo worker: %q", msg)
	}
}

// Mistakes stop synthesis with a message that names them.
func TestMistakesStopSynthesis(t *testing.T) {
	for _, tc := range []struct {
		name    string
		props   func(a *app) *construct.Props
		message []string
	}{
		{"a missing worker", func(a *app) *construct.Props {
			return &construct.Props{Stage: "dev", TypesFiles: []string{"testdata/team.types.yaml"}, CodeDir: codeDir(),
				Workers: map[string]awslambda.IFunction{"provisioner": a.pythonWorker("P", 5*time.Minute)}}
		}, []string{`worker "mailer" (notify.mail) has no function in Props.Workers`}},
		{"an extra worker", func(a *app) *construct.Props {
			return &construct.Props{Stage: "dev", TypesFiles: []string{"testdata/team.types.yaml"}, CodeDir: codeDir(), Workers: map[string]awslambda.IFunction{
				"provisioner": a.pythonWorker("P", 5*time.Minute), "mailer": a.pythonWorker("M", time.Minute), "billing": a.pythonWorker("B", time.Minute),
			}}
		}, []string{`Props.Workers["billing"]: no type served names worker "billing" (the workers are mailer, provisioner)`}},
		{"no workers at all", func(a *app) *construct.Props {
			return &construct.Props{Stage: "dev", TypesFiles: []string{"testdata/team.types.yaml"}, CodeDir: codeDir()}
		}, []string{`worker "mailer" (notify.mail) has no function`, `worker "provisioner" (provision.environment) has no function`}},
		{"a nil worker", func(a *app) *construct.Props {
			return &construct.Props{Stage: "dev", TypesFiles: []string{"testdata/team.types.yaml"}, CodeDir: codeDir(), Workers: map[string]awslambda.IFunction{
				"provisioner": a.pythonWorker("P", 5*time.Minute), "mailer": nil,
			}}
		}, []string{`Props.Workers["mailer"] is nil`}},
		{"a worker with Lambda's default timeout", func(a *app) *construct.Props {
			return &construct.Props{Stage: "dev", TypesFiles: []string{"testdata/team.types.yaml"}, CodeDir: codeDir(), Workers: map[string]awslambda.IFunction{
				"provisioner": a.pythonWorker("P", 5*time.Minute), "mailer": a.pythonWorker("M", 0),
			}}
		}, []string{`worker "mailer": its function's timeout 3s is shorter than the stepTimeout 30s of notify.mail`}},
		{"a worker that configures its own asynchronous invocation", func(a *app) *construct.Props {
			// Its event invoke config would collide with the construct's only at deployment.
			mailer := a.pythonWorker("M", time.Minute)
			mailer.ConfigureAsyncInvoke(&awslambda.EventInvokeConfigOptions{RetryAttempts: jsii.Number(2)})
			return &construct.Props{Stage: "dev", TypesFiles: []string{"testdata/team.types.yaml"}, CodeDir: codeDir(), Workers: map[string]awslambda.IFunction{
				"provisioner": a.pythonWorker("P", 5*time.Minute), "mailer": mailer,
			}}
		}, []string{`Props.Workers["mailer"]: its function configures asynchronous invocation itself`}},
		{"an invalid types file", func(a *app) *construct.Props {
			return &construct.Props{Stage: "dev", TypesFiles: []string{"testdata/invalid.types.yaml"}, CodeDir: codeDir()}
		}, []string{`testdata/invalid.types.yaml: type "provision.environment": stepTimeout: must be more than 0 and at most 15m0s`}},
		{"a missing types file", func(a *app) *construct.Props {
			return &construct.Props{Stage: "dev", TypesFiles: []string{"testdata/team.types.yaml", "testdata/nope.types.yaml"}, CodeDir: codeDir()}
		}, []string{"testdata/nope.types.yaml: open testdata/nope.types.yaml: no such file or directory"}},
		{"an empty types file name", func(a *app) *construct.Props {
			return &construct.Props{Stage: "dev", TypesFiles: []string{"testdata/team.types.yaml", " "}, CodeDir: codeDir()}
		}, []string{`TypesFiles ["testdata/team.types.yaml" " "]: want a path per file, none empty, no comma in a file's name`}},
		{"a types file whose name has a comma", func(a *app) *construct.Props {
			return &construct.Props{Stage: "dev", TypesFiles: []string{"testdata/a,b.types.yaml"}, CodeDir: codeDir()}
		}, []string{"no comma in a file's name"}},
		{"built-in types without their worker", func(a *app) *construct.Props {
			return &construct.Props{Stage: "dev", CodeDir: codeDir()}
		}, []string{`worker "export-orders" (export.orders) has no function in Props.Workers`}},
		{"a stage that cannot name resources", func(a *app) *construct.Props {
			return &construct.Props{Stage: "my stage", CodeDir: codeDir()}
		}, []string{`Stage "my stage": want letters, digits and hyphens`}},
		{"no code", func(a *app) *construct.Props {
			return &construct.Props{Stage: "dev"}
		}, []string{"CodeDir is empty"}},
		{"client ids without a pool", func(a *app) *construct.Props {
			return &construct.Props{Stage: "dev", CodeDir: codeDir(), Cognito: &construct.CognitoOptions{ClientIDs: []string{"c"}}}
		}, []string{"set Cognito.UserPool too"}},
		{"a pool without client ids", func(a *app) *construct.Props {
			pool := awscognito.UserPool_FromUserPoolId(a.stack, jsii.String("Pool"), jsii.String("us-east-1_x"))
			return &construct.Props{Stage: "dev", CodeDir: codeDir(), Cognito: &construct.CognitoOptions{UserPool: pool}}
		}, []string{"Cognito.UserPool needs Cognito.ClientIDs"}},
		{"an operator that is no IAM identity", func(a *app) *construct.Props {
			return &construct.Props{Stage: "dev", CodeDir: codeDir(), OperatorPrincipals: []string{"bob"}}
		}, []string{`OperatorPrincipals: "bob" is not an IAM role or user ARN`}},
		{"a negative quota", func(a *app) *construct.Props {
			quota := -1
			return &construct.Props{Stage: "dev", CodeDir: codeDir(), TenantQuota: &quota}
		}, []string{"TenantQuota=-1: want a non-negative number"}},
		{"a negative alarm threshold", func(a *app) *construct.Props {
			return &construct.Props{Stage: "dev", CodeDir: codeDir(), Alarms: construct.AlarmOptions{DispatchLag: -time.Second}}
		}, []string{"Alarms", "want non-negative thresholds"}},
		{"a collector layer that is no layer", func(a *app) *construct.Props {
			return &construct.Props{Stage: "dev", CodeDir: codeDir(), Tracing: construct.TracingOptions{CollectorLayerArn: "otel"}}
		}, []string{`Tracing.CollectorLayerArn "otel" is not a Lambda layer version ARN`}},
		{"a collector layer with tracing off", func(a *app) *construct.Props {
			return &construct.Props{Stage: "dev", CodeDir: codeDir(), Tracing: construct.TracingOptions{Disabled: true,
				CollectorLayerArn: "arn:aws:lambda:eu-west-1:123456789012:layer:c:1"}}
		}, []string{"Tracing: a CollectorLayerArn with Disabled"}},
		{"a namespace of AWS's", func(a *app) *construct.Props {
			return &construct.Props{Stage: "dev", CodeDir: codeDir(), MetricsNamespace: "AWS/Lambda"}
		}, []string{`MetricsNamespace "AWS/Lambda"`}},
		{"a reconcile budget as long as the schedule", func(a *app) *construct.Props {
			return &construct.Props{Stage: "dev", CodeDir: codeDir(), Reconcile: construct.ReconcileOptions{Budget: time.Minute}}
		}, []string{"Reconcile.Budget=1m0s: want less than the schedule's 1m0s"}},
		{"a negative dispatch rate", func(a *app) *construct.Props {
			return &construct.Props{Stage: "dev", CodeDir: codeDir(), Reconcile: construct.ReconcileOptions{DispatchRate: -1}}
		}, []string{"Reconcile", "want non-negative rates"}},
		{"an existing key with AWS owned encryption", func(a *app) *construct.Props {
			key := awskms.Key_FromKeyArn(a.stack, jsii.String("Key"), jsii.String("arn:aws:kms:us-east-1:123456789012:key/k"))
			return &construct.Props{Stage: "dev", CodeDir: codeDir(), TableEncryption: construct.TableEncryptionAWSOwned, TableKey: key}
		}, []string{`TableKey needs TableEncryption "customer"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newApp(t)
			props := tc.props(a)
			msg := mustPanic(t, func() { construct.New(a.stack, "Longrun", props) })
			for _, want := range tc.message {
				if !strings.Contains(msg, want) {
					t.Errorf("panic %q, want %q", msg, want)
				}
			}
		})
	}
}

// An existing bus is used, not a new one: the notifier publishes there and may put events
// on it only, and the bus's policy gets the guard against forged longrun events. (Also: the
// built-in types need no layer and no LONGRUN_TYPES_FILE; Cognito with a created pool.)
func TestExistingEventBus(t *testing.T) {
	const busArn = "arn:aws:events:us-east-1:123456789012:event-bus/team-events"
	a := newApp(t)
	bus := awsevents.EventBus_FromEventBusArn(a.stack, jsii.String("TeamBus"), jsii.String(busArn))
	lr := construct.New(a.stack, "Longrun", &construct.Props{
		Stage: "dev", CodeDir: codeDir(), EventBus: bus, Cognito: &construct.CognitoOptions{},
		Workers: map[string]awslambda.IFunction{"export-orders": a.pythonWorker("ExportOrders", time.Minute)},
	})
	tpl := a.template(t)
	if n := len(tpl.of("AWS::Events::EventBus")); n != 0 {
		t.Errorf("%d buses created beside the given one", n)
	}
	if lr.Bus != bus {
		t.Errorf("Bus is not the given bus")
	}
	_, notifier := tpl.function(t, "longrun-dev-notifier")
	if got := envOf(notifier)["LONGRUN_EVENT_BUS"]; got != "team-events" {
		t.Errorf("LONGRUN_EVENT_BUS=%v", got)
	}
	var puts []string
	for _, st := range tpl.roleStatements(roleOf(t, notifier, "Role")) {
		if slices.Contains(cfntest.Actions(st), "events:PutEvents") {
			puts = append(puts, cfntest.Resources(st)...)
		}
	}
	if !reflect.DeepEqual(puts, []string{busArn}) {
		t.Errorf("the notifier may put events on %v, want the given bus", puts)
	}
	_, policy := tpl.only(t, "AWS::Events::EventBusPolicy")
	st := policy.Properties["Statement"].(map[string]any)
	want := map[string]any{
		"Sid": "OnlyLongrunPublishesLongrunEvents", "Effect": "Deny", "Principal": map[string]any{"AWS": "*"},
		"Action": "events:PutEvents", "Resource": busArn,
		"Condition": map[string]any{
			"StringEquals": map[string]any{"events:source": "longrun"},
			"ArnNotEquals": map[string]any{"aws:PrincipalArn": []any{map[string]any{"Fn::GetAtt": []any{roleOf(t, notifier, "Role"), "Arn"}}}},
		},
	}
	if policy.Properties["EventBusName"] != "team-events" || !reflect.DeepEqual(st, want) {
		t.Errorf("bus guard %v, want %v", policy.Properties, want)
	}
	if n := len(tpl.of("AWS::Lambda::LayerVersion")); n != 0 {
		t.Errorf("%d layers for the built-in types", n)
	}
	for _, f := range longrunFunctions {
		_, props := tpl.function(t, "longrun-dev-"+f)
		// The collector's layer only (tracing).
		if v, ok := envOf(props)["LONGRUN_TYPES_FILE"]; ok || len(props["Layers"].([]any)) != 1 {
			t.Errorf("%s: LONGRUN_TYPES_FILE=%v, layers %v with the built-in types", f, v, props["Layers"])
		}
	}
	if lr.UserPool == nil || lr.UserPoolClient == nil {
		t.Errorf("Cognito: pool %v, client %v", lr.UserPool, lr.UserPoolClient)
	}
	pool, _ := tpl.only(t, "AWS::Cognito::UserPool")
	_, auth := tpl.only(t, "AWS::ApiGateway::Authorizer")
	if !reflect.DeepEqual(auth.Properties["ProviderARNs"], []any{map[string]any{"Fn::GetAtt": []any{pool, "Arn"}}}) {
		t.Errorf("authorizer of %v", auth.Properties["ProviderARNs"])
	}
}

// WorkerTimeouts is what a team sizes its workers by: the longest stepTimeout per worker of
// the types served.
func TestWorkerTimeouts(t *testing.T) {
	for _, tc := range []struct {
		name  string
		props *construct.Props
		want  map[string]time.Duration
	}{
		{"no props: the built-in types", nil, map[string]time.Duration{"export-orders": time.Minute}},
		{"the built-in types", &construct.Props{}, map[string]time.Duration{"export-orders": time.Minute}},
		{"the built-in types with demo", &construct.Props{DemoTypes: true}, map[string]time.Duration{"export-orders": time.Minute, "demo-task": time.Minute}},
		{"a file", &construct.Props{TypesFiles: []string{"testdata/team.types.yaml"}},
			map[string]time.Duration{"provisioner": 5 * time.Minute, "mailer": 30 * time.Second}},
		{"two files with demo", &construct.Props{TypesFiles: []string{"testdata/team.types.yaml", "testdata/more/team.types.yaml"}, DemoTypes: true},
			map[string]time.Duration{"provisioner": 10 * time.Minute, "mailer": 30 * time.Second, "echo": 10 * time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := construct.WorkerTimeouts(tc.props)
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("WorkerTimeouts = %v, %v, want %v", got, err, tc.want)
			}
		})
	}
	if _, err := construct.WorkerTimeouts(&construct.Props{TypesFiles: []string{"testdata/invalid.types.yaml"}}); err == nil || !strings.Contains(err.Error(), "stepTimeout") {
		t.Errorf("an invalid file: %v", err)
	}
}

// The reconciler's pacing reaches the reconciler, and only it, as the settings the function
// reads; left alone, nothing is set and the function takes its defaults by region. The
// schedule runs it every minute, the period its budget stays below.
func TestReconcilePacing(t *testing.T) {
	names := []string{"LONGRUN_DISPATCH_RATE", "LONGRUN_DESCRIBE_RATE", "LONGRUN_RECONCILE_BUDGET", "LONGRUN_RECONCILE_CONCURRENCY"}
	a := newApp(t)
	construct.New(a.stack, "Longrun", &construct.Props{
		Stage: "dev", CodeDir: codeDir(),
		Workers:   map[string]awslambda.IFunction{"export-orders": a.pythonWorker("ExportOrders", time.Minute)},
		Reconcile: construct.ReconcileOptions{DispatchRate: 600, DescribeRate: 2.5, Budget: 50 * time.Second, Concurrency: 32},
	})
	tpl := a.template(t)
	for _, f := range longrunFunctions {
		_, props := tpl.function(t, "longrun-dev-"+f)
		env := envOf(props)
		want := map[string]any{}
		if f == "reconciler" {
			want = map[string]any{"LONGRUN_DISPATCH_RATE": "600", "LONGRUN_DESCRIBE_RATE": "2.5",
				"LONGRUN_RECONCILE_BUDGET": "50s", "LONGRUN_RECONCILE_CONCURRENCY": "32"}
		}
		got := map[string]any{}
		for _, k := range names {
			if v, ok := env[k]; ok {
				got[k] = v
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %v, want %v", f, got, want)
		}
	}
	team := team(t)
	_, reconciler := team.function(t, "longrun-prod-reconciler")
	for _, k := range names {
		if v, ok := envOf(reconciler)[k]; ok {
			t.Errorf("by default the reconciler has %s=%v", k, v)
		}
	}
	_, rule := team.only(t, "AWS::Events::Rule")
	if rule.Properties["ScheduleExpression"] != "rate(1 minute)" {
		t.Errorf("schedule %v", rule.Properties["ScheduleExpression"])
	}
}

// The recorder sends each step to its worker asynchronously and hears how it ended from the
// worker's destination (docs/lifecycle.md, "One Lambda slot per step"): every worker, the
// app's and the imported one, has an event invoke config whose destinations are the
// recorder, with no retries and the queue time sizing gives; the recorder lets the app's
// worker's role invoke it (Lambda invokes a destination as the worker's role), and may
// answer and beat its workflows' task tokens.
func TestWorkersHandTheirStepsBackToTheRecorder(t *testing.T) {
	tpl := team(t)
	recorder, recorderProps := tpl.function(t, "longrun-prod-recorder")
	configs := tpl.of("AWS::Lambda::EventInvokeConfig")
	seen := map[string]bool{}
	for id, c := range configs {
		p := c.Properties
		fn := cfntest.Render(p["FunctionName"])
		seen[fn] = true
		dest, _ := p["DestinationConfig"].(map[string]any)
		ok := func(k string) bool {
			d, _ := dest[k].(map[string]any)
			return d != nil && cfntest.Render(d["Destination"]) == "${"+recorder+".Arn}"
		}
		if p["Qualifier"] != "$LATEST" || p["MaximumRetryAttempts"] != float64(sizing.WorkerRetryAttempts) ||
			p["MaximumEventAgeInSeconds"] != sizing.WorkerMaxEventAge.Seconds() || !ok("OnSuccess") || !ok("OnFailure") {
			t.Errorf("%s: %v", id, p)
		}
	}
	if len(configs) != 2 || !seen["${"+tpl.provisioner+"}"] || !seen["team-mailer"] {
		t.Errorf("event invoke configs of %v; want the provisioner's and the mailer's", seen)
	}
	provisionerRole := ""
	for _, r := range tpl.of("AWS::Lambda::Function") {
		if strings.Contains(cfntest.Render(r.Properties["Role"]), "Provisioner") {
			provisionerRole = cfntest.Render(r.Properties["Role"])
		}
	}
	principals := []string{}
	for _, p := range tpl.of("AWS::Lambda::Permission") {
		if cfntest.Render(p.Properties["FunctionName"]) == "${"+recorder+".Arn}" && p.Properties["Action"] == "lambda:InvokeFunction" {
			principals = append(principals, cfntest.Render(p.Properties["Principal"]))
		}
	}
	if provisionerRole == "" || !slices.Contains(principals, provisionerRole) {
		t.Errorf("the recorder may be invoked by %v; want the provisioner's role %s among them", principals, provisionerRole)
	}
	var tokens []string
	for _, st := range tpl.roleStatements(roleOf(t, recorderProps, "Role")) {
		for _, a := range cfntest.Actions(st) {
			if strings.HasPrefix(a, "states:SendTask") {
				tokens = append(tokens, a)
			}
		}
	}
	sort.Strings(tokens)
	if !reflect.DeepEqual(tokens, []string{"states:SendTaskHeartbeat", "states:SendTaskSuccess"}) {
		t.Errorf("the recorder may %v on task tokens", tokens)
	}
}

// longrun's functions log their own lines only: Lambda's per-invocation START and REPORT
// lines (system logs at INFO) are left out, in the JSON format the patterns read
// (docs/cost.md, docs/observability.md).
func TestFunctionsLeaveOutLambdasInfoLines(t *testing.T) {
	tpl := team(t)
	for _, f := range longrunFunctions {
		_, props := tpl.function(t, "longrun-prod-"+f)
		cfg, _ := props["LoggingConfig"].(map[string]any)
		if cfg["LogFormat"] != "JSON" || cfg["SystemLogLevel"] != "WARN" {
			t.Errorf("%s: logging %v", f, cfg)
		}
	}
}
