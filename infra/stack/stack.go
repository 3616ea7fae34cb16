// Package stack is longrun's own CDK stack, one per stage: the public construct
// (github.com/longrun-dev/longrun/construct) serving the built-in operation types
// (optype.Deployed), with the built-in workers as a team would give its own: functions of
// the app, from CodeDir's worker-<name>.zip, each as long as its types' longest stepTimeout.
// The outputs are the stage's (the construct makes none).
package stack

import (
	"maps"
	"path/filepath"
	"slices"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscognito"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	"github.com/longrun-dev/longrun/construct"
	"github.com/longrun-dev/longrun/internal/aws/cdkid"
	"github.com/longrun-dev/longrun/internal/aws/sizing"
	"github.com/longrun-dev/longrun/internal/aws/stepfunctions"
)

// ConstructID is the construct's id in the stack: "Default", which CDK leaves out of
// logical ids, so every resource keeps the logical id it had when the stack defined them
// itself, and a stage deployed before the construct existed is updated in place (a new
// logical id would replace the table, whose fixed name and RETAIN make that fail).
const ConstructID = "Default"

// New defines the stack.
func New(scope constructs.Construct, id string, props *Props) awscdk.Stack {
	if err := props.check(); err != nil {
		panic(err)
	}
	arch, _ := lambdaArchitecture(props.Architecture)
	stack := awscdk.NewStack(scope, jsii.String(id), &props.StackProps)
	dev := props.Stage == "dev"

	// The built-in workers, only those of the types the stage serves.
	timeouts, err := construct.WorkerTimeouts(&construct.Props{DemoTypes: props.demoTypes()})
	if err != nil {
		panic(err)
	}
	workers := map[string]awslambda.IFunction{}
	for _, w := range slices.Sorted(maps.Keys(timeouts)) {
		fname := stepfunctions.FunctionName(w)
		logs := awslogs.NewLogGroup(stack, jsii.String(cdkid.Title(fname)+"Logs"), &awslogs.LogGroupProps{
			LogGroupName:  jsii.String("/aws/lambda/longrun-" + props.Stage + "-" + fname),
			Retention:     awslogs.RetentionDays_ONE_MONTH,
			RemovalPolicy: removal(dev),
		})
		// A worker may run as long as the longest step of its types: the recorder gives each
		// step the type's stepTimeout, and the function's own timeout ends the invocation at
		// the same bound. It needs no setting and no permission but writing its own log
		// group: it never touches longrun's table (the recorder may invoke it).
		worker := awslambda.NewFunction(stack, jsii.String(cdkid.Title(fname)), &awslambda.FunctionProps{
			Role:          construct.FunctionRole(stack, cdkid.Title(fname), logs),
			FunctionName:  jsii.String("longrun-" + props.Stage + "-" + fname),
			Runtime:       awslambda.Runtime_PROVIDED_AL2023(),
			Architecture:  arch,
			Handler:       jsii.String("bootstrap"),
			Code:          awslambda.Code_FromAsset(jsii.String(filepath.Join(props.CodeDir, fname+".zip")), nil),
			MemorySize:    jsii.Number(sizing.DemoWorkerMemoryMB),
			Timeout:       awscdk.Duration_Seconds(jsii.Number(timeouts[w].Seconds())),
			LogGroup:      logs,
			LoggingFormat: awslambda.LoggingFormat_JSON,
		})
		suppressWorkerFindings(worker)
		workers[w] = worker
	}

	cp := &construct.Props{
		Stage:                    props.Stage,
		DemoTypes:                props.demoTypes(),
		Workers:                  workers,
		CodeDir:                  props.CodeDir,
		Architecture:             arch,
		NoReservedConcurrency:    props.NoReservedConcurrency,
		OperatorPrincipals:       props.OperatorPrincipals,
		TenantQuota:              props.TenantQuota,
		PrincipalQuota:           props.PrincipalQuota,
		IdempotencyWindow:        props.IdempotencyWindow,
		ThrottleRate:             props.ThrottleRate,
		ThrottleBurst:            props.ThrottleBurst,
		APIGatewayCloudWatchRole: props.APIGatewayCloudWatchRole,
		EventPublishers:          props.EventPublishers,
		TableEncryption:          construct.TableEncryption(props.TableEncryption),
		Tracing:                  construct.TracingOptions{Disabled: props.NoTracing, CollectorLayerArn: props.CollectorLayerArn},
		Console: construct.ConsoleOptions{Disabled: props.NoConsole, DomainPrefix: props.ConsoleDomainPrefix,
			CognitoDomain: props.ConsoleCognitoDomain, ClientID: props.ConsoleClientID},
	}
	if props.cognito() {
		cp.Cognito = &construct.CognitoOptions{}
		if props.CognitoUserPoolArn != "" {
			cp.Cognito.UserPool = awscognito.UserPool_FromUserPoolArn(stack, jsii.String("UserPool"), jsii.String(props.CognitoUserPoolArn))
			cp.Cognito.ClientIDs = props.CognitoClientIDs
		}
	}
	if props.TableKMSKeyArn != "" {
		cp.TableKey = awskms.Key_FromKeyArn(stack, jsii.String("TableKey"), jsii.String(props.TableKMSKeyArn))
	}
	lr := construct.New(stack, ConstructID, cp)

	awscdk.NewCfnOutput(stack, jsii.String("ApiUrl"), &awscdk.CfnOutputProps{Value: lr.APIURL})
	awscdk.NewCfnOutput(stack, jsii.String("TableName"), &awscdk.CfnOutputProps{Value: lr.Table.TableName()})
	awscdk.NewCfnOutput(stack, jsii.String("EventBusName"), &awscdk.CfnOutputProps{Value: lr.Bus.EventBusName()})
	if lr.UserPoolClient != nil {
		awscdk.NewCfnOutput(stack, jsii.String("UserPoolId"), &awscdk.CfnOutputProps{Value: lr.UserPool.UserPoolId()})
		awscdk.NewCfnOutput(stack, jsii.String("UserPoolClientId"), &awscdk.CfnOutputProps{Value: lr.UserPoolClient.UserPoolClientId()})
	}
	if lr.ConsoleURL != nil {
		awscdk.NewCfnOutput(stack, jsii.String("ConsoleUrl"), &awscdk.CfnOutputProps{Value: lr.ConsoleURL})
	}
	// What the end-to-end suite needs to run against a deployed stage (localstack/test.sh).
	arns := map[string]interface{}{}
	for w, sm := range lr.StateMachines {
		arns[w] = sm.StateMachineArn()
	}
	awscdk.NewCfnOutput(stack, jsii.String("StateMachines"), &awscdk.CfnOutputProps{Value: stack.ToJsonString(arns, nil)})
	awscdk.NewCfnOutput(stack, jsii.String("FunctionPrefix"), &awscdk.CfnOutputProps{Value: jsii.String("longrun-" + props.Stage + "-")})
	return stack
}

// suppressWorkerFindings records the cdk-nag findings about a built-in worker that the stage
// decides against (the construct records its own: docs/security.md, "The rule packs").
func suppressWorkerFindings(worker awslambda.Function) {
	fn := []*cdknag.NagPackSuppression{
		{
			Id: jsii.String("Serverless-LambdaDLQ"),
			Reason: jsii.String("The recorder sends a step asynchronously with the recorder as the worker's destination on failure (the event, with the request): " +
				"it records how the step ended, where a dead-letter queue would keep it from the operation."),
		},
		{
			Id: jsii.String("Serverless-LambdaTracing"),
			Reason: jsii.String("The built-in workers are workers as a team's would be: whether a worker is traced is its team's choice " +
				"(the recorder's span covers the invocation)."),
		},
	}
	cdknag.NagSuppressions_AddResourceSuppressions(worker, &fn, jsii.Bool(false))
}

func removal(dev bool) awscdk.RemovalPolicy {
	if dev {
		return awscdk.RemovalPolicy_DESTROY
	}
	return awscdk.RemovalPolicy_RETAIN
}
