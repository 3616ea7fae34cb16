package construct

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigateway"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscognito"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdaeventsources"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsstepfunctions"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/longrun-dev/longrun/internal/aws/cdkid"
	"github.com/longrun-dev/longrun/internal/aws/dynamo"
	"github.com/longrun-dev/longrun/internal/aws/eventsource"
	"github.com/longrun-dev/longrun/internal/aws/sizing"
	"github.com/longrun-dev/longrun/internal/service/notify"
)

// Longrun is one longrun deployment in a CDK app: what New created, for the app to wire
// further (outputs, alarms' actions, permissions of its own).
type Longrun struct {
	constructs.Construct

	// API is the REST API (stage Props.Stage); APIURL its URL, …/<stage>/ (the contract's
	// paths start with v1/). Every method is authorized but POST /v1/callbacks/{token} (and
	// the ANY beside it), whose token is its credential, and GET and HEAD of the console's
	// files (/console and below, public: ConsoleURL); the recorder hands callback URLs out
	// under APIURL (LONGRUN_CALLBACK_BASE).
	API    awsapigateway.RestApi
	APIURL *string
	// Table is longrun's DynamoDB table. Only longrun's functions use it.
	Table awsdynamodb.Table
	// Bus is where "Operation State Changed" events are published: Props.EventBus or the
	// bus New created.
	Bus awsevents.IEventBus
	// StateMachines are the workflows by worker name, one per worker: the dispatcher starts
	// an operation's first execution on its type's.
	StateMachines map[string]awsstepfunctions.StateMachine
	// ResumeStateMachines are the workflows' resume state machines by worker name (the same
	// definition with a Pause first): the recorder goes on with an operation on its type's
	// after a wait.
	ResumeStateMachines map[string]awsstepfunctions.StateMachine
	// Functions are longrun's own functions: "api", "dispatcher", "notifier", "recorder"
	// and "reconciler" (the workers are the app's).
	Functions map[string]awslambda.Function
	// DeadLetterQueues are the stream consumers' on-failure queues: "dispatcher" (also the
	// reconciler's) and "notifier".
	DeadLetterQueues map[string]awssqs.Queue
	// SealSecret keys the seals by which the recorder and the reconciler take back only what
	// longrun made (docs/security.md, "What the recorder trusts"), the dispatcher's input of
	// an execution that wakes work waiting for a signal, and the callback URLs' tokens the
	// api function checks ("Callback URLs"). Only those four functions may read it.
	SealSecret awssecretsmanager.Secret
	// TypesLayer holds the definitions files on /opt; nil for the built-in types.
	TypesLayer awslambda.LayerVersion
	// UserPool authorizes the API with Cognito (Props.Cognito's pool or the one New
	// created); nil with IAM. UserPoolClient is the app client New created with the pool;
	// nil otherwise.
	UserPool       awscognito.IUserPool
	UserPoolClient awscognito.UserPoolClient
	// ConsoleURL is the operations console's URL, …/<stage>/console/ (nil with
	// Props.Console.Disabled). With a pool New created, the console signs in through
	// UserPoolDomain's hosted UI as ConsoleClient (whose callback and logout URL is
	// ConsoleURL); both are nil otherwise.
	ConsoleURL     *string
	UserPoolDomain awscognito.UserPoolDomain
	ConsoleClient  awscognito.UserPoolClient
	// TypesFiles are LONGRUN_TYPES_FILE's paths on Lambda; none for the built-in types.
	TypesFiles []string
	// Dashboard shows longrun's metrics (longrun-<Stage>-dashboard): docs/observability.md.
	Dashboard awscloudwatch.Dashboard
}

