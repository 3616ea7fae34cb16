// Package stack is longrun's AWS CDK stack: the table, the functions, their stream mappings,
// the workflows, the REST API (and, with Cognito, its user pool), the event bus, the
// reconciler's schedule, dead-letter queues and alarms. Its settings come from the same Go
// sources the local stack uses: the table from dynamo.TableSpec, the mappings from
// eventsource.Mappings, the workflow from stepfunctions.Template, the operation types from
// optype.Deployed.
package stack

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awseventstargets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
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
	"github.com/longrun-dev/longrun/internal/service/notify"
)

// Function settings per function: memory (MB) and timeout (s). Workers run one step per
// invocation; their timeout is their types' stepTimeout.
var functionSettings = map[string][2]float64{
	"api":        {512, 10},
	"dispatcher": {256, 60},
	"notifier":   {256, 60},
	"recorder":   {256, 30},
	"reconciler": {256, 120},
}

const workerSettingsMemory = 512

// reservedConcurrency is what the functions that move work forward keep for themselves, so
// that a flood of API calls or worker steps cannot starve them of the account's
// concurrency: the dispatcher and notifier (stream consumers: one concurrent batch per
// shard), the recorder (one call per execution's end) and the reconciler (a schedule; one
// run at a time). It is also each one's ceiling. The API and the workers share the rest.
var reservedConcurrency = map[string]float64{
	"dispatcher": 20,
	"notifier":   20,
	"recorder":   20,
	"reconciler": 1,
}

