package stack_test

import (
	"archive/zip"
	"debug/elf"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/longrun-dev/longrun/infra/stack"
	"github.com/longrun-dev/longrun/internal/aws/dynamo"
	"github.com/longrun-dev/longrun/internal/aws/eventsource"
	"github.com/longrun-dev/longrun/internal/aws/stepfunctions"
	"github.com/longrun-dev/longrun/internal/core/optype"
)

func TestMain(m *testing.M) {
	os.Setenv("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
	code := m.Run()
	jsii.Close()
	os.Exit(code)
}

type resource struct {
	Type       string
	Properties map[string]any
}

type template struct {
	Resources map[string]resource
	cdk       assertions.Template
}

// synthesize builds a stage's template once per test binary: synthesis runs CDK's
// JavaScript under Node and takes seconds.
var synthesize = func() func(t *testing.T, props stack.Props) *template {
	var mu sync.Mutex
	cache := map[string]*template{}
	return func(t *testing.T, props stack.Props) *template {
		t.Helper()
		mu.Lock()
		defer mu.Unlock()
		if props.Architecture == "" {
			props.Architecture = "arm64"
		}
		props.CodeDir = ""
		k, err := json.Marshal(props)
		if err != nil {
			t.Fatal(err)
		}
		key := string(k)
		if tpl, ok := cache[key]; ok {
			return tpl
		}
		props.CodeDir = placeholderCode(t)
		app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(t.TempDir())})
		s := stack.New(app, "longrun-"+props.Stage, &props)
		cdk := assertions.Template_FromStack(s, nil)
		raw, err := json.Marshal(cdk.ToJSON())
		if err != nil {
			t.Fatal(err)
		}
		tpl := &template{cdk: cdk}
		if err := json.Unmarshal(raw, tpl); err != nil {
			t.Fatal(err)
		}
		cache[key] = tpl
		return tpl
	}
}()

// placeholderCode writes a zip per function, so synthesis does not need `make build`.
func placeholderCode(t *testing.T) string {
	dir, err := os.MkdirTemp("", "longrun-code")
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir("../../functions")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		f, _ := os.Create(filepath.Join(dir, e.Name()+".zip"))
		zw := zip.NewWriter(f)
		w, _ := zw.Create("bootstrap")
		_, _ = w.Write([]byte(e.Name()))
		_ = zw.Close()
		_ = f.Close()
	}
	return dir
}

func (tpl *template) of(typ string) map[string]resource {
	out := map[string]resource{}
	for id, r := range tpl.Resources {
		if r.Type == typ {
			out[id] = r
		}
	}
	return out
}

// functionID finds the logical id of the function named longrun-<stage>-<name>.
func (tpl *template) functionID(t *testing.T, name string) string {
	t.Helper()
	for id, r := range tpl.of("AWS::Lambda::Function") {
		if r.Properties["FunctionName"] == "longrun-dev-"+name {
			return id
		}
	}
	t.Fatalf("no function %s", name)
	return ""
}

func dev(t *testing.T) *template { return synthesize(t, stack.Props{Stage: "dev"}) }

// longrunFunctions are longrun's own functions (the construct's); the others are workers.
var longrunFunctions = []string{"api", "dispatcher", "notifier", "reconciler", "recorder"}

// The stream mappings are exactly the local pollers' settings (internal/aws/eventsource).
func TestStreamMappingsMatchTheLocalPollers(t *testing.T) {
	tpl := dev(t)
	mappings := tpl.of("AWS::Lambda::EventSourceMapping")
	if len(mappings) != len(eventsource.Mappings()) {
		t.Fatalf("%d mappings, want %d", len(mappings), len(eventsource.Mappings()))
	}
	for _, m := range eventsource.Mappings() {
		fid := tpl.functionID(t, m.Function)
		var got map[string]any
		for _, r := range mappings {
			if ref, _ := r.Properties["FunctionName"].(map[string]any); ref["Ref"] == fid {
				got = r.Properties
			}
		}
		if got == nil {
			t.Fatalf("no mapping for %s", m.Function)
		}
		filters := got["FilterCriteria"].(map[string]any)["Filters"].([]any)
		var pattern, want any
		_ = json.Unmarshal([]byte(filters[0].(map[string]any)["Pattern"].(string)), &pattern)
		_ = json.Unmarshal([]byte(m.Filter), &want)
		if len(filters) != 1 || !reflect.DeepEqual(pattern, want) {
			t.Errorf("%s filter %v, want %v", m.Function, pattern, want)
		}
		if got["BatchSize"] != float64(m.BatchSize) || got["BisectBatchOnFunctionError"] != m.BisectOnError ||
			got["MaximumRetryAttempts"] != float64(m.MaxRetries) || got["StartingPosition"] != m.StartingPosition {
			t.Errorf("%s settings %v", m.Function, got)
		}
		if types, _ := got["FunctionResponseTypes"].([]any); m.ReportBatchItemFailures != (len(types) == 1 && types[0] == "ReportBatchItemFailures") {
			t.Errorf("%s partial batch failures: %v", m.Function, got["FunctionResponseTypes"])
		}
		if _, ok := got["DestinationConfig"].(map[string]any)["OnFailure"]; !ok {
			t.Errorf("%s has no on-failure destination", m.Function)
		}
	}
}