// New defines a longrun deployment in scope. It panics, stopping synthesis, on props that
// would deploy something other than was meant: an invalid definitions file (the message
// names the file, type and field), a worker of the types without a function in
// props.Workers or a function for no worker, a worker whose timeout is shorter than its
// types' stepTimeout or that configures its own asynchronous invocation, or contradicting
// settings.
func New(scope constructs.Construct, id string, props *Props) *Longrun {
	if props == nil {
		panic("longrun construct: props are required (Stage, CodeDir and Workers)")
	}
	if err := props.check(); err != nil {
		panic("longrun construct: " + err.Error())
	}
	served, err := loadTypes(props)
	if err != nil {
		panic("longrun construct: the operation types: " + err.Error())
	}
	if err := served.checkWorkers(props.Workers); err != nil {
		panic("longrun construct: the workers:\n" + err.Error())
	}

	lr := &Longrun{Functions: map[string]awslambda.Function{},
		StateMachines: map[string]awsstepfunctions.StateMachine{}, ResumeStateMachines: map[string]awsstepfunctions.StateMachine{}, DeadLetterQueues: map[string]awssqs.Queue{}}
	// Registered with jsii as a construct of its own, so the app may use it as a scope (jsii
	// wants *Longrun to have a method of its own: GrantCall is).
	constructs.NewConstruct_Override(lr, scope, jsii.String(id))

	// Each step reads what the steps before it built: the recorder comes before the
	// workflows (they invoke it), the workflows before the functions that start them.
	b := newBuilder(lr, props, served)
	b.storage()          // the table, the bus, the dead-letter queues
	b.shared()           // what every function gets: environment, layers, sizes, tracing
	b.recorder()         // the recorder and its grants on the workflows (by name)
	b.workflows()        // two state machines per worker, and the workers' destinations
	b.functions()        // the api (and its user pool), dispatcher, notifier, reconciler
	b.grants()           // the functions' grants on the table, workflows, queue and bus
	b.streams()          // the table's stream mappings
	b.schedule()         // the reconciler's schedule
	b.api()              // the REST API
	b.console()          // the console's sign-in: its hosted UI domain and app client
	b.alarms()           // alarms on errors, dead letters and log lines
	b.metricAlarms()     // alarms on longrun's metrics
	b.dashboard()        // the dashboard
	b.suppressFindings() // cdk-nag findings decided against, with reasons
	return lr
}

// FunctionRole is a role for a Lambda function whose logs go to logs: it may write to that
// log group and no other, where AWSLambdaBasicExecutionRole (the role CDK makes by itself)
// lets a function write to every log group of the account, so a worker could write metric
// lines into longrun's log groups, which feed its alarms. Its id is <id>ServiceRole, the
// logical id prefix of the role CDK would make for the function <id>. The function's other
// permissions are added to it as usual (grants, tracing). It is exported for the app's own
// workers, which should have such a role too (docs/adopting.md; infra/stack gives its
// built-in workers one).
func FunctionRole(scope constructs.Construct, id string, logs awslogs.ILogGroup) awsiam.Role {
	role := awsiam.NewRole(scope, jsii.String(id+"ServiceRole"), &awsiam.RoleProps{
		AssumedBy: awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil),
	})
	logs.GrantWrite(role)
	return role
}

// GrantCall lets grantee call the API when it authorizes with IAM: execute-api:Invoke on
// every method and path of its stage (the API's answers then depend on who calls:
// docs/idempotency.md). With Cognito the caller needs an ID token instead, and the grant
// changes nothing.
func (lr *Longrun) GrantCall(grantee awsiam.IGrantable) awsiam.Grant {
	return awsiam.Grant_AddToPrincipal(&awsiam.GrantOnPrincipalOptions{
		Grantee:      grantee,
		Actions:      jsii.Strings("execute-api:Invoke"),
		ResourceArns: &[]*string{lr.API.ArnForExecuteApi(jsii.String("*"), jsii.String("/*"), lr.API.DeploymentStage().StageName())},
	})
}

// grantInvoke lets the recorder invoke a worker, and nothing else of it: a function of the
// app grants it itself (GrantInvoke, which also handles another account); for an imported
// one, whose permissions the construct cannot change, the grant is the recorder role's
// policy alone (on the function and its versions and aliases, as GrantInvoke's), and the
// function's own account must allow the role when it is another.
func grantInvoke(worker awslambda.IFunction, recorder awslambda.Function) {
	if f, ok := worker.(awslambda.Function); ok {
		f.GrantInvoke(recorder)
		return
	}
	awsiam.Grant_AddToPrincipal(&awsiam.GrantOnPrincipalOptions{
		Grantee:      recorder,
		Actions:      jsii.Strings("lambda:InvokeFunction"),
		ResourceArns: &[]*string{worker.FunctionArn(), jsii.String(*worker.FunctionArn() + ":*")},
	})
}

