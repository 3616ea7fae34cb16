package construct_test

import (
	"archive/zip"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/jsii-runtime-go"

	"github.com/longrun-dev/longrun/construct"
)

func TestMain(m *testing.M) {
	os.Setenv("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
	code := m.Run()
	jsii.Close()
	for _, dir := range cleanup {
		os.RemoveAll(dir)
	}
	os.Exit(code)
}

// cleanup are directories tests share, removed after them.
var cleanup []string

// mailerArn is the team's mailer, a function the app does not define.
const mailerArn = "arn:aws:lambda:us-east-1:123456789012:function:team-mailer"

// longrunFunctions are longrun's own functions (Longrun.Functions), by name.
var longrunFunctions = []string{"api", "dispatcher", "notifier", "reconciler", "recorder"}

// codeDir writes a placeholder zip per longrun function, as cmd/release would name them.
var codeDir = sync.OnceValue(func() string {
	dir, err := os.MkdirTemp("", "longrun-construct-code")
	if err != nil {
		panic(err)
	}
	cleanup = append(cleanup, dir)
	for _, name := range longrunFunctions {
		f, err := os.Create(filepath.Join(dir, name+".zip"))
		if err != nil {
			panic(err)
		}
		zw := zip.NewWriter(f)
		w, _ := zw.Create("bootstrap")
		_, _ = w.Write([]byte(name))
		_ = zw.Close()
		_ = f.Close()
	}
	return dir
})

type resource struct {
	Type       string
	Properties map[string]any
	Metadata   map[string]any
}

type template struct {
	Resources map[string]resource
	Outputs   map[string]struct{ Value any }
	outdir    string
}

// app is a team's CDK app: one stack, its workers, and props to complete.
type app struct {
	cdk   awscdk.App
	stack awscdk.Stack
	dir   string
}

func newApp(t *testing.T) *app {
	t.Helper()
	return newAppIn(t.TempDir())
}

// newAppIn is an app synthesizing into dir.
func newAppIn(dir string) *app {
	a := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(dir)})
	return &app{cdk: a, stack: awscdk.NewStack(a, jsii.String("Team"), nil), dir: dir}
}

// pythonWorker is a worker the app defines, with the given timeout (none when 0).
func (a *app) pythonWorker(id string, timeout time.Duration) awslambda.Function {
	props := &awslambda.FunctionProps{
		Runtime: awslambda.Runtime_PYTHON_3_12(),
		Handler: jsii.String("index.handler"),
		Code:    awslambda.Code_FromInline(jsii.String("def handler(event, context):\n    return {'status': 'succeeded'}\n")),
	}
	if timeout > 0 {
		props.Timeout = awscdk.Duration_Seconds(jsii.Number(timeout.Seconds()))
	}
	return awslambda.NewFunction(a.stack, jsii.String(id), props)
}

