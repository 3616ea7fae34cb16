// Package stack is longrun's AWS CDK stack: the table, the functions, their stream mappings,
// the workflows, the REST API, the event bus, the reconciler's schedule, dead-letter queues
// and alarms. Its settings come from the same Go sources the local stack uses: the table
// from dynamo.TableSpec, the mappings from eventsource.Mappings, the workflow from
// stepfunctions.Template, the operation types from optype.Builtin.
package stack

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awseventstargets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdaeventsources"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsstepfunctions"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/longrun-dev/longrun/internal/aws/dynamo"
	"github.com/longrun-dev/longrun/internal/aws/eventsource"
	"github.com/longrun-dev/longrun/internal/aws/stepfunctions"
	"github.com/longrun-dev/longrun/internal/core/optype"
)

// Props configure one stage.
type Props struct {
	awscdk.StackProps
	Stage string // "dev", "prod", …: names resources; only dev may be deleted with its data
	// CodeDir holds <function>.zip from `make build`.
	CodeDir string
	// CognitoUserPoolArn, when set, authorizes the API with that user pool's JWTs instead of
	// IAM (SigV4).
	CognitoUserPoolArn string
	// ThrottleRate and ThrottleBurst limit the API stage (requests/s); 0 means 100 and 200.
	ThrottleRate, ThrottleBurst float64
	// Architecture is every function's instruction set, named as the CDK context names it:
	// "arm64" (the default when empty) or "x86_64" (e.g. LocalStack on an x86 host). The
	// zips must match: CheckCode.
	Architecture string
}

// FromContext reads a stage's settings from the CDK context (-c key=value, cdk.json or
// CDK_CONTEXT_JSON): stage, codeDir, cognitoUserPoolArn and architecture. An architecture
// other than arm64 or x86_64 is an error, so a typo never deploys the default.
func FromContext(scope constructs.Construct) (*Props, error) {
	get := func(key, def string) string {
		switch v := scope.Node().TryGetContext(jsii.String(key)).(type) {
		case nil:
			return def
		case string:
			if v == "" {
				return def
			}
			return v
		default:
			return fmt.Sprint(v)
		}
	}
	props := &Props{
		Stage:              get("stage", "dev"),
		CodeDir:            get("codeDir", "dist"),
		CognitoUserPoolArn: get("cognitoUserPoolArn", ""),
		Architecture:       get("architecture", "arm64"),
	}
	if _, err := lambdaArchitecture(props.Architecture); err != nil {
		return nil, err
	}
	return props, nil
}

// Function settings per function: memory (MB) and timeout (s). Workers run one step per
// invocation (≤ 5 s for demo.task), so a minute leaves room for real steps.
var functionSettings = map[string][2]float64{
	"api":        {512, 10},
	"dispatcher": {256, 60},
	"notifier":   {256, 60},
	"recorder":   {256, 30},
	"reconciler": {256, 120},
}

const workerSettingsMemory, workerSettingsTimeout = 512, 60

