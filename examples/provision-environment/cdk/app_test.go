package main

import (
	"archive/zip"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"
)

// placeholders writes what the app deploys, as empty stand-ins: longrun's zips and the two
// functions' folders.
func placeholders(t *testing.T) AppProps {
	t.Helper()
	dir := t.TempDir()
	code := filepath.Join(dir, "longrun")
	os.MkdirAll(code, 0o755)
	for _, name := range []string{"api", "dispatcher", "notifier", "recorder", "reconciler"} {
		f, err := os.Create(filepath.Join(code, name+".zip"))
		if err != nil {
			t.Fatal(err)
		}
		zw := zip.NewWriter(f)
		w, _ := zw.Create("bootstrap")
		w.Write([]byte("placeholder " + name))
		zw.Close()
		f.Close()
	}
	p := AppProps{Stage: "dev", TypesFile: "../longrun.types.yaml", LongrunCode: code, ProvisionerURL: "https://provisioner.example.test"}
	for _, d := range []*string{&p.WorkerCode, &p.SubscriberCode} {
		*d = t.TempDir()
		os.WriteFile(filepath.Join(*d, "bootstrap"), []byte("placeholder"), 0o755)
	}
	return p
}

type resource struct {
	Type       string
	Properties map[string]any
}

func synth(t *testing.T) map[string]resource {
	t.Helper()
	return synthWith(t, placeholders(t))
}

func synthWith(t *testing.T, p AppProps) map[string]resource {
	t.Helper()
	app := awscdk.NewApp(nil)
	NewStack(app, "ProvisionEnvironment", p)
	raw, _ := json.Marshal(app.Synth(nil).GetStackArtifact(jsii.String("ProvisionEnvironment")).Template())
	var tpl struct{ Resources map[string]resource }
	if err := json.Unmarshal(raw, &tpl); err != nil {
		t.Fatal(err)
	}
	return tpl.Resources
}

func of(res map[string]resource, typ string) map[string]resource {
	out := map[string]resource{}
	for id, r := range res {
		if r.Type == typ {
			out[id] = r
		}
	}
	return out
}

func TestTheAppDeploysTheTypeItsWorkerAndTheSubscriber(t *testing.T) {
	res := synth(t)
	var workerID string
	for id, f := range of(res, "AWS::Lambda::Function") {
		if f.Properties["FunctionName"] == "provision-dev-worker" {
			workerID = id
			if f.Properties["Timeout"] != 300.0 {
				t.Errorf("the worker's timeout %v, want the type's stepTimeout (300 s)", f.Properties["Timeout"])
			}
		}
	}
	if workerID == "" {
		t.Fatal("no worker function")
	}
	// One workflow for the provisioner, and its resume state machine (on which the work goes
	// on after a wait); longrun's recorder, which runs its steps, may invoke the worker.
	machines := of(res, "AWS::StepFunctions::StateMachine")
	if len(machines) != 2 {
		t.Fatalf("%d state machines", len(machines))
	}
	invokes := false
	for _, p := range of(res, "AWS::IAM::Policy") {
		b, _ := json.Marshal(p.Properties)
		invokes = invokes || (strings.Contains(string(b), "lambda:InvokeFunction") && strings.Contains(string(b), workerID))
	}
	if !invokes {
		t.Error("no policy lets longrun invoke the worker")
	}
	// The definitions reach longrun's functions.
	layers := of(res, "AWS::Lambda::LayerVersion")
	if len(layers) != 1 {
		t.Fatalf("%d layers, want the types layer", len(layers))
	}
	// The subscriber's rule: this type's outcomes, from longrun, on longrun's bus.
	rules := of(res, "AWS::Events::Rule")
	found := false
	for _, r := range rules {
		pattern, _ := json.Marshal(r.Properties["EventPattern"])
		if strings.Contains(string(pattern), `"provision.environment"`) {
			found = true
			if !strings.Contains(string(pattern), `"source":["longrun"]`) || !strings.Contains(string(pattern), `"detail-type":["Operation State Changed"]`) ||
				r.Properties["EventBusName"] == nil {
				t.Errorf("rule %s", pattern)
			}
		}
	}
	if !found {
		t.Fatal("no rule for provision.environment's events")
	}
}

// functionNamed finds the function named name: its logical id and properties.
func functionNamed(t *testing.T, res map[string]resource, name string) (string, map[string]any) {
	t.Helper()
	for id, f := range of(res, "AWS::Lambda::Function") {
		if f.Properties["FunctionName"] == name {
			return id, f.Properties
		}
	}
	t.Fatalf("no function %s", name)
	return "", nil
}