// New defines the stack.
func New(scope constructs.Construct, id string, props *Props) awscdk.Stack {
	if err := props.check(); err != nil {
		panic(err)
	}
	arch, _ := lambdaArchitecture(props.Architecture)
	stack := awscdk.NewStack(scope, jsii.String(id), &props.StackProps)
	name := func(s string) *string { return jsii.String("longrun-" + props.Stage + "-" + s) }
	dev := props.Stage == "dev"
	registry := optype.Deployed(props.demoTypes())

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

	// Every function serves the same operation types (config.Function.Registry).
	env := map[string]*string{
		"LONGRUN_TABLE":      table.TableName(),
		"LONGRUN_DEMO_TYPES": jsii.String(strconv.FormatBool(props.demoTypes())),
	}
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
		var reserved *float64
		if n, ok := reservedConcurrency[fname]; ok && !props.NoReservedConcurrency {
			reserved = jsii.Number(n)
		}
		f := awslambda.NewFunction(stack, jsii.String(title(fname)), &awslambda.FunctionProps{
			FunctionName:                 name(fname),
			Runtime:                      awslambda.Runtime_PROVIDED_AL2023(),
			Architecture:                 arch,
			Handler:                      jsii.String("bootstrap"),
			Code:                         awslambda.Code_FromAsset(jsii.String(filepath.Join(props.CodeDir, fname+".zip")), nil),
			MemorySize:                   jsii.Number(memory),
			Timeout:                      awscdk.Duration_Seconds(jsii.Number(timeout)),
			Environment:                  &vars,
			LogGroup:                     logs,
			LoggingFormat:                awslambda.LoggingFormat_JSON,
			ReservedConcurrentExecutions: reserved,
		})
		fns[fname] = f
		return f
	}

	// Workers and the recorder first: the workflows need them, the dispatcher needs the
	// workflows. Only the types the stage serves get a workflow and a worker.
	recorder := fn("recorder", functionSettings["recorder"][0], functionSettings["recorder"][1], nil)
	machines := map[string]awsstepfunctions.StateMachine{}
	var executorNames []string
	for _, w := range registry.Workers() {
		// A worker's function may run as long as the longest step of the types it serves:
		// the workflow gives each step the type's stepTimeout (TimeoutSecondsPath), and the
		// function's own timeout ends the invocation at the same bound.
		timeout := 0.0
		for _, t := range registry.Types() {
			if t.Worker == w {
				timeout = max(timeout, t.StepTimeout.Seconds())
			}
		}
		worker := fn(stepfunctions.FunctionName(w), workerSettingsMemory, timeout, nil)
		sm := awsstepfunctions.NewStateMachine(stack, jsii.String(title(w)+"Workflow"), &awsstepfunctions.StateMachineProps{
			StateMachineName: name(w),
			StateMachineType: awsstepfunctions.StateMachineType_STANDARD,
			DefinitionBody:   awsstepfunctions.DefinitionBody_FromString(jsii.String(stepfunctions.Template())),
			DefinitionSubstitutions: &map[string]*string{
				stepfunctions.WorkerFunctionArn:   worker.FunctionArn(),
				stepfunctions.RecorderFunctionArn: recorder.FunctionArn(),
			},
		})
		worker.GrantInvoke(sm)
		recorder.GrantInvoke(sm)
		machines[w] = sm
		executorNames = append(executorNames, w)
	}
	sort.Strings(executorNames)
	arns := map[string]interface{}{}
	for _, e := range executorNames {
		arns[e] = machines[e].StateMachineArn()
	}
	machinesJSON := stack.ToJsonString(arns, nil)

	users := newUserPool(stack, props, dev, name)
	apiEnv := map[string]*string{}
	if users != nil {
		apiEnv["LONGRUN_COGNITO_CLIENT_IDS"] = users.clientIDs
	}
	if len(props.OperatorPrincipals) > 0 {
		apiEnv["LONGRUN_OPERATOR_PRINCIPALS"] = jsii.String(strings.Join(props.OperatorPrincipals, ","))
	}
	if props.TenantQuota != nil {
		apiEnv["LONGRUN_QUOTA"] = jsii.String(strconv.Itoa(*props.TenantQuota))
	}
	if props.PrincipalQuota != nil {
		apiEnv["LONGRUN_PRINCIPAL_QUOTA"] = jsii.String(strconv.Itoa(*props.PrincipalQuota))
	}
	api := fn("api", functionSettings["api"][0], functionSettings["api"][1], apiEnv)
	dispatcher := fn("dispatcher", functionSettings["dispatcher"][0], functionSettings["dispatcher"][1], map[string]*string{
		"LONGRUN_STATE_MACHINES": machinesJSON, "LONGRUN_DEAD_LETTER_QUEUE_URL": dlqs["dispatcher"].QueueUrl(),
	})
	notifier := fn("notifier", functionSettings["notifier"][0], functionSettings["notifier"][1], map[string]*string{
		"LONGRUN_EVENT_BUS": bus.EventBusName(),
	})
	reconciler := fn("reconciler", functionSettings["reconciler"][0], functionSettings["reconciler"][1], map[string]*string{
		"LONGRUN_STATE_MACHINES": machinesJSON, "LONGRUN_DEAD_LETTER_QUEUE_URL": dlqs["dispatcher"].QueueUrl(),
	})

	grantAdmission(table, api)
	grantData(table, dispatcher, true)
	grantData(table, recorder, true)
	// The reconciler reads the due index (its work) and the attention index (its count of
	// operations waiting for an operator).
	grantData(table, reconciler, true, dynamo.IndexDue, dynamo.IndexAttention)
	for _, e := range executorNames {
		grantWorker(table, fns[stepfunctions.FunctionName(e)])
	}
	for _, f := range []awslambda.Function{dispatcher, reconciler} {
		grantExecutions(stack, f, machines, executorNames)
		dlqs["dispatcher"].GrantSendMessages(f)
	}
	bus.GrantPutEventsTo(notifier, nil)
	guardBus(bus, notifier, props.EventPublishers)

	for _, m := range eventsource.Mappings() {
		mapping(fns[m.Function], table, m, dlqs[m.Function])
	}

	awsevents.NewRule(stack, jsii.String("ReconcileSchedule"), &awsevents.RuleProps{
		RuleName: name("reconcile"),
		Schedule: awsevents.Schedule_Rate(awscdk.Duration_Minutes(jsii.Number(1))),
		Targets:  &[]awsevents.IRuleTarget{awseventstargets.NewLambdaFunction(reconciler, nil)},
	})

	restAPI := newAPI(stack, props, dev, api, users, name)
	alarms(stack, props, fns, dlqs, machines, name)

	awscdk.NewCfnOutput(stack, jsii.String("ApiUrl"), &awscdk.CfnOutputProps{Value: restAPI.Url()})
	awscdk.NewCfnOutput(stack, jsii.String("TableName"), &awscdk.CfnOutputProps{Value: table.TableName()})
	awscdk.NewCfnOutput(stack, jsii.String("EventBusName"), &awscdk.CfnOutputProps{Value: bus.EventBusName()})
	if users != nil && users.created != nil {
		awscdk.NewCfnOutput(stack, jsii.String("UserPoolId"), &awscdk.CfnOutputProps{Value: users.created.UserPoolId()})
		awscdk.NewCfnOutput(stack, jsii.String("UserPoolClientId"), &awscdk.CfnOutputProps{Value: users.clientIDs})
	}
	// What the end-to-end suite needs to run against a deployed stage (localstack/test.sh).
	awscdk.NewCfnOutput(stack, jsii.String("StateMachines"), &awscdk.CfnOutputProps{Value: machinesJSON})
	awscdk.NewCfnOutput(stack, jsii.String("FunctionPrefix"), &awscdk.CfnOutputProps{Value: jsii.String("longrun-" + props.Stage + "-")})
	return stack
}