// New defines the stack.
func New(scope constructs.Construct, id string, props *Props) awscdk.Stack {
	arch, err := lambdaArchitecture(props.Architecture)
	if err != nil {
		panic(err)
	}
	stack := awscdk.NewStack(scope, jsii.String(id), &props.StackProps)
	name := func(s string) *string { return jsii.String("longrun-" + props.Stage + "-" + s) }
	dev := props.Stage == "dev"

	table := newTable(stack, props, dev)
	bus := awsevents.NewEventBus(stack, jsii.String("Bus"), &awsevents.EventBusProps{EventBusName: name("events")})

	dlqs := map[string]awssqs.Queue{}
	for _, q := range []string{"dispatcher", "notifier"} {
		dlqs[q] = awssqs.NewQueue(stack, jsii.String(title(q)+"DeadLetters"), &awssqs.QueueProps{
			QueueName:       name(q + "-dlq"),
			RetentionPeriod: awscdk.Duration_Days(jsii.Number(14)),
			Encryption:      awssqs.QueueEncryption_SQS_MANAGED,
			EnforceSSL:      jsii.Bool(true),
		})
	}

	env := map[string]*string{"LONGRUN_TABLE": table.TableName()}
	fns := map[string]awslambda.Function{}
	fn := func(fname string, memory, timeout float64, extra map[string]*string) awslambda.Function {
		vars := map[string]*string{}
		for k, v := range env {
			vars[k] = v
		}
		for k, v := range extra {
			vars[k] = v
		}
		logs := awslogs.NewLogGroup(stack, jsii.String(title(fname)+"Logs"), &awslogs.LogGroupProps{
			LogGroupName:  jsii.String("/aws/lambda/longrun-" + props.Stage + "-" + fname),
			Retention:     awslogs.RetentionDays_ONE_MONTH,
			RemovalPolicy: removal(dev),
		})
		f := awslambda.NewFunction(stack, jsii.String(title(fname)), &awslambda.FunctionProps{
			FunctionName:  name(fname),
			Runtime:       awslambda.Runtime_PROVIDED_AL2023(),
			Architecture:  arch,
			Handler:       jsii.String("bootstrap"),
			Code:          awslambda.Code_FromAsset(jsii.String(filepath.Join(props.CodeDir, fname+".zip")), nil),
			MemorySize:    jsii.Number(memory),
			Timeout:       awscdk.Duration_Seconds(jsii.Number(timeout)),
			Environment:   &vars,
			LogGroup:      logs,
			LoggingFormat: awslambda.LoggingFormat_JSON,
		})
		fns[fname] = f
		return f
	}

	// Workers and the recorder first: the workflows need them, the dispatcher needs the
	// workflows.
	recorder := fn("recorder", functionSettings["recorder"][0], functionSettings["recorder"][1], nil)
	machines := map[string]awsstepfunctions.StateMachine{}
	var executorNames []string
	for _, tname := range optype.Builtin().Names() {
		typ, _ := optype.Builtin().Lookup(tname)
		worker := fn(stepfunctions.FunctionName(typ.Executor), workerSettingsMemory, workerSettingsTimeout, nil)
		sm := awsstepfunctions.NewStateMachine(stack, jsii.String(title(typ.Executor)+"Workflow"), &awsstepfunctions.StateMachineProps{
			StateMachineName: name(typ.Executor),
			StateMachineType: awsstepfunctions.StateMachineType_STANDARD,
			DefinitionBody:   awsstepfunctions.DefinitionBody_FromString(jsii.String(stepfunctions.Template())),
			DefinitionSubstitutions: &map[string]*string{
				stepfunctions.WorkerFunctionArn:   worker.FunctionArn(),
				stepfunctions.RecorderFunctionArn: recorder.FunctionArn(),
			},
		})
		worker.GrantInvoke(sm)
		recorder.GrantInvoke(sm)
		machines[typ.Executor] = sm
		executorNames = append(executorNames, typ.Executor)
	}
	sort.Strings(executorNames)
	arns := map[string]interface{}{}
	for _, e := range executorNames {
		arns[e] = machines[e].StateMachineArn()
	}
	machinesJSON := stack.ToJsonString(arns, nil)

	api := fn("api", functionSettings["api"][0], functionSettings["api"][1], nil)
	dispatcher := fn("dispatcher", functionSettings["dispatcher"][0], functionSettings["dispatcher"][1], map[string]*string{
		"LONGRUN_STATE_MACHINES": machinesJSON, "LONGRUN_DEAD_LETTER_QUEUE_URL": dlqs["dispatcher"].QueueUrl(),
	})
	notifier := fn("notifier", functionSettings["notifier"][0], functionSettings["notifier"][1], map[string]*string{
		"LONGRUN_EVENT_BUS": bus.EventBusName(),
	})
	reconciler := fn("reconciler", functionSettings["reconciler"][0], functionSettings["reconciler"][1], map[string]*string{
		"LONGRUN_STATE_MACHINES": machinesJSON, "LONGRUN_DEAD_LETTER_QUEUE_URL": dlqs["dispatcher"].QueueUrl(),
	})

	grantData(table, api, true, dynamo.IndexByScope)
	grantData(table, dispatcher, true)
	grantData(table, recorder, true)
	grantData(table, reconciler, true, dynamo.IndexDue)
	for _, e := range executorNames {
		grantData(table, fns[stepfunctions.FunctionName(e)], false)
	}
	for _, f := range []awslambda.Function{dispatcher, reconciler} {
		grantExecutions(stack, f, machines, executorNames)
		dlqs["dispatcher"].GrantSendMessages(f)
	}
	bus.GrantPutEventsTo(notifier, nil)

	for _, m := range eventsource.Mappings() {
		mapping(fns[m.Function], table, m, dlqs[m.Function])
	}

	awsevents.NewRule(stack, jsii.String("ReconcileSchedule"), &awsevents.RuleProps{
		RuleName: name("reconcile"),
		Schedule: awsevents.Schedule_Rate(awscdk.Duration_Minutes(jsii.Number(1))),
		Targets:  &[]awsevents.IRuleTarget{awseventstargets.NewLambdaFunction(reconciler, nil)},
	})

	restAPI := newAPI(stack, props, api, name)
	alarms(stack, props, fns, dlqs, machines, name)

	awscdk.NewCfnOutput(stack, jsii.String("ApiUrl"), &awscdk.CfnOutputProps{Value: restAPI.Url()})
	awscdk.NewCfnOutput(stack, jsii.String("TableName"), &awscdk.CfnOutputProps{Value: table.TableName()})
	awscdk.NewCfnOutput(stack, jsii.String("EventBusName"), &awscdk.CfnOutputProps{Value: bus.EventBusName()})
	// What the end-to-end suite needs to run against a deployed stage (localstack/test.sh).
	awscdk.NewCfnOutput(stack, jsii.String("StateMachines"), &awscdk.CfnOutputProps{Value: machinesJSON})
	awscdk.NewCfnOutput(stack, jsii.String("FunctionPrefix"), &awscdk.CfnOutputProps{Value: jsii.String("longrun-" + props.Stage + "-")})
	return stack
}