// With a catalog, the registrar, TypeScript on the Node.js runtime, is deployed beside the
// Go worker through the same construct: its type is served too (both files reach longrun's
// functions), it gets its own two workflows, and the recorder may invoke both workers.
// Without one (the test above), neither it nor its type is there.
func TestTheRegistrarRunsOnNodeJSBesideTheGoWorker(t *testing.T) {
	p := placeholders(t)
	p.CatalogURL = "https://catalog.example.test/"
	p.RegistrarTypesFile = "../registrar/registrar.types.yaml"
	p.RegistrarCode = t.TempDir() // what make registrar writes: worker.js, package.json, node_modules/
	for name, body := range map[string]string{"worker.js": "export const handler = async () => ({});\n", "package.json": `{"type":"module"}`} {
		if err := os.WriteFile(filepath.Join(p.RegistrarCode, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	res := synthWith(t, p)

	registrar, fn := functionNamed(t, res, "provision-dev-registrar")
	env, _ := fn["Environment"].(map[string]any)
	if fn["Runtime"] != "nodejs22.x" || fn["Handler"] != "worker.handler" || fn["Timeout"] != 30.0 ||
		!reflect.DeepEqual(env["Variables"], map[string]any{"CATALOG_URL": "https://catalog.example.test/"}) {
		t.Errorf("the registrar: runtime %v, handler %v, timeout %v, environment %v; want nodejs22.x, worker.handler, the type's 30 s and CATALOG_URL",
			fn["Runtime"], fn["Handler"], fn["Timeout"], env["Variables"])
	}
	provisioner, goFn := functionNamed(t, res, "provision-dev-worker")
	if goFn["Runtime"] != "provided.al2023" || goFn["Handler"] != "bootstrap" {
		t.Errorf("the Go worker: runtime %v, handler %v", goFn["Runtime"], goFn["Handler"])
	}

	var machines []string
	for _, m := range of(res, "AWS::StepFunctions::StateMachine") {
		machines = append(machines, m.Properties["StateMachineName"].(string))
	}
	sort.Strings(machines)
	if want := []string{"longrun-dev-provisioner", "longrun-dev-provisioner-resume", "longrun-dev-registrar", "longrun-dev-registrar-resume"}; !reflect.DeepEqual(machines, want) {
		t.Errorf("state machines %v, want %v", machines, want)
	}
	_, recorder := functionNamed(t, res, "longrun-dev-recorder")
	renv, _ := recorder["Environment"].(map[string]any)
	if files := renv["Variables"].(map[string]any)["LONGRUN_TYPES_FILE"]; files != "/opt/longrun.types.yaml,/opt/registrar.types.yaml" {
		t.Errorf("LONGRUN_TYPES_FILE %v, want both files", files)
	}
	role, _ := recorder["Role"].(map[string]any)["Fn::GetAtt"].([]any)
	var invokes string
	for _, pol := range of(res, "AWS::IAM::Policy") {
		if b, _ := json.Marshal(pol.Properties); strings.Contains(string(b), `"Ref":"`+role[0].(string)+`"`) {
			invokes += string(b)
		}
	}
	for _, id := range []string{registrar, provisioner} {
		if !strings.Contains(invokes, "lambda:InvokeFunction") || !strings.Contains(invokes, `"`+id+`","Arn"`) {
			t.Errorf("the recorder may not invoke %s", id)
		}
	}
}

// The registrar is the context's choice: catalogUrl deploys it, from the folders the example
// keeps it in unless the context names others.
func TestCatalogURLDeploysTheRegistrar(t *testing.T) {
	context := func(c map[string]interface{}) AppProps {
		return fromContext(awscdk.NewApp(&awscdk.AppProps{Context: &c}), "/team")
	}
	without := context(map[string]interface{}{"provisionerUrl": "https://provisioner.example.test"})
	if without.CatalogURL != "" {
		t.Errorf("no catalogUrl, yet CatalogURL %q", without.CatalogURL)
	}
	with := context(map[string]interface{}{"provisionerUrl": "https://provisioner.example.test", "catalogUrl": "https://catalog.example.test/"})
	if with.CatalogURL != "https://catalog.example.test/" || with.RegistrarTypesFile != "/team/registrar/registrar.types.yaml" ||
		with.RegistrarCode != "/team/.cache/lambda/registrar" {
		t.Errorf("%+v", with)
	}
}

func TestAMissingProvisionerURLStopsSynthesis(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(error).Error(), "provisionerUrl") {
			t.Fatalf("%v", r)
		}
	}()
	fromContext(awscdk.NewApp(nil), ".")
}