// dataActions are the actions that touch data; none may apply to every resource.
var dataPrefixes = []string{"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem",
	"dynamodb:Query", "dynamodb:Scan", "dynamodb:Batch", "sqs:SendMessage", "sqs:ReceiveMessage", "states:", "events:PutEvents", "lambda:InvokeFunction"}

func TestLeastPrivilege(t *testing.T) {
	for _, props := range []stack.Props{{Stage: "dev"}, {Stage: "prod"}, {Stage: "dev", Cognito: true}, {Stage: "dev", TableEncryption: "customer"}} {
		leastPrivilege(t, props)
	}
}

func leastPrivilege(t *testing.T, props stack.Props) {
	tpl := synthesize(t, props)
	perFunction := map[string][]string{}
	for id, p := range tpl.of("AWS::IAM::Policy") {
		doc := p.Properties["PolicyDocument"].(map[string]any)
		for _, st := range doc["Statement"].([]any) {
			stmt := st.(map[string]any)
			var actions []string
			switch a := stmt["Action"].(type) {
			case string:
				actions = []string{a}
			case []any:
				for _, x := range a {
					actions = append(actions, x.(string))
				}
			}
			wildResource := stmt["Resource"] == "*"
			for _, a := range actions {
				if strings.Contains(a, "*") {
					t.Errorf("%s %s: wildcard action %s", props.Stage, id, a)
				}
				for _, prefix := range dataPrefixes {
					if wildResource && strings.HasPrefix(a, prefix) {
						t.Errorf("%s %s: %s on every resource", props.Stage, id, a)
					}
				}
				if wildResource && strings.HasPrefix(a, "kms:") {
					t.Errorf("%s %s: %s on every key", props.Stage, id, a)
				}
				perFunction[id] = append(perFunction[id], a)
			}
		}
	}
	has := func(fn, action string) bool {
		for id, actions := range perFunction {
			if strings.HasPrefix(id, fn+"ServiceRole") {
				for _, a := range actions {
					if a == action {
						return true
					}
				}
			}
		}
		return false
	}
	for _, c := range []struct {
		fn, action string
		want       bool
	}{
		{"Api", "dynamodb:PutItem", true}, {"Api", "states:StartExecution", false}, {"Api", "dynamodb:Scan", false},
		// The reads beside the admission transaction: the key's record, the quota counters.
		{"Api", "dynamodb:GetItem", true}, {"Api", "dynamodb:BatchGetItem", true},
		// Workers never touch the table (docs/worker-protocol.md).
		{"WorkerExportOrders", "dynamodb:UpdateItem", false}, {"WorkerExportOrders", "dynamodb:DeleteItem", false},
		{"WorkerExportOrders", "dynamodb:GetItem", false}, {"WorkerExportOrders", "dynamodb:Query", false},
		{"WorkerExportOrders", "dynamodb:PutItem", false}, {"WorkerExportOrders", "lambda:InvokeFunction", false},
		{"Recorder", "dynamodb:PutItem", true}, {"Recorder", "dynamodb:DeleteItem", true},
		{"Notifier", "events:PutEvents", true}, {"Notifier", "dynamodb:PutItem", false},
		{"Dispatcher", "states:StartExecution", true}, {"Dispatcher", "sqs:SendMessage", true},
		{"Reconciler", "states:StopExecution", true}, {"Recorder", "states:StartExecution", false},
	} {
		if has(c.fn, c.action) != c.want {
			t.Errorf("%s: %s may %s: %v, want %v", props.Stage, c.fn, c.action, !c.want, c.want)
		}
	}
}

