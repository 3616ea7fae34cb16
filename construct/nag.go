package construct

import (
	"github.com/aws/aws-cdk-go/awscdk/v2/awsstepfunctions"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
)

// suppressFindings records on longrun's resources the findings of cdk-nag's AwsSolutions and
// Serverless packs that the construct decides against, each with its reason (docs/security.md,
// "The rule packs", lists them; TestRulePacks fails on any finding not suppressed). An app
// that runs cdk-nag over its stack sees these as suppressed, with the reason, and every
// finding about its own resources (its workers among them) as its own.
func (b *builder) suppressFindings() {
	lr, schedule, traced := b.lr, b.reconcileSchedule, b.trace.active
	// X-Ray's actions (tracing), DynamoDB's ListStreams (a stream event source) and the
	// recorder's answers to its workflows' task tokens (SendTaskSuccess, SendTaskHeartbeat:
	// a service integration's token belongs to no resource IAM can name) have no
	// resource-level permissions: their only resource is "*", and nothing else is granted on
	// it (TestRulePacks checks).
	noResourceLevel := &cdknag.NagPackSuppression{
		Id:        jsii.String("AwsSolutions-IAM5"),
		AppliesTo: &[]interface{}{jsii.String("Resource::*")},
		Reason:    jsii.String("X-Ray's PutTraceSegments, PutTelemetryRecords and GetSampling*, DynamoDB's ListStreams and Step Functions' SendTaskSuccess and SendTaskHeartbeat (a task token of a service integration) take no resource but *; no other action is granted on *."),
	}
	// Executions are named per operation at run time (<operation id>-<n>): the wildcard is
	// the executions of one named state machine.
	executions := &cdknag.NagPackSuppression{
		Id:        jsii.String("AwsSolutions-IAM5"),
		AppliesTo: &[]interface{}{&cdknag.RegexAppliesTo{Regex: jsii.String(`/^Resource::arn:<AWS::Partition>:states:<AWS::Region>:<AWS::AccountId>:execution:[^:*]+:\*$/g`)}},
		Reason:    jsii.String("Executions are named per operation when they start; the wildcard covers the executions of one state machine of this deployment only."),
	}
	// GrantInvoke's shape: the function and its versions and aliases (<arn>:*), one function.
	invoke := func(what string) *cdknag.NagPackSuppression {
		return &cdknag.NagPackSuppression{
			Id:        jsii.String("AwsSolutions-IAM5"),
			AppliesTo: &[]interface{}{&cdknag.RegexAppliesTo{Regex: jsii.String(`/^Resource::(<[^>]+\.Arn>|arn:[^*]+):\*$/g`)}},
			Reason:    jsii.String("lambda:InvokeFunction on " + what + " and its versions and aliases (CDK's GrantInvoke), one function each, never another."),
		}
	}
	for _, name := range sorted(lr.Functions) {
		f := lr.Functions[name]
		role := []*cdknag.NagPackSuppression{noResourceLevel, executions}
		if name == "recorder" {
			role = append(role, invoke("the workers of the types served"))
		}
		cdknag.NagSuppressions_AddResourceSuppressions(f.Role(), &role, jsii.Bool(true))
		fn := []*cdknag.NagPackSuppression{{Id: jsii.String("Serverless-LambdaDLQ"), Reason: jsii.String(noDeadLetterQueue[name])}}
		if !traced {
			fn = append(fn, notTraced("Serverless-LambdaTracing"))
		}
		cdknag.NagSuppressions_AddResourceSuppressions(f, &fn, jsii.Bool(false))
	}

	for _, machines := range []map[string]awsstepfunctions.StateMachine{lr.StateMachines, lr.ResumeStateMachines} {
		for _, w := range sorted(machines) {
			sm := machines[w]
			own := []*cdknag.NagPackSuppression{{
				Id: jsii.String("AwsSolutions-SF1"),
				Reason: jsii.String("Step Functions keeps every event of a standard workflow's execution for 90 days (GetExecutionHistory), " +
					"and the recorder logs each step; a copy of every event in CloudWatch Logs would cost more than the workflow itself " +
					"and, with execution data, copy operation data to another store (docs/security.md)."),
			}}
			if !traced {
				own = append(own, notTraced("AwsSolutions-SF2"), notTraced("Serverless-StepFunctionStateMachineXray"))
			}
			cdknag.NagSuppressions_AddResourceSuppressions(sm, &own, jsii.Bool(false))
			policy := []*cdknag.NagPackSuppression{noResourceLevel, invoke("the recorder")}
			cdknag.NagSuppressions_AddResourceSuppressions(sm.Role(), &policy, jsii.Bool(true))
		}
	}

	for _, name := range sorted(lr.DeadLetterQueues) {
		reason := jsii.String("This queue is a dead-letter queue: the " + name + "'s stream mapping sends the records it gave up on here " +
			"(OnFailure; cdk-nag only recognizes a queue's RedrivePolicy). A dead-letter queue of its own would only move them again.")
		dlq := []*cdknag.NagPackSuppression{{Id: jsii.String("AwsSolutions-SQS3"), Reason: reason}, {Id: jsii.String("Serverless-SQSRedrivePolicy"), Reason: reason}}
		cdknag.NagSuppressions_AddResourceSuppressions(lr.DeadLetterQueues[name], &dlq, jsii.Bool(false))
	}

	tick := []*cdknag.NagPackSuppression{{
		Id: jsii.String("Serverless-EventBusDLQ"),
		Reason: jsii.String("The schedule's event carries nothing: a tick EventBridge could not deliver is followed by the next one a period later, " +
			"which does the same work (the reconciler reads what is due from the table)."),
	}}
	cdknag.NagSuppressions_AddResourceSuppressions(schedule, &tick, jsii.Bool(true))

	api := []*cdknag.NagPackSuppression{{
		Id: jsii.String("AwsSolutions-APIG2"),
		Reason: jsii.String("The api function validates every request against the contract and answers with its problem codes (api/openapi.yaml); " +
			"API Gateway's validator would answer with bodies of its own. It checks the one thing it can: an admission's Idempotency-Key."),
	}}
	if lr.UserPool == nil {
		api = append(api, &cdknag.NagPackSuppression{
			Id:     jsii.String("AwsSolutions-COG4"),
			Reason: jsii.String("The API authorizes with IAM (SigV4) unless Props.Cognito is set; every method is authorized."),
		})
	}
	// Props.APIGatewayCloudWatchRole: the account's (and region's) role for API Gateway's
	// logging, with the policy AWS documents for it.
	api = append(api, &cdknag.NagPackSuppression{
		Id:        jsii.String("AwsSolutions-IAM4"),
		AppliesTo: &[]interface{}{jsii.String("Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs")},
		Reason:    jsii.String("The account's API Gateway CloudWatch Logs role (Props.APIGatewayCloudWatchRole) uses the managed policy AWS documents for it; only API Gateway assumes it."),
	})
	cdknag.NagSuppressions_AddResourceSuppressions(lr.API, &api, jsii.Bool(true))
	// The callback URLs' methods (POST and ANY on /v1/callbacks/{token}) are open by design:
	// a third party with no credentials for longrun sends one signal through one.
	callbackReason := jsii.String("A callback URL's token is its credential: an unguessable MAC bound to one operation and one signal, " +
		"checked by the function before it reads anything; it sends that one signal and nothing else, and expires with the operation. " +
		"The third party that calls it has no credentials for longrun (docs/security.md, \"Callback URLs\").")
	for _, m := range b.callbackMethods {
		open := []*cdknag.NagPackSuppression{
			{Id: jsii.String("AwsSolutions-APIG4"), Reason: callbackReason},
			{Id: jsii.String("AwsSolutions-COG4"), Reason: callbackReason},
		}
		cdknag.NagSuppressions_AddResourceSuppressions(m, &open, jsii.Bool(false))
	}
	// The console's files (GET and HEAD of /console and below, Props.Console) are public by
	// design: the page that signs in cannot need a sign-in to load.
	consoleReason := jsii.String("The operations console's static files (HTML, CSS, JavaScript; no data, no secret): the page that signs a user in " +
		"cannot need a sign-in to load, and a browser cannot sign requests with SigV4. Everything the console shows comes from the API's " +
		"authorized methods with the signed-in user's own ID token; other methods on these paths are authorized (docs/security.md, \"The console\").")
	for _, m := range b.consoleMethods {
		open := []*cdknag.NagPackSuppression{
			{Id: jsii.String("AwsSolutions-APIG4"), Reason: consoleReason},
			{Id: jsii.String("AwsSolutions-COG4"), Reason: consoleReason},
		}
		cdknag.NagSuppressions_AddResourceSuppressions(m, &open, jsii.Bool(false))
	}
	stage := []*cdknag.NagPackSuppression{{
		Id: jsii.String("AwsSolutions-APIG3"),
		Reason: jsii.String("A web ACL is the account's choice (rules, cost, shared across APIs): the app associates its own with Longrun.API's stage " +
			"(wafv2 CfnWebACLAssociation). The stage is authorized and throttled without one."),
	}}
	if !traced {
		stage = append(stage, notTraced("Serverless-APIGWXrayEnabled"))
	}
	cdknag.NagSuppressions_AddResourceSuppressions(lr.API.DeploymentStage(), &stage, jsii.Bool(false))

	seal := []*cdknag.NagPackSuppression{{
		Id: jsii.String("AwsSolutions-SMG4"),
		Reason: jsii.String("The seal key is not rotated on a schedule: a new key breaks the seal of every continuation in flight, " +
			"whose workers' state would then be lost. Rotate it by hand between releases if it may have leaked (docs/security.md)."),
	}}
	cdknag.NagSuppressions_AddResourceSuppressions(lr.SealSecret, &seal, jsii.Bool(false))

	// A user pool the construct created (Props.Cognito without a pool of the app's).
	if lr.UserPoolClient != nil {
		pool := []*cdknag.NagPackSuppression{
			{
				Id: jsii.String("AwsSolutions-COG2"),
				Reason: jsii.String("MFA (TOTP) is optional: the pool's users are often programs signing in with SRP, and administrators create every user. " +
					"An app that must require MFA passes its own pool (Props.Cognito.UserPool)."),
			},
			{
				Id: jsii.String("AwsSolutions-COG8"),
				Reason: jsii.String("The Plus feature plan (threat protection) is priced per monthly active user; an app that wants it passes its own pool " +
					"(Props.Cognito.UserPool). Sign-up is off and the tenant attribute is the administrators' to write."),
			},
		}
		cdknag.NagSuppressions_AddResourceSuppressions(lr.UserPool, &pool, jsii.Bool(true))
	}
}

// noDeadLetterQueue says, by function, why it has no dead-letter queue: a function's DLQ
// catches asynchronous invocations only.
var noDeadLetterQueue = map[string]string{
	"api":        "API Gateway invokes the api function synchronously: a failure is the caller's 5xx, never an event to keep.",
	"dispatcher": "A DynamoDB stream mapping invokes the dispatcher synchronously; the records it gives up on go to the mapping's OnFailure queue (DeadLetterQueues[dispatcher]).",
	"notifier":   "A DynamoDB stream mapping invokes the notifier synchronously; the records it gives up on go to the mapping's OnFailure queue (DeadLetterQueues[notifier]).",
	"recorder":   "The workflows invoke the recorder synchronously (a Task state, with retries); a failure is the execution's, which the reconciler repairs.",
	"reconciler": "Only the schedule invokes the reconciler, with an empty event: a failed run is redone by the next tick, so a kept event would carry nothing.",
}

func notTraced(id string) *cdknag.NagPackSuppression {
	return &cdknag.NagPackSuppression{Id: jsii.String(id), Reason: jsii.String("Tracing is off: the app set Props.Tracing.Disabled.")}
}
