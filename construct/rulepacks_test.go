package construct_test

import (
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2/awscognito"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"

	"github.com/longrun-dev/longrun/construct"
	"github.com/longrun-dev/longrun/internal/testkit/cfntest"
	"github.com/longrun-dev/longrun/internal/testkit/nagtest"
)

// cdk-nag's AwsSolutions and Serverless packs, applied to the construct (its resources, not
// the app's workers), find nothing unsuppressed in any of its shapes: IAM or Cognito (a pool
// it creates or the app's), a team's types with a worker of another account, an existing
// bus, a customer key, tracing off. The suppressions and their reasons are the construct's
// (nag.go; docs/security.md, "The rule packs").
func TestRulePacks(t *testing.T) {
	const poolArn = "arn:aws:cognito-idp:us-east-1:123456789012:userpool/us-east-1_abcdEFGH"
	for _, tc := range []struct {
		name  string
		props func(a *app) *construct.Props
	}{
		{"built-in types, IAM", func(a *app) *construct.Props {
			return &construct.Props{Stage: "dev", DemoTypes: true, Workers: map[string]awslambda.IFunction{
				"demo-task": a.pythonWorker("DemoTask", time.Minute), "export-orders": a.pythonWorker("ExportOrders", time.Minute)}}
		}},
		{"team types, created pool, customer key, untraced", func(a *app) *construct.Props {
			return &construct.Props{Stage: "prod", TypesFiles: []string{"testdata/team.types.yaml", "testdata/more/team.types.yaml"},
				Workers: map[string]awslambda.IFunction{
					"provisioner": a.pythonWorker("Provisioner", 10*time.Minute),
					"mailer":      awslambda.Function_FromFunctionArn(a.stack, jsii.String("Mailer"), jsii.String(mailerArn)),
				},
				Cognito: &construct.CognitoOptions{}, TableEncryption: construct.TableEncryptionCustomerManaged,
				APIGatewayCloudWatchRole: true, Tracing: construct.TracingOptions{Disabled: true}}
		}},
		{"the app's pool and bus", func(a *app) *construct.Props {
			return &construct.Props{Stage: "prod", Workers: map[string]awslambda.IFunction{"export-orders": a.pythonWorker("ExportOrders", time.Minute)},
				Cognito:  &construct.CognitoOptions{UserPool: awscognito.UserPool_FromUserPoolArn(a.stack, jsii.String("Pool"), jsii.String(poolArn)), ClientIDs: []string{"client"}},
				EventBus: awsevents.EventBus_FromEventBusArn(a.stack, jsii.String("TeamBus"), jsii.String("arn:aws:events:us-east-1:123456789012:event-bus/team-events"))}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newApp(t)
			props := tc.props(a)
			props.CodeDir = codeDir()
			lr := construct.New(a.stack, "Longrun", props)
			nagtest.Check(lr)
			if findings := nagtest.Findings(a.stack); len(findings) > 0 {
				t.Errorf("%d unsuppressed findings, by rule %v:\n%s", len(findings), nagtest.Rules(findings), strings.Join(findings, "\n"))
			}
			// The IAM5 suppression of "*" holds: only actions without resource-level
			// permissions are granted on every resource (the task token answers, the
			// recorder's alone).
			for id, p := range a.template(t).of("AWS::IAM::Policy") {
				for _, st := range p.Properties["PolicyDocument"].(map[string]any)["Statement"].([]any) {
					st := st.(map[string]any)
					if st["Resource"] != "*" {
						continue
					}
					for _, action := range cfntest.Actions(st) {
						token := (action == "states:SendTaskSuccess" || action == "states:SendTaskHeartbeat") && strings.Contains(id, "Recorder")
						if !strings.HasPrefix(action, "xray:") && action != "dynamodb:ListStreams" && !token {
							t.Errorf("%s: %s on *", id, action)
						}
					}
				}
			}
		})
	}
}

// The check can fail: a queue of the app's with neither a dead-letter queue nor TLS
// enforced is reported, under the construct's scope and outside it alike.
func TestRulePacksReport(t *testing.T) {
	a := newApp(t)
	awssqs.NewQueue(a.stack, jsii.String("Bare"), nil)
	nagtest.Check(a.stack)
	rules := nagtest.Rules(nagtest.Findings(a.stack))
	for _, want := range []string{"AwsSolutions-SQS3", "AwsSolutions-SQS4", "Serverless-SQSRedrivePolicy"} {
		if rules[want] == 0 {
			t.Errorf("no %s finding on a bare queue: %v", want, rules)
		}
	}
}