// sendSteps configures how Lambda runs the steps the recorder sends worker asynchronously:
// how each ended goes to the recorder (on success and on failure, with the request), a
// failed step is never run again (it may have acted: the recorder records its outcome as
// unknown), and a step Lambda cannot run is kept queued for sizing.WorkerMaxEventAge. A
// worker may have no other event invoke config.
//
// Lambda invokes a destination as the worker's execution role, so the recorder's resource
// policy allows that role: a grant on the role instead would make the worker depend on the
// recorder, which already depends on the worker (it invokes it), a cycle. An imported
// worker without a role must be allowed by its owner.
func sendSteps(c constructs.Construct, w string, worker awslambda.IFunction, recorder awslambda.Function) {
	to := &awslambda.CfnEventInvokeConfig_DestinationConfigProperty{
		OnSuccess: &awslambda.CfnEventInvokeConfig_OnSuccessProperty{Destination: recorder.FunctionArn()},
		OnFailure: &awslambda.CfnEventInvokeConfig_OnFailureProperty{Destination: recorder.FunctionArn()},
	}
	awslambda.NewCfnEventInvokeConfig(c, jsii.String(cdkid.Title(w)+"Steps"), &awslambda.CfnEventInvokeConfigProps{
		FunctionName:             worker.FunctionName(),
		Qualifier:                jsii.String("$LATEST"),
		DestinationConfig:        to,
		MaximumRetryAttempts:     jsii.Number(sizing.WorkerRetryAttempts),
		MaximumEventAgeInSeconds: jsii.Number(sizing.WorkerMaxEventAge.Seconds()),
	})
	if role := worker.Role(); role != nil {
		recorder.AddPermission(jsii.String(cdkid.Title(w)+"Delivers"), &awslambda.Permission{
			Principal: awsiam.NewArnPrincipal(role.RoleArn()),
			Action:    jsii.String("lambda:InvokeFunction"),
		})
	}
}

// guardBus denies everyone but the notifier (and the configured publishers, e.g. who runs
// `longrun republish`) putting events with longrun's source on the bus: consumers trust
// source "longrun", so nobody else in the account may forge it. A Deny in the bus's
// resource policy wins over any identity policy that allows events:PutEvents.
func guardBus(scope constructs.Construct, bus awsevents.IEventBus, notifier awslambda.Function, publishers []string) {
	allowed := []*string{notifier.Role().RoleArn()}
	for _, p := range publishers {
		allowed = append(allowed, jsii.String(p))
	}
	const sid = "OnlyLongrunPublishesLongrunEvents"
	condition := map[string]interface{}{
		"StringEquals": map[string]interface{}{"events:source": notify.Source},
		"ArnNotEquals": map[string]interface{}{"aws:PrincipalArn": allowed},
	}
	if created, ok := bus.(awsevents.EventBus); ok {
		created.AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:        jsii.String(sid),
			Effect:     awsiam.Effect_DENY,
			Principals: &[]awsiam.IPrincipal{awsiam.NewAnyPrincipal()},
			Actions:    jsii.Strings("events:PutEvents"),
			Resources:  &[]*string{bus.EventBusArn()},
			Conditions: &condition,
		}))
		return
	}
	// A bus the app imported: the statement on its own, beside the bus's other statements.
	awsevents.NewCfnEventBusPolicy(scope, jsii.String("BusGuard"), &awsevents.CfnEventBusPolicyProps{
		EventBusName: bus.EventBusName(),
		StatementId:  jsii.String(sid),
		Statement: map[string]interface{}{
			"Sid": sid, "Effect": "Deny", "Principal": map[string]interface{}{"AWS": "*"},
			"Action": "events:PutEvents", "Resource": bus.EventBusArn(), "Condition": condition,
		},
	})
}

