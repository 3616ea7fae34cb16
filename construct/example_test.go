package construct_test

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/jsii-runtime-go"

	"github.com/longrun-dev/longrun/construct"
)

// A team's CDK app with two operation types on two workers: the provisioner is a function
// of the app, the mailer one deployed elsewhere, imported by its ARN.
func Example() {
	app := awscdk.NewApp(nil)
	stack := awscdk.NewStack(app, jsii.String("Team"), nil)

	props := &construct.Props{
		Stage:      "prod",
		TypesFiles: []string{"testdata/team.types.yaml"},
		// In a real app "dist", longrun's zips from its cmd/release (-out dist).
		CodeDir: codeDir(),
	}
	// A worker may run as long as the longest step of its types.
	timeouts, err := construct.WorkerTimeouts(props)
	if err != nil {
		panic(err)
	}
	provisioner := awslambda.NewFunction(stack, jsii.String("Provisioner"), &awslambda.FunctionProps{
		Runtime: awslambda.Runtime_PYTHON_3_12(),
		Handler: jsii.String("index.handler"),
		Code:    awslambda.Code_FromInline(jsii.String("def handler(event, context):\n    return {'status': 'succeeded'}\n")),
		Timeout: awscdk.Duration_Seconds(jsii.Number(timeouts["provisioner"].Seconds())),
	})
	mailer := awslambda.Function_FromFunctionArn(stack, jsii.String("Mailer"),
		jsii.String("arn:aws:lambda:us-east-1:123456789012:function:team-mailer"))

	props.Workers = map[string]awslambda.IFunction{"provisioner": provisioner, "mailer": mailer}
	lr := construct.New(stack, "Longrun", props)
	awscdk.NewCfnOutput(stack, jsii.String("ApiUrl"), &awscdk.CfnOutputProps{Value: lr.APIURL})
	awscdk.NewCfnOutput(lr, jsii.String("TableName"), &awscdk.CfnOutputProps{Value: lr.Table.TableName()})

	// What the template holds.
	var tpl struct {
		Resources map[string]struct {
			Type       string
			Properties map[string]any
			Metadata   map[string]map[string]map[string]any
		}
		Outputs map[string]any
	}
	raw, _ := json.Marshal(app.Synth(nil).GetStackArtifact(jsii.String("Team")).Template())
	_ = json.Unmarshal(raw, &tpl)
	var lines []string
	for _, r := range tpl.Resources {
		switch r.Type {
		case "AWS::StepFunctions::StateMachine":
			for name, limits := range r.Metadata["longrun:types"] {
				lines = append(lines, fmt.Sprintf("workflow %s: %s, deadline %vs, steps of %vs", r.Properties["StateMachineName"], name,
					limits["deadlineSeconds"], limits["stepTimeoutSeconds"]))
			}
		case "AWS::Lambda::Function":
			if env, ok := r.Properties["Environment"].(map[string]any); ok {
				lines = append(lines, fmt.Sprintf("function %s: LONGRUN_TYPES_FILE=%v", r.Properties["FunctionName"],
					env["Variables"].(map[string]any)["LONGRUN_TYPES_FILE"]))
			}
		}
	}
	for id := range tpl.Outputs {
		lines = append(lines, "output "+id)
	}
	sort.Strings(lines)
	fmt.Println(strings.Join(lines, "\n"))
	// Output:
	// function longrun-prod-api: LONGRUN_TYPES_FILE=/opt/team.types.yaml
	// function longrun-prod-dispatcher: LONGRUN_TYPES_FILE=/opt/team.types.yaml
	// function longrun-prod-notifier: LONGRUN_TYPES_FILE=/opt/team.types.yaml
	// function longrun-prod-reconciler: LONGRUN_TYPES_FILE=/opt/team.types.yaml
	// function longrun-prod-recorder: LONGRUN_TYPES_FILE=/opt/team.types.yaml
	// output ApiUrl
	// output LongrunTableName61CF8D9F
	// workflow longrun-prod-mailer-resume: notify.mail, deadline 600s, steps of 30s
	// workflow longrun-prod-mailer: notify.mail, deadline 600s, steps of 30s
	// workflow longrun-prod-provisioner-resume: provision.environment, deadline 7200s, steps of 300s
	// workflow longrun-prod-provisioner: provision.environment, deadline 7200s, steps of 300s
}
