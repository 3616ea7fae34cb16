package construct_test

import (
	"encoding/json"
	"os"
	"path"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/longrun-dev/longrun/internal/testkit/cfntest"
)

// The seal key is a secret of the stage's that only the functions that seal or check seals
// read: the recorder and the reconciler (docs/security.md, "What the recorder trusts"), the
// dispatcher (the input of an execution that wakes work waiting for a signal) and the api
// (a callback URL's token, "Callback URLs"), never the notifier; and the recorder knows
// each worker's function.
func TestTheSealKeyIsReadOnlyByWhoSeals(t *testing.T) {
	tpl := team(t)
	secretID, secret := tpl.only(t, "AWS::SecretsManager::Secret")
	if gen, _ := secret.Properties["GenerateSecretString"].(map[string]any); gen["PasswordLength"] != float64(64) || secret.Properties["Name"] != "longrun-prod-seal" {
		t.Fatalf("the secret: %v", secret.Properties)
	}
	readers := map[string]bool{}
	for _, fname := range []string{"api", "dispatcher", "notifier", "recorder", "reconciler"} {
		_, fn := tpl.function(t, "longrun-prod-"+fname)
		env := envOf(fn)
		role := roleOf(t, fn, "Role")
		for _, st := range tpl.roleStatements(role) {
			if slices.Contains(cfntest.Actions(st), "secretsmanager:GetSecretValue") {
				if got := cfntest.Render(st["Resource"]); got != "${"+secretID+"}" {
					t.Errorf("%s may read %s", fname, got)
				}
				readers[fname] = true
			}
		}
		if got, ok := env["LONGRUN_SEAL_SECRET"]; ok != (fname != "notifier") || ok && !reflect.DeepEqual(got, map[string]any{"Ref": secretID}) {
			t.Errorf("%s: LONGRUN_SEAL_SECRET %v", fname, got)
		}
	}
	if want := map[string]bool{"api": true, "dispatcher": true, "recorder": true, "reconciler": true}; !reflect.DeepEqual(readers, want) {
		t.Fatalf("the secret's readers: %v, want %v", readers, want)
	}
	_, recorder := tpl.function(t, "longrun-prod-recorder")
	workers := cfntest.Render(envOf(recorder)["LONGRUN_WORKERS"])
	for _, want := range []string{`"provisioner":"${` + tpl.provisioner + `.Arn}"`, `"mailer":"` + mailerArn + `"`} {
		if !strings.Contains(workers, want) {
			t.Errorf("LONGRUN_WORKERS = %s, want it to hold %s", workers, want)
		}
	}
}

// The deny statements an account owner applies (infra/policies/longrun-deny.json) cover
// every function, state machine, table and secret the construct names, so a new resource
// cannot slip out of them.
func TestTheDenyStatementsCoverLongrunsResources(t *testing.T) {
	raw, err := os.ReadFile("../infra/policies/longrun-deny.json")
	if err != nil {
		t.Fatal(err)
	}
	var policy struct {
		Version   string
		Statement []struct {
			Effect   string
			Action   []string
			Resource []string
		}
	}
	if err := json.Unmarshal(raw, &policy); err != nil || policy.Version != "2012-10-17" {
		t.Fatalf("not an IAM policy: %v", err)
	}
	covered := func(service, name string) bool {
		for _, st := range policy.Statement {
			if st.Effect != "Deny" {
				t.Fatalf("a statement that is not a Deny: %+v", st)
			}
			for _, r := range st.Resource {
				r = strings.NewReplacer("${Partition}", "aws", "${Region}", "eu-west-1", "${Account}", "123456789012", "${Stage}", "prod").Replace(r)
				if strings.Contains(r, "${") {
					t.Fatalf("an unknown placeholder in %s", r)
				}
				parts := strings.SplitN(r, ":", 6)
				if parts[2] != service {
					continue
				}
				if ok, _ := path.Match(parts[5], name); ok {
					return true
				}
			}
		}
		return false
	}
	tpl := team(t)
	check := func(typ, prop, service, prefix string, suffix ...string) {
		n := 0
		for _, r := range tpl.of(typ) {
			name, ok := r.Properties[prop].(string)
			if !ok || !strings.HasPrefix(name, "longrun-") {
				continue // the team's own functions
			}
			n++
			if !covered(service, prefix+name+strings.Join(suffix, "")) {
				t.Errorf("%s %s is not in the deny statements", typ, name)
			}
		}
		if n == 0 {
			t.Errorf("no %s of longrun's", typ)
		}
	}
	check("AWS::Lambda::Function", "FunctionName", "lambda", "function:")
	check("AWS::StepFunctions::StateMachine", "StateMachineName", "states", "stateMachine:")
	check("AWS::DynamoDB::Table", "TableName", "dynamodb", "table/")
	check("AWS::SecretsManager::Secret", "Name", "secretsmanager", "secret:", "-AbCdEf") // the ARN's random suffix
}