// fromContext reads Props as the app does, from CDK context values.
func fromContext(t *testing.T, values map[string]any) stack.Props {
	t.Helper()
	props, err := stack.FromContext(awscdk.NewApp(&awscdk.AppProps{Context: &values}))
	if err != nil {
		t.Fatal(err)
	}
	return *props
}

func TestFunctionsAreBuiltForLambda(t *testing.T) {
	entries, _ := os.ReadDir("../../functions")
	for _, tc := range []struct {
		context map[string]any
		want    string
	}{
		{map[string]any{}, "arm64"},
		{map[string]any{"architecture": "arm64"}, "arm64"},
		{map[string]any{"architecture": "x86_64"}, "x86_64"},
	} {
		tpl := synthesize(t, fromContext(t, tc.context))
		fns := tpl.of("AWS::Lambda::Function")
		if len(fns) != len(entries) {
			t.Fatalf("%d functions, %d in functions/", len(fns), len(entries))
		}
		for id, f := range fns {
			p := f.Properties
			if p["Runtime"] != "provided.al2023" || p["Handler"] != "bootstrap" || !reflect.DeepEqual(p["Architectures"], []any{tc.want}) {
				t.Errorf("context %v: %s: %v %v %v, want %s", tc.context, id, p["Runtime"], p["Handler"], p["Architectures"], tc.want)
			}
			env, _ := p["Environment"].(map[string]any)
			vars, _ := env["Variables"].(map[string]any)
			if strings.HasPrefix(p["FunctionName"].(string), "longrun-dev-worker-") {
				if vars != nil { // a worker knows nothing of longrun's table
					t.Errorf("%s: a worker with longrun's settings %v", id, vars)
				}
			} else if _, ok := vars["LONGRUN_TABLE"].(map[string]any); !ok {
				t.Errorf("%s: LONGRUN_TABLE must come from the table, not a literal: %v", id, vars["LONGRUN_TABLE"])
			}
			if p["LoggingConfig"] == nil || p["Timeout"] == nil || p["MemorySize"] == nil {
				t.Errorf("%s: logging, timeout and memory must be set", id)
			}
		}
		for id, lg := range tpl.of("AWS::Logs::LogGroup") {
			if lg.Properties["RetentionInDays"] == nil {
				t.Errorf("%s: no retention", id)
			}
		}
	}
}

// Anything but arm64 or x86_64 stops synthesis: a typo must not deploy the default.
func TestUnknownArchitectureIsAnError(t *testing.T) {
	for _, v := range []any{"amd64", "x86", "ARM64", 64} {
		values := map[string]any{"architecture": v}
		_, err := stack.FromContext(awscdk.NewApp(&awscdk.AppProps{Context: &values}))
		if err == nil || !strings.Contains(err.Error(), "want arm64 (the default) or x86_64") {
			t.Errorf("architecture=%v: %v", v, err)
		}
	}
	func() {
		defer func() {
			if r := recover(); r == nil {
				t.Error("New accepted architecture amd64")
			}
		}()
		stack.New(awscdk.NewApp(nil), "longrun-dev", &stack.Props{Stage: "dev", Architecture: "amd64"})
	}()
}

// elfZip writes <name>.zip holding a bootstrap that starts like an ELF binary for machine.
func elfZip(t *testing.T, dir, name string, machine elf.Machine) {
	t.Helper()
	h := make([]byte, 64)
	copy(h, elf.ELFMAG)
	h[elf.EI_CLASS], h[elf.EI_DATA], h[elf.EI_VERSION] = byte(elf.ELFCLASS64), byte(elf.ELFDATA2LSB), byte(elf.EV_CURRENT)
	binary.LittleEndian.PutUint16(h[16:], uint16(elf.ET_EXEC))
	binary.LittleEndian.PutUint16(h[18:], uint16(machine))
	f, err := os.Create(filepath.Join(dir, name+".zip"))
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	w, _ := zw.Create("bootstrap")
	_, _ = w.Write(h)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
}