// newTable mirrors dynamo.TableSpec, the definition the local stack and tests create.
func newTable(stack awscdk.Stack, props *Props, dev bool) awsdynamodb.Table {
	spec := dynamo.TableSpec("unused")
	attr := func(name string) *awsdynamodb.Attribute {
		return &awsdynamodb.Attribute{Name: jsii.String(name), Type: awsdynamodb.AttributeType_STRING}
	}
	key := func(ks []types.KeySchemaElement, kt types.KeyType) *awsdynamodb.Attribute {
		for _, k := range ks {
			if k.KeyType == kt {
				return attr(*k.AttributeName)
			}
		}
		return nil
	}
	table := awsdynamodb.NewTable(stack, jsii.String("Table"), &awsdynamodb.TableProps{
		TableName:           jsii.String("longrun-" + props.Stage),
		PartitionKey:        key(spec.KeySchema, types.KeyTypeHash),
		SortKey:             key(spec.KeySchema, types.KeyTypeRange),
		BillingMode:         awsdynamodb.BillingMode_PAY_PER_REQUEST,
		Stream:              awsdynamodb.StreamViewType_NEW_AND_OLD_IMAGES,
		TimeToLiveAttribute: jsii.String("expires_at"),
		PointInTimeRecoverySpecification: &awsdynamodb.PointInTimeRecoverySpecification{
			PointInTimeRecoveryEnabled: jsii.Bool(true),
		},
		DeletionProtection: jsii.Bool(!dev),
		RemovalPolicy:      removal(dev),
	})
	for _, gsi := range spec.GlobalSecondaryIndexes {
		p := &awsdynamodb.GlobalSecondaryIndexProps{
			IndexName:      gsi.IndexName,
			PartitionKey:   key(gsi.KeySchema, types.KeyTypeHash),
			SortKey:        key(gsi.KeySchema, types.KeyTypeRange),
			ProjectionType: awsdynamodb.ProjectionType(gsi.Projection.ProjectionType),
		}
		if len(gsi.Projection.NonKeyAttributes) > 0 {
			p.NonKeyAttributes = jsii.Strings(gsi.Projection.NonKeyAttributes...)
		}
		table.AddGlobalSecondaryIndex(p)
	}
	return table
}