// guardBus denies everyone but the notifier (and the configured publishers, e.g. who runs
// `longrun republish`) putting events with longrun's source on the bus: consumers trust
// source "longrun", so nobody else in the account may forge it. A Deny in the bus's
// resource policy wins over any identity policy that allows events:PutEvents.
func guardBus(bus awsevents.EventBus, notifier awslambda.Function, publishers []string) {
	allowed := []*string{notifier.Role().RoleArn()}
	for _, p := range publishers {
		allowed = append(allowed, jsii.String(p))
	}
	bus.AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String("OnlyLongrunPublishesLongrunEvents"),
		Effect:     awsiam.Effect_DENY,
		Principals: &[]awsiam.IPrincipal{awsiam.NewAnyPrincipal()},
		Actions:    jsii.Strings("events:PutEvents"),
		Resources:  &[]*string{bus.EventBusArn()},
		Conditions: &map[string]interface{}{
			"StringEquals": map[string]interface{}{"events:source": notify.Source},
			"ArnNotEquals": map[string]interface{}{"aws:PrincipalArn": allowed},
		},
	}))
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
	// Encryption at rest: an AWS owned key unless a customer managed key is asked for, an
	// existing one (tableKmsKeyArn) or one the stack creates (tableEncryption=customer).
	encryption, kmsKey := awsdynamodb.TableEncryption_DEFAULT, awskms.IKey(nil)
	if props.customerKey() {
		encryption = awsdynamodb.TableEncryption_CUSTOMER_MANAGED
		if props.TableKMSKeyArn != "" {
			kmsKey = awskms.Key_FromKeyArn(stack, jsii.String("TableKey"), jsii.String(props.TableKMSKeyArn))
		} else {
			kmsKey = awskms.NewKey(stack, jsii.String("TableKey"), &awskms.KeyProps{
				Alias:             jsii.String("alias/longrun-" + props.Stage + "-table"),
				Description:       jsii.String("longrun " + props.Stage + ": the table's encryption at rest"),
				EnableKeyRotation: jsii.Bool(true),
				PendingWindow:     awscdk.Duration_Days(jsii.Number(30)),
				RemovalPolicy:     removal(dev),
			})
		}
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
		Encryption:         encryption,
		EncryptionKey:      kmsKey,
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
// (TransactWriteItems has no action of its own: each item is authorized as its Put,
// Update or Delete.)
func grantData(table awsdynamodb.Table, f awslambda.Function, terminal bool, indexes ...string) {
	actions := []string{"dynamodb:Query", "dynamodb:PutItem", "dynamodb:UpdateItem"}
	if terminal {
		actions = append(actions, "dynamodb:DeleteItem")
	}
	grantItems(table, f, actions, nil, indexes...)
}

// grantAdmission is the API's: grantData's on the table and its scope index, and the reads
// beside the admission transaction (GetItem of the key's record, BatchGetItem of the quota
// counters when a quota's shard is full).
func grantAdmission(table awsdynamodb.Table, f awslambda.Function) {
	grantItems(table, f, []string{"dynamodb:Query", "dynamodb:GetItem", "dynamodb:BatchGetItem",
		"dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"}, nil, dynamo.IndexByScope)
}

// OperationKeys is the partition keys of operations' items (their facts and projection):
// "OP#<operation id>" (internal/aws/dynamo; a test checks it against dynamo.StreamFact).
const OperationKeys = "OP#*"

// grantWorker is a worker's least: it reads its operation's facts (Query) and appends
// "started" (a conditional Put of the fact and Update of the projection in one
// transaction), never a terminal fact, so it deletes nothing, reads no index and writes
// only operations' items: dynamodb:LeadingKeys must match OP#*. (Which operation cannot be
// a condition: the id is the execution's input, not a key IAM knows.)
func grantWorker(table awsdynamodb.Table, f awslambda.Function) {
	grantItems(table, f, []string{"dynamodb:Query", "dynamodb:PutItem", "dynamodb:UpdateItem"},
		map[string]interface{}{"ForAllValues:StringLike": map[string]interface{}{"dynamodb:LeadingKeys": []string{OperationKeys}}})
}

func grantItems(table awsdynamodb.Table, f awslambda.Function, actions []string, conditions map[string]interface{}, indexes ...string) {
	resources := []*string{table.TableArn()}
	for _, ix := range indexes {
		resources = append(resources, jsii.String(*table.TableArn()+"/index/"+ix))
	}
	st := &awsiam.PolicyStatementProps{Actions: jsii.Strings(actions...), Resources: &resources}
	if conditions != nil {
		st.Conditions = &conditions
	}
	f.AddToRolePolicy(awsiam.NewPolicyStatement(st))
	// A customer managed key: what DynamoDB needs of the caller to use it, on that key only
	// (the stream mappings get theirs from CDK).
	if key := table.EncryptionKey(); key != nil {
		f.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions: jsii.Strings("kms:Decrypt", "kms:DescribeKey", "kms:Encrypt", "kms:GenerateDataKey",
				"kms:GenerateDataKeyWithoutPlaintext", "kms:ReEncryptFrom", "kms:ReEncryptTo"),
			Resources: &[]*string{key.KeyArn()},
		}))
	}
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