// The app refuses zips of the other architecture (`make build ARCH=…` and the context disagree).
func TestCheckCodeMatchesTheArchitecture(t *testing.T) {
	arm, x86, mixed, none := t.TempDir(), t.TempDir(), t.TempDir(), t.TempDir()
	for _, fn := range []string{"api", "worker-demo-task"} {
		elfZip(t, arm, fn, elf.EM_AARCH64)
		elfZip(t, x86, fn, elf.EM_X86_64)
	}
	elfZip(t, mixed, "api", elf.EM_AARCH64)
	elfZip(t, mixed, "recorder", elf.EM_X86_64)
	for _, tc := range []struct {
		dir, arch, fails string
	}{
		{arm, "", ""},
		{arm, "arm64", ""},
		{x86, "x86_64", ""},
		{arm, "x86_64", "api.zip is built for arm64, the stack's architecture is x86_64: run `make build ARCH=amd64`"},
		{x86, "arm64", "api.zip is built for amd64, the stack's architecture is arm64: run `make build ARCH=arm64`"},
		{mixed, "arm64", "recorder.zip is built for amd64"},
		{placeholderCode(t), "arm64", "not a little-endian ELF executable"},
		{none, "arm64", "no function zips"},
		{arm, "amd64", "want arm64 (the default) or x86_64"},
	} {
		err := stack.CheckCode(tc.dir, tc.arch)
		if tc.fails == "" && err != nil || tc.fails != "" && (err == nil || !strings.Contains(err.Error(), tc.fails)) {
			t.Errorf("CheckCode(%s, %q) = %v, want %q", filepath.Base(tc.dir), tc.arch, err, tc.fails)
		}
	}
}

func TestTableMirrorsTheCodesDefinition(t *testing.T) {
	for _, stage := range []string{"dev", "prod"} {
		tpl := synthesize(t, stack.Props{Stage: stage})
		var table map[string]any
		for _, r := range tpl.of("AWS::DynamoDB::Table") {
			table = r.Properties
		}
		if table["BillingMode"] != "PAY_PER_REQUEST" || table["StreamSpecification"].(map[string]any)["StreamViewType"] != "NEW_AND_OLD_IMAGES" ||
			table["TimeToLiveSpecification"].(map[string]any)["AttributeName"] != "expires_at" ||
			table["PointInTimeRecoverySpecification"].(map[string]any)["PointInTimeRecoveryEnabled"] != true {
			t.Fatalf("%s table: %v", stage, table)
		}
		if protected, _ := table["DeletionProtectionEnabled"].(bool); protected != (stage != "dev") {
			t.Errorf("%s: deletion protection %v", stage, protected)
		}
		var got []string
		for _, g := range table["GlobalSecondaryIndexes"].([]any) {
			got = append(got, g.(map[string]any)["IndexName"].(string))
		}
		var want []string
		for _, g := range dynamo.TableSpec("x").GlobalSecondaryIndexes {
			want = append(want, *g.IndexName)
		}
		sort.Strings(got)
		sort.Strings(want)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("indexes %v, want %v", got, want)
		}
	}
}

func TestWorkflowsComeFromTheTemplate(t *testing.T) {
	tpl := dev(t)
	machines := tpl.of("AWS::StepFunctions::StateMachine")
	if len(machines) != 2 {
		t.Fatalf("%d state machines", len(machines))
	}
	for id, m := range machines {
		subs := m.Properties["DefinitionSubstitutions"].(map[string]any)
		if subs[stepfunctions.WorkerFunctionArn] == nil || subs[stepfunctions.RecorderFunctionArn] == nil {
			t.Errorf("%s: substitutions %v", id, subs)
		}
		if m.Properties["StateMachineType"] != "STANDARD" {
			t.Errorf("%s: type %v", id, m.Properties["StateMachineType"])
		}
	}
	// The definition is the template itself.
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("definition: %v", r)
		}
	}()
	tpl.cdk.HasResourceProperties(jsii.String("AWS::StepFunctions::StateMachine"), &map[string]any{
		"DefinitionString": stepfunctions.Template(),
	})
}

// Each worker's function may run as long as its types' stepTimeout, and no longer: the
// workflow gives each step that long (TimeoutSecondsPath, from the recorder's decision), and
// the function's own timeout ends the invocation at the same bound.
func TestWorkerTimeoutsAreTheTypesStepTimeouts(t *testing.T) {
	tpl := dev(t)
	for _, typ := range optype.Builtin().Types() {
		f := tpl.Resources[tpl.functionID(t, stepfunctions.FunctionName(typ.Worker))]
		if got := f.Properties["Timeout"]; got != typ.StepTimeout.Seconds() {
			t.Errorf("%s: timeout %v, want the type's stepTimeout %v", typ.Worker, got, typ.StepTimeout.Seconds())
		}
	}
	if !strings.Contains(stepfunctions.Template(), `"TimeoutSecondsPath": "$.gate.decision.stepTimeoutSeconds"`) {
		t.Error("the Work state must take its timeout from the recorder's decision")
	}
}