// grantData gives f the item actions it uses, on the table and the named indexes only:
// Query for reads, PutItem/UpdateItem for facts and projections, DeleteItem for releasing
// a target lock (only writers of terminal facts). No Scan, no batch, no wildcard.
func grantData(table awsdynamodb.Table, f awslambda.Function, terminal bool, indexes ...string) {
	actions := []string{"dynamodb:Query", "dynamodb:PutItem", "dynamodb:UpdateItem"}
	if terminal {
		actions = append(actions, "dynamodb:DeleteItem")
	}
	resources := []*string{table.TableArn()}
	for _, ix := range indexes {
		resources = append(resources, jsii.String(*table.TableArn()+"/index/"+ix))
	}
	f.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions: jsii.Strings(actions...), Resources: &resources,
	}))
}

// grantExecutions lets f start executions of the workflows, and describe and stop them.
func grantExecutions(stack awscdk.Stack, f awslambda.Function, machines map[string]awsstepfunctions.StateMachine, names []string) {
	var starts, executions []*string
	for _, n := range names {
		starts = append(starts, machines[n].StateMachineArn())
		executions = append(executions, stack.FormatArn(&awscdk.ArnComponents{
			Service: jsii.String("states"), Resource: jsii.String("execution"),
			ResourceName: jsii.String(*machines[n].StateMachineName() + ":*"), ArnFormat: awscdk.ArnFormat_COLON_RESOURCE_NAME,
		}))
	}
	f.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions: jsii.Strings("states:StartExecution"), Resources: &starts,
	}))
	f.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions: jsii.Strings("states:DescribeExecution", "states:StopExecution"), Resources: &executions,
	}))
}

// mapping attaches a stream event source with the settings of internal/aws/eventsource.
func mapping(f awslambda.Function, table awsdynamodb.Table, m eventsource.Mapping, dlq awssqs.Queue) {
	var pattern map[string]interface{}
	if err := json.Unmarshal([]byte(m.Filter), &pattern); err != nil {
		panic(fmt.Sprintf("stack: filter of %s: %v", m.Function, err))
	}
	props := &awslambdaeventsources.DynamoEventSourceProps{
		StartingPosition:        awslambda.StartingPosition(m.StartingPosition),
		BatchSize:               jsii.Number(float64(m.BatchSize)),
		BisectBatchOnError:      jsii.Bool(m.BisectOnError),
		RetryAttempts:           jsii.Number(float64(m.MaxRetries)),
		ReportBatchItemFailures: jsii.Bool(m.ReportBatchItemFailures),
		OnFailure:               awslambdaeventsources.NewSqsDlq(dlq),
		Filters:                 &[]*map[string]interface{}{awslambda.FilterCriteria_Filter(&pattern)},
	}
	if m.MaxBatchingWindow > 0 {
		props.MaxBatchingWindow = awscdk.Duration_Millis(jsii.Number(float64(m.MaxBatchingWindow.Milliseconds())))
	}
	f.AddEventSource(awslambdaeventsources.NewDynamoEventSource(table, props))
}

func removal(dev bool) awscdk.RemovalPolicy {
	if dev {
		return awscdk.RemovalPolicy_DESTROY
	}
	return awscdk.RemovalPolicy_RETAIN
}

// title turns "worker-demo-task" into "WorkerDemoTask" for construct ids.
func title(s string) string {
	out := []byte{}
	up := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '-' || c == '.' {
			up = true
			continue
		}
		if up && c >= 'a' && c <= 'z' {
			c -= 'a' - 'A'
		}
		up = false
		out = append(out, c)
	}
	return string(out)
}
