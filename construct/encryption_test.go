package construct_test

import (
	"reflect"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/jsii-runtime-go"

	"github.com/longrun-dev/longrun/construct"
	"github.com/longrun-dev/longrun/internal/testkit/cfntest"
)

// Issue #20, item 7: Step Functions keeps every execution's history, which holds operation
// ids, the workers' handed-on state and, when a step's end could not be recorded, its
// report, for 90 days. With a customer managed key for the table, that history (and the
// definitions) is encrypted with the same key, not only with the AWS owned one: operation
// data is under one key wherever longrun keeps it. Each workflow's role may use the key for
// its own executions only, and each function that starts or looks at executions for the
// workflows it calls only; the API and the notifier, which call no workflow, get no such use.
// Without a customer managed key the workflows keep Step Functions' default.
func TestExecutionHistoryUsesTheTablesKey(t *testing.T) {
	const existing = "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
	for _, tc := range []struct {
		name string
		key  string // "" AWS owned, "created" or the ARN
	}{{"AWS owned", ""}, {"created", "created"}, {"existing", existing}} {
		t.Run(tc.name, func(t *testing.T) {
			a := newApp(t)
			props := &construct.Props{Stage: "dev", CodeDir: codeDir(), Tracing: construct.TracingOptions{Disabled: true},
				Workers: map[string]awslambda.IFunction{"export-orders": a.pythonWorker("ExportOrders", time.Minute)}}
			switch tc.key {
			case "created":
				props.TableEncryption = construct.TableEncryptionCustomerManaged
			case existing:
				props.TableKey = awskms.Key_FromKeyArn(a.stack, jsii.String("TeamKey"), jsii.String(existing))
			}
			construct.New(a.stack, "Longrun", props)
			tpl := a.template(t)
			var keyRef any = existing
			if tc.key == "created" {
				id, _ := tpl.only(t, "AWS::KMS::Key")
				keyRef = map[string]any{"Fn::GetAtt": []any{id, "Arn"}}
			}
			machines := tpl.of("AWS::StepFunctions::StateMachine")
			if len(machines) != 2 {
				t.Fatalf("%d state machines, want a workflow and its resume state machine", len(machines))
			}
			machineArn := func(name string) string {
				return "arn:${AWS::Partition}:states:${AWS::Region}:${AWS::AccountId}:stateMachine:" + name
			}
			for _, sm := range machines {
				enc, _ := sm.Properties["EncryptionConfiguration"].(map[string]any)
				if tc.key == "" {
					if enc != nil && enc["Type"] != "AWS_OWNED_KEY" {
						t.Errorf("%v: encryption %v, want Step Functions' default", sm.Properties["StateMachineName"], enc)
					}
					continue
				}
				if enc["Type"] != "CUSTOMER_MANAGED_KMS_KEY" || !reflect.DeepEqual(enc["KmsKeyId"], keyRef) {
					t.Errorf("%v: encryption %v, want the table's key %v", sm.Properties["StateMachineName"], enc, keyRef)
				}
				var uses []string
				for _, st := range tpl.roleStatements(roleOf(t, sm.Properties, "RoleArn")) {
					if acts := cfntest.Actions(st); slices.ContainsFunc(acts, func(a string) bool { return len(a) > 4 && a[:4] == "kms:" }) {
						if !reflect.DeepEqual(st["Resource"], keyRef) {
							t.Errorf("%v may %v on %v", sm.Properties["StateMachineName"], acts, st["Resource"])
						}
						cond, _ := st["Condition"].(map[string]any)
						eq, _ := cond["StringEquals"].(map[string]any)
						uses = append(uses, cfntest.Render(eq["kms:EncryptionContext:aws:states:stateMachineArn"]))
					}
				}
				want := machineArn(sm.Properties["StateMachineName"].(string))
				if !reflect.DeepEqual(uses, []string{want}) {
					t.Errorf("%v's role uses the key %v, want for its own executions only: %s", sm.Properties["StateMachineName"], uses, want)
				}
			}
			for fn, calls := range map[string][]string{
				"dispatcher": {"longrun-dev-export-orders"},
				"reconciler": {"longrun-dev-export-orders", "longrun-dev-export-orders-resume"},
				"recorder":   {"longrun-dev-export-orders", "longrun-dev-export-orders-resume"},
				"api":        nil,
				"notifier":   nil,
			} {
				_, props := tpl.function(t, "longrun-dev-"+fn)
				var got []string
				for _, st := range tpl.roleStatements(roleOf(t, props, "Role")) {
					cond, _ := st["Condition"].(map[string]any)
					eq, _ := cond["StringEquals"].(map[string]any)
					arns, ok := eq["kms:EncryptionContext:aws:states:stateMachineArn"]
					if !ok {
						continue
					}
					if acts := cfntest.Actions(st); !reflect.DeepEqual(acts, []string{"kms:Decrypt", "kms:GenerateDataKey"}) || !reflect.DeepEqual(st["Resource"], keyRef) {
						t.Errorf("%s may %v on %v for executions", fn, acts, st["Resource"])
					}
					list, ok := arns.([]any)
					if !ok {
						list = []any{arns}
					}
					for _, arn := range list {
						got = append(got, cfntest.Render(arn))
					}
				}
				var want []string
				if tc.key != "" {
					for _, m := range calls {
						want = append(want, machineArn(m))
					}
				}
				sort.Strings(got)
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s may use the key for the executions of %v, want %v", fn, got, want)
				}
			}
		})
	}
}
