package stack_test

import (
	"archive/zip"
	"debug/elf"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/longrun-dev/longrun/infra/stack"
	"github.com/longrun-dev/longrun/internal/aws/dynamo"
	"github.com/longrun-dev/longrun/internal/aws/eventsource"
	"github.com/longrun-dev/longrun/internal/aws/sizing"
	"github.com/longrun-dev/longrun/internal/aws/stepfunctions"
	"github.com/longrun-dev/longrun/internal/core/optype"
	"github.com/longrun-dev/longrun/internal/testkit/cfntest"
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
	DependsOn  any `json:",omitempty"`
}

type template struct {
	Resources map[string]resource
	Outputs   map[string]struct{ Value any }
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
				// The recorder answers and beats its workflows' task tokens (a parked Run):
				// a service integration's token belongs to no resource IAM can name.
				token := (a == "states:SendTaskSuccess" || a == "states:SendTaskHeartbeat") && strings.HasPrefix(id, "Recorder")
				for _, prefix := range dataPrefixes {
					if wildResource && strings.HasPrefix(a, prefix) && !token {
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
		// Reading an operation is a GetItem of its projection (and of its accepted fact).
		{"Recorder", "dynamodb:GetItem", true}, {"Dispatcher", "dynamodb:GetItem", true}, {"Reconciler", "dynamodb:GetItem", true},
		{"Notifier", "dynamodb:GetItem", false},
		{"Notifier", "events:PutEvents", true}, {"Notifier", "dynamodb:PutItem", false},
		{"Dispatcher", "states:StartExecution", true}, {"Dispatcher", "sqs:SendMessage", true},
		// The recorder starts an operation's next execution after a wait or a Run out of room.
		{"Reconciler", "states:StopExecution", true}, {"Recorder", "states:StartExecution", true},
		{"Recorder", "states:StopExecution", false}, {"Api", "states:DescribeExecution", false},
		// The recorder runs the steps: it invokes the workers, and nobody else does.
		{"Recorder", "lambda:InvokeFunction", true}, {"Api", "lambda:InvokeFunction", false},
		{"Dispatcher", "lambda:InvokeFunction", false}, {"Reconciler", "lambda:InvokeFunction", false},
		{"Notifier", "lambda:InvokeFunction", false}, {"WorkerDemoTask", "lambda:InvokeFunction", false},
		// The seal key: the api checks callback URLs' tokens with it; the notifier and the
		// workers never read it.
		{"Api", "secretsmanager:GetSecretValue", true}, {"Recorder", "secretsmanager:GetSecretValue", true},
		{"Notifier", "secretsmanager:GetSecretValue", false}, {"WorkerExportOrders", "secretsmanager:GetSecretValue", false},
	} {
		if has(c.fn, c.action) != c.want {
			t.Errorf("%s: %s may %s: %v, want %v", props.Stage, c.fn, c.action, !c.want, c.want)
		}
	}
	invokers(t, tpl, props)
}

// invokers holds who may invoke what: each state machine role exactly the recorder (and its
// versions), the recorder exactly the stage's workers, nobody else any function.
func invokers(t *testing.T, tpl *template, props stack.Props) {
	t.Helper()
	var recorder string
	var workers []string
	for id, r := range tpl.of("AWS::Lambda::Function") {
		switch name := r.Properties["FunctionName"]; {
		case name == "longrun-"+props.Stage+"-recorder":
			recorder = id
		case strings.HasPrefix(name.(string), "longrun-"+props.Stage+"-worker-"):
			workers = append(workers, "${"+id+".Arn}", "${"+id+".Arn}:*")
		}
	}
	sort.Strings(workers)
	machineRoles := map[string]bool{}
	for _, sm := range tpl.of("AWS::StepFunctions::StateMachine") {
		machineRoles[sm.Properties["RoleArn"].(map[string]any)["Fn::GetAtt"].([]any)[0].(string)] = true
	}
	// Two state machines per worker (its own and its resume state machine), each its own role.
	if len(machineRoles) != len(tpl.of("AWS::StepFunctions::StateMachine")) || len(workers) != len(machineRoles) {
		t.Fatalf("%s: machine roles %v, workers %v", props.Stage, machineRoles, workers)
	}
	invokes := map[string][]string{} // role → resources
	for _, p := range tpl.of("AWS::IAM::Policy") {
		for _, role := range p.Properties["Roles"].([]any) {
			r := role.(map[string]any)["Ref"].(string)
			for _, st := range p.Properties["PolicyDocument"].(map[string]any)["Statement"].([]any) {
				st := st.(map[string]any)
				if slices.Contains(cfntest.Actions(st), "lambda:InvokeFunction") {
					invokes[r] = append(invokes[r], cfntest.Resources(st)...)
				}
			}
		}
	}
	recorderRole := tpl.Resources[recorder].Properties["Role"].(map[string]any)["Fn::GetAtt"].([]any)[0].(string)
	for role, got := range invokes {
		sort.Strings(got)
		var want []string
		switch {
		case role == recorderRole:
			want = workers
		case machineRoles[role]:
			want = []string{"${" + recorder + ".Arn}", "${" + recorder + ".Arn}:*"}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: role %s may invoke %v, want %v", props.Stage, role, got, want)
		}
	}
	if len(invokes) != len(machineRoles)+1 {
		t.Errorf("%s: roles that may invoke functions: %v", props.Stage, invokes)
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
	if len(machines) != 4 { // each worker's, and its resume state machine
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
	tpl.cdk.HasResourceProperties(jsii.String("AWS::StepFunctions::StateMachine"), &map[string]any{
		"DefinitionString": stepfunctions.ResumeTemplate(),
	})
}

// Each worker's function may run as long as its types' stepTimeout, and no longer: the
// recorder gives each step that long, and the function's own timeout ends the invocation at
// the same bound. The recorder waits for the step within its own invocation, so its timeout
// is the longest step plus a minute (sizing.RecorderTimeout); its memory is sizing's, with
// room for the collector.
func TestWorkerTimeoutsAreTheTypesStepTimeouts(t *testing.T) {
	tpl := dev(t)
	var longest time.Duration
	for _, typ := range optype.Builtin().Types() {
		f := tpl.Resources[tpl.functionID(t, stepfunctions.FunctionName(typ.Worker))]
		if got := f.Properties["Timeout"]; got != typ.StepTimeout.Seconds() {
			t.Errorf("%s: timeout %v, want the type's stepTimeout %v", typ.Worker, got, typ.StepTimeout.Seconds())
		}
		if f.Properties["MemorySize"] != float64(sizing.DemoWorkerMemoryMB) {
			t.Errorf("%s: memory %v", typ.Worker, f.Properties["MemorySize"])
		}
		longest = max(longest, typ.StepTimeout)
	}
	recorder := tpl.Resources[tpl.functionID(t, "recorder")].Properties
	if want := sizing.RecorderTimeout(longest).Seconds(); recorder["Timeout"] != want || want != longest.Seconds()+60 {
		t.Errorf("recorder timeout %v, want %vs (the longest step %s and a minute)", recorder["Timeout"], want, longest)
	}
	if recorder["MemorySize"] != float64(sizing.Functions()[sizing.Recorder].WithCollector().MemoryMB) { // dev traces
		t.Errorf("recorder memory %v", recorder["MemorySize"])
	}
}

func TestAlarms(t *testing.T) {
	tpl := dev(t)
	metrics := map[string]int{}
	for _, a := range tpl.of("AWS::CloudWatch::Alarm") {
		name, ok := a.Properties["MetricName"].(string)
		if !ok { // metric math: the metrics it reads
			for _, q := range a.Properties["Metrics"].([]any) {
				if stat, ok := q.(map[string]any)["MetricStat"].(map[string]any); ok {
					name += "+" + stat["Metric"].(map[string]any)["MetricName"].(string)
				}
			}
		}
		metrics[name]++
	}
	fns := len(tpl.of("AWS::Lambda::Function"))
	types := len(optype.Deployed(optype.WithDemo).Types()) // dev serves the demo types
	if metrics["ApproximateNumberOfMessagesVisible"] != len(tpl.of("AWS::SQS::Queue")) || metrics["Errors"] != fns ||
		// every state machine's failed executions: each worker's and its resume state machine's
		metrics["StuckOperationsRepaired"] != 1 || metrics["ExecutionsFailed"] != len(tpl.of("AWS::StepFunctions::StateMachine")) ||
		metrics["+5XXError+Count"] != 1 || metrics["+TransactionConflicts+TransactionConflicts+TransactionConflicts+TransactionConflicts+TransactionConflicts"] != 1 ||
		metrics["DispatchLag"] != types || metrics["+OutcomeUnknown+OutcomeUnknown"] != types {
		t.Fatalf("alarms by metric: %v", metrics)
	}
	if n := len(tpl.of("AWS::CloudWatch::Dashboard")); n != 1 {
		t.Errorf("%d dashboards", n)
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
		// Longrun's functions have the collector's layer (tracing), the workers none.
		layers, _ := f.Properties["Layers"].([]any)
		if want := map[bool]int{true: 0, false: 1}[strings.HasPrefix(f.Properties["FunctionName"].(string), "longrun-dev-worker-")]; len(layers) != want ||
			want == 1 && !strings.Contains(cfntest.Render(layers[0]), ":layer:aws-otel-collector-arm64-") {
			t.Errorf("%s: layers %v", id, f.Properties["Layers"])
		}
	}
}

// A stage is traced unless the context says tracing=false: longrun's functions actively,
// with the collector layer (or the context's) and LONGRUN_TRACING=otlp; the workflows and
// the API stage. The built-in workers are not (they are workers as a team's would be).
func TestTracingFromContext(t *testing.T) {
	const custom = "arn:aws:lambda:us-east-1:123456789012:layer:collector:3"
	for _, tc := range []struct {
		context map[string]any
		on      bool
		layer   string
	}{
		{map[string]any{}, true, ":901920570463:layer:aws-otel-collector-arm64-ver-"},
		{map[string]any{"collectorLayerArn": custom}, true, custom},
		{map[string]any{"tracing": "false"}, false, ""},
	} {
		tpl := synthesize(t, fromContext(t, tc.context))
		for id, f := range tpl.of("AWS::Lambda::Function") {
			p := f.Properties
			env, _ := p["Environment"].(map[string]any)
			vars, _ := env["Variables"].(map[string]any)
			mode, _ := p["TracingConfig"].(map[string]any)
			if strings.HasPrefix(p["FunctionName"].(string), "longrun-dev-worker-") {
				if mode != nil {
					t.Errorf("%v: %s traced %v", tc.context, id, mode)
				}
				continue
			}
			layers, _ := p["Layers"].([]any)
			want := map[bool]string{true: "otlp", false: "off"}[tc.on]
			if vars["LONGRUN_TRACING"] != want || (mode["Mode"] == "Active") != tc.on ||
				tc.on && (len(layers) != 1 || !strings.Contains(cfntest.Render(layers[0]), tc.layer)) || !tc.on && len(layers) != 0 {
				t.Errorf("%v: %s: LONGRUN_TRACING=%v, mode %v, layers %v", tc.context, id, vars["LONGRUN_TRACING"], mode, layers)
			}
		}
		for id, sm := range tpl.of("AWS::StepFunctions::StateMachine") {
			if got, _ := sm.Properties["TracingConfiguration"].(map[string]any); (got["Enabled"] == true) != tc.on {
				t.Errorf("%v: %s tracing %v", tc.context, id, got)
			}
		}
		for id, st := range tpl.of("AWS::ApiGateway::Stage") {
			if (st.Properties["TracingEnabled"] == true) != tc.on {
				t.Errorf("%v: %s tracing %v", tc.context, id, st.Properties["TracingEnabled"])
			}
		}
	}
}

// CloudFormation refuses a stack whose resources depend on each other in a circle, and only
// at deployment. The workflows refer to the recorder, and the recorder starts the workflows'
// executions: it must name them without a reference back (ARNs formatted from their names).
// With Cognito, the api function names the console's app client, whose callback URL names
// the API: by its id, never by its stage, which waits for the methods, which name the
// function.
func TestNoCircularDependencies(t *testing.T) {
	for _, props := range []stack.Props{{Stage: "dev"}, {Stage: "dev", Cognito: true}} {
		t.Run("cognito="+strconv.FormatBool(props.Cognito), func(t *testing.T) { noCircularDependencies(t, synthesize(t, props)) })
	}
}

func noCircularDependencies(t *testing.T, tpl *template) {
	raw, err := json.Marshal(tpl.Resources)
	if err != nil {
		t.Fatal(err)
	}
	var resources map[string]map[string]any
	if err := json.Unmarshal(raw, &resources); err != nil {
		t.Fatal(err)
	}
	deps := map[string]map[string]bool{}
	var walk func(from string, v any)
	walk = func(from string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				switch s, _ := x.(string); {
				case k == "Ref" && s != "":
					deps[from][s] = true
				case k == "Fn::GetAtt":
					if a, ok := x.([]any); ok && len(a) > 0 {
						deps[from][a[0].(string)] = true
					}
				case k == "Fn::Sub" && s != "":
					for _, m := range regexp.MustCompile(`\$\{([A-Za-z0-9]+)[.}]`).FindAllStringSubmatch(s, -1) {
						deps[from][m[1]] = true
					}
				}
				walk(from, x)
			}
		case []any:
			for _, x := range v {
				walk(from, x)
			}
		}
	}
	for id, r := range resources {
		deps[id] = map[string]bool{}
		walk(id, r["Properties"])
		switch d := r["DependsOn"].(type) {
		case string:
			deps[id][d] = true
		case []any:
			for _, x := range d {
				deps[id][x.(string)] = true
			}
		}
	}
	state := map[string]int{} // 1 visiting, 2 done
	var visit func(id string, path []string)
	visit = func(id string, path []string) {
		if _, ok := resources[id]; !ok || state[id] == 2 {
			return
		}
		if state[id] == 1 {
			t.Fatalf("a circular dependency: %v", append(path, id))
		}
		state[id] = 1
		for d := range deps[id] {
			visit(d, append(path, id))
		}
		state[id] = 2
	}
	for id := range resources {
		visit(id, nil)
	}
	if len(resources) < 20 {
		t.Fatalf("only %d resources read", len(resources))
	}
}