func (a *app) template(t *testing.T) *template {
	t.Helper()
	raw, err := json.Marshal(assertions.Template_FromStack(a.stack, nil).ToJSON())
	if err != nil {
		t.Fatal(err)
	}
	tpl := &template{outdir: a.dir}
	if err := json.Unmarshal(raw, tpl); err != nil {
		t.Fatal(err)
	}
	return tpl
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

func (tpl *template) only(t *testing.T, typ string) (string, resource) {
	t.Helper()
	rs := tpl.of(typ)
	if len(rs) != 1 {
		t.Fatalf("%d %s, want 1", len(rs), typ)
	}
	for id, r := range rs {
		return id, r
	}
	panic("unreachable")
}

// function finds the function named fname, its logical id and properties.
func (tpl *template) function(t *testing.T, fname string) (string, map[string]any) {
	t.Helper()
	for id, r := range tpl.of("AWS::Lambda::Function") {
		if r.Properties["FunctionName"] == fname {
			return id, r.Properties
		}
	}
	t.Fatalf("no function %s", fname)
	return "", nil
}

func envOf(fn map[string]any) map[string]any {
	env, _ := fn["Environment"].(map[string]any)
	vars, _ := env["Variables"].(map[string]any)
	return vars
}

// resourcePath is the path of the API Gateway resource a method's ResourceId refers to
// ("/" for the root).
func (tpl *template) resourcePath(t *testing.T, ref any) string {
	t.Helper()
	m, _ := ref.(map[string]any)
	if att, ok := m["Fn::GetAtt"].([]any); ok && len(att) == 2 && att[1] == "RootResourceId" {
		return "/"
	}
	r, ok := tpl.Resources[fmt.Sprint(m["Ref"])]
	if !ok || r.Type != "AWS::ApiGateway::Resource" {
		t.Fatalf("not a resource of the API: %v", ref)
	}
	parent := tpl.resourcePath(t, r.Properties["ParentId"])
	if parent == "/" {
		parent = ""
	}
	return parent + "/" + fmt.Sprint(r.Properties["PathPart"])
}

// machine finds the state machine named name.
func (tpl *template) machine(t *testing.T, name string) (string, resource) {
	t.Helper()
	for id, r := range tpl.of("AWS::StepFunctions::StateMachine") {
		if r.Properties["StateMachineName"] == name {
			return id, r
		}
	}
	t.Fatalf("no state machine %s", name)
	return "", resource{}
}

// roleStatements are the statements of every policy attached to the role roleID.
func (tpl *template) roleStatements(roleID string) []map[string]any {
	var out []map[string]any
	for _, p := range tpl.of("AWS::IAM::Policy") {
		roles, _ := p.Properties["Roles"].([]any)
		if !slices.ContainsFunc(roles, func(r any) bool { return reflect.DeepEqual(r, map[string]any{"Ref": roleID}) }) {
			continue
		}
		for _, st := range p.Properties["PolicyDocument"].(map[string]any)["Statement"].([]any) {
			out = append(out, st.(map[string]any))
		}
	}
	return out
}

// roleOf is the logical id of a function's or state machine's role (RoleArn: GetAtt Arn).
func roleOf(t *testing.T, props map[string]any, key string) string {
	t.Helper()
	att, _ := props[key].(map[string]any)["Fn::GetAtt"].([]any)
	if len(att) != 2 || att[1] != "Arn" {
		t.Fatalf("%s is not a role of the template: %v", key, props[key])
	}
	return att[0].(string)
}

// mustPanic runs f and returns what it panicked with ("" when it did not).
func mustPanic(t *testing.T, f func()) (msg string) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			msg = fmt.Sprint(r)
		}
	}()
	f()
	return ""
}

// teamApp is the two-type app: the provisioner defined in the app (its timeout the
// provisioner's 5m step), the mailer imported by ARN; and the outputs a team would add.
type teamApp struct {
	*template
	lr          *construct.Longrun
	provisioner string // the provisioner function's logical id
}

var team = func() func(t *testing.T) teamApp {
	var once sync.Once
	var out teamApp
	return func(t *testing.T) teamApp {
		t.Helper()
		once.Do(func() {
			// Shared by tests: its assembly outlives the first one (TestMain removes it).
			dir, err := os.MkdirTemp("", "longrun-construct-team")
			if err != nil {
				t.Fatal(err)
			}
			cleanup = append(cleanup, dir)
			a := newAppIn(dir)
			provisioner := a.pythonWorker("Provisioner", 5*time.Minute)
			lr := construct.New(a.stack, "Longrun", &construct.Props{
				Stage:      "prod",
				TypesFiles: []string{"testdata/team.types.yaml"},
				CodeDir:    codeDir(),
				Workers: map[string]awslambda.IFunction{
					"provisioner": provisioner,
					"mailer":      awslambda.Function_FromFunctionArn(a.stack, jsii.String("Mailer"), jsii.String(mailerArn)),
				},
			})
			// A caller of the team's, allowed to call the API (IAM authorization).
			lr.GrantCall(awsiam.NewRole(a.stack, jsii.String("Caller"), &awsiam.RoleProps{AssumedBy: awsiam.NewAccountRootPrincipal()}))
			for id, v := range map[string]*string{
				"ApiUrl": lr.APIURL, "Table": lr.Table.TableName(), "Bus": lr.Bus.EventBusName(),
				"Provisioner": lr.StateMachines["provisioner"].StateMachineArn(), "Mailer": lr.StateMachines["mailer"].StateMachineArn(),
			} {
				awscdk.NewCfnOutput(a.stack, jsii.String(id+"Output"), &awscdk.CfnOutputProps{Value: v})
			}
			tpl := a.template(t)
			out = teamApp{template: tpl, lr: lr}
			for fid, r := range tpl.of("AWS::Lambda::Function") {
				if r.Properties["Runtime"] == "python3.12" {
					out.provisioner = fid
				}
			}
		})
		if out.template == nil {
			t.Fatal("the team's app did not synthesize")
		}
		return out
	}
}()