// table mirrors dynamo.TableSpec, the definition the local stack and tests create.
func (b *builder) table() awsdynamodb.Table {
	scope, props := b.c, b.props
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
	// existing one (TableKey) or one the construct creates.
	encryption, kmsKey := awsdynamodb.TableEncryption_DEFAULT, awskms.IKey(nil)
	if props.customerKey() {
		encryption = awsdynamodb.TableEncryption_CUSTOMER_MANAGED
		kmsKey = props.TableKey
		if kmsKey == nil {
			kmsKey = awskms.NewKey(scope, jsii.String("TableKey"), &awskms.KeyProps{
				Alias:             jsii.String("alias/longrun-" + props.Stage + "-table"),
				Description:       jsii.String("longrun " + props.Stage + ": the table's encryption at rest"),
				EnableKeyRotation: jsii.Bool(true),
				PendingWindow:     awscdk.Duration_Days(jsii.Number(30)),
				RemovalPolicy:     b.removal(),
			})
		}
	}
	table := awsdynamodb.NewTable(scope, jsii.String("Table"), &awsdynamodb.TableProps{
		TableName:           jsii.String("longrun-" + props.Stage),
		PartitionKey:        key(spec.KeySchema, types.KeyTypeHash),
		SortKey:             key(spec.KeySchema, types.KeyTypeRange),
		BillingMode:         awsdynamodb.BillingMode_PAY_PER_REQUEST,
		Stream:              awsdynamodb.StreamViewType_NEW_AND_OLD_IMAGES,
		TimeToLiveAttribute: jsii.String("expires_at"),
		PointInTimeRecoverySpecification: &awsdynamodb.PointInTimeRecoverySpecification{
			PointInTimeRecoveryEnabled: jsii.Bool(true),
		},
		DeletionProtection: jsii.Bool(!b.dev),
		RemovalPolicy:      b.removal(),
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

// grantData gives f the item actions a writer of facts uses, on the table and the named
// indexes only: GetItem for reading an operation (its projection, and its accepted fact
// when the projection leaves the admission out), Query for the indexes and an operation's
// facts, PutItem/UpdateItem for facts and projections, DeleteItem for releasing a target
// lock (the dispatcher, the recorder and the reconciler all write terminal facts, which
// release it). No Scan, no batch, no wildcard. (TransactWriteItems has no action of its
// own: each item is authorized as its Put, Update or Delete.)
func grantData(table awsdynamodb.Table, f awslambda.Function, indexes ...string) {
	grantItems(table, f, []string{"dynamodb:GetItem", "dynamodb:Query", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"}, indexes...)
}

// grantAdmission is the API's: grantData's on the table and its scope index, the reads
// beside the admission transaction (GetItem of the key's record, BatchGetItem of the quota
// counters when a quota's shard is full), and the operators' reads across tenants: the
// attention index (GET /v1/attention) and the due index, whose operations' states
// BatchGetItem reads (GET /v1/stats, docs/operator-api.md).
func grantAdmission(table awsdynamodb.Table, f awslambda.Function) {
	grantItems(table, f, []string{"dynamodb:Query", "dynamodb:GetItem", "dynamodb:BatchGetItem",
		"dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"}, dynamo.IndexByScope, dynamo.IndexAttention, dynamo.IndexDue)
}

func grantItems(table awsdynamodb.Table, f awslambda.Function, actions []string, indexes ...string) {
	resources := []*string{table.TableArn()}
	for _, ix := range indexes {
		resources = append(resources, jsii.String(*table.TableArn()+"/index/"+ix))
	}
	f.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{Actions: jsii.Strings(actions...), Resources: &resources}))
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

// grantExecutionKey lets f use key, when the workflows' histories are encrypted with it (nil:
// they are not), for the executions of the workflows machines only: starting one encrypts
// its input, describing one decrypts its input and output. Step Functions names the state
// machine in the encryption context of every use.
func grantExecutionKey(f awslambda.Function, key awskms.IKey, machines []*string) {
	if key == nil {
		return
	}
	f.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:    jsii.Strings("kms:Decrypt", "kms:GenerateDataKey"),
		Resources:  &[]*string{key.KeyArn()},
		Conditions: &map[string]interface{}{"StringEquals": map[string]interface{}{"kms:EncryptionContext:aws:states:stateMachineArn": machines}},
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
		panic(fmt.Sprintf("longrun construct: filter of %s: %v", m.Function, err))
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

func sorted[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