func TestAlarms(t *testing.T) {
	tpl := dev(t)
	metrics := map[string]int{}
	for _, a := range tpl.of("AWS::CloudWatch::Alarm") {
		metrics[a.Properties["MetricName"].(string)]++
	}
	fns := len(tpl.of("AWS::Lambda::Function"))
	if metrics["ApproximateNumberOfMessagesVisible"] != len(tpl.of("AWS::SQS::Queue")) || metrics["Errors"] != fns ||
		metrics["StuckOperationsRepaired"] != 1 || metrics["ExecutionsFailed"] != 2 {
		t.Fatalf("alarms by metric: %v", metrics)
	}
	var rules []string
	for _, r := range tpl.of("AWS::Events::Rule") {
		rules = append(rules, r.Properties["ScheduleExpression"].(string))
	}
	if !reflect.DeepEqual(rules, []string{"rate(1 minute)"}) {
		t.Fatalf("reconciler schedule: %v", rules)
	}
}

// API Gateway's own errors speak the contract's problem+json, without its request id.
func TestGatewayResponsesAreProblems(t *testing.T) {
	tpl := dev(t)
	for id, g := range tpl.of("AWS::ApiGateway::GatewayResponse") {
		p := g.Properties
		body := p["ResponseTemplates"].(map[string]any)["application/json"].(string)
		if p["ResponseParameters"].(map[string]any)["gatewayresponse.header.Content-Type"] != "'application/problem+json'" ||
			!strings.Contains(body, `"code":`) || strings.Contains(body, "$context.requestId") {
			t.Errorf("%s: %v", id, p)
		}
	}
}

// A stage deployed before the stack was made of the construct keeps its resources: the
// construct sits at stack.ConstructID ("Default", which CDK leaves out of logical ids), so
// the stateful resources keep their logical ids and are updated, not replaced (a new table
// would fail on its fixed name, and RETAIN would orphan the old one).
func TestDeployedStagesKeepTheirLogicalIDs(t *testing.T) {
	tpl := synthesize(t, fromContext(t, map[string]any{"authorizer": "cognito", "tableEncryption": "customer"}))
	for id, typ := range map[string]string{
		"TableCD117FA1": "AWS::DynamoDB::Table", "TableKeyF581D96F": "AWS::KMS::Key", "UserPool6BA7E5F2": "AWS::Cognito::UserPool",
		"BusEA82B648": "AWS::Events::EventBus", "RestApi0C43BF4B": "AWS::ApiGateway::RestApi",
		"DispatcherDeadLetters0F711854": "AWS::SQS::Queue", "NotifierDeadLettersB15D036B": "AWS::SQS::Queue",
		"ExportOrdersWorkflowE51F66C8": "AWS::StepFunctions::StateMachine", "DemoTaskWorkflowB564D5BD": "AWS::StepFunctions::StateMachine",
		"ApiF70053CD": "AWS::Lambda::Function", "RecorderC4C6639E": "AWS::Lambda::Function", "WorkerExportOrders2DF38994": "AWS::Lambda::Function",
		"ApiLogs3D05D88B": "AWS::Logs::LogGroup", "ApiAccessLogsE9DF007D": "AWS::Logs::LogGroup", "WorkerExportOrdersLogsA0E625DD": "AWS::Logs::LogGroup",
	} {
		if got := tpl.Resources[id].Type; got != typ {
			t.Errorf("%s is %q, want the %s deployed stages have", id, got, typ)
		}
	}
	if stack.ConstructID != "Default" {
		t.Errorf("ConstructID %q", stack.ConstructID)
	}
}

// The stage serves the built-in types: no types layer, no LONGRUN_TYPES_FILE.
func TestBuiltinTypesNeedNoFile(t *testing.T) {
	tpl := dev(t)
	if n := len(tpl.of("AWS::Lambda::LayerVersion")); n != 0 {
		t.Errorf("%d layers", n)
	}
	for id, f := range tpl.of("AWS::Lambda::Function") {
		if env, _ := f.Properties["Environment"].(map[string]any); env != nil {
			if v, ok := env["Variables"].(map[string]any)["LONGRUN_TYPES_FILE"]; ok {
				t.Errorf("%s: LONGRUN_TYPES_FILE=%v", id, v)
			}
		}
		if f.Properties["Layers"] != nil {
			t.Errorf("%s: layers %v", id, f.Properties["Layers"])
		}
	}
}
