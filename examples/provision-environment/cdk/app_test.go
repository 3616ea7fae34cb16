package main

import (
	"archive/zip"
	"encoding/json"
	"os"
	"path/filepath"
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
	app := awscdk.NewApp(nil)
	NewStack(app, "ProvisionEnvironment", placeholders(t))
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

func TestAMissingProvisionerURLStopsSynthesis(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(error).Error(), "provisionerUrl") {
			t.Fatalf("%v", r)
		}
	}()
	fromContext(awscdk.NewApp(nil), ".")
}
