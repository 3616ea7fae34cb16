package construct

import (
	"math"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigateway"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awseventstargets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsstepfunctions"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/longrun-dev/longrun/internal/aws/cdkid"
	"github.com/longrun-dev/longrun/internal/aws/dynamo"
	"github.com/longrun-dev/longrun/internal/aws/eventsource"
	"github.com/longrun-dev/longrun/internal/aws/sizing"
	"github.com/longrun-dev/longrun/internal/aws/stepfunctions"
)

// builder builds one deployment for New: the scope and props, and what the steps before
// built, so that each step is a method reading what it needs by name. Every resource is
// created in the Longrun itself (c), and its construct id gives its logical id: a step
// must keep the ids it creates, or a deployed stage would replace its resources.
type builder struct {
	lr     *Longrun
	c      constructs.Construct // lr, the scope of every resource
	stack  awscdk.Stack
	props  *Props
	served served
	arch   awslambda.Architecture
	// dev is the "dev" stage, whose resources go with the stack, data included.
	dev bool

	// shared: what every longrun function gets.
	metrics metrics
	trace   tracing
	env     map[string]*string
	layers  []awslambda.ILayerVersion
	sizes   map[string]sizing.Function

	// recorder: the workers served, and the state machines' ARNs formatted from their names
	// (the recorder may not refer to the workflows, which refer to it).
	workers []string
	// workflowArns are the workflows' own state machines; restartArns those and the resume
	// state machines (what the recorder and the reconciler start); restartExecutions the
	// executions of all of them.
	workflowArns, restartArns, restartExecutions []*string
	// key is the table's customer managed key (nil: an AWS owned one), which encrypts the
	// workflows' execution histories too.
	key awskms.IKey

	// workflows: the state machines' ARNs as LONGRUN_STATE_MACHINES (JSON).
	machinesJSON *string
	// functions: the Cognito side, nil with IAM authorization.
	users *userPool
	// schedule: the reconciler's.
	reconcileSchedule awsevents.Rule
	// api: the methods API Gateway does not authorize, the callback URLs' (their token is
	// their credential, which the api function checks).
	callbackMethods []awsapigateway.Method
	// consoleMethods are the console's files' (GET and HEAD of /console and below: public).
	consoleMethods []awsapigateway.Method
}

func newBuilder(lr *Longrun, props *Props, served served) *builder {
	arch := props.Architecture
	if arch == nil {
		arch = awslambda.Architecture_ARM_64()
	}
	return &builder{lr: lr, c: lr, stack: awscdk.Stack_Of(lr), props: props, served: served, arch: arch,
		dev: props.Stage == "dev", workers: served.registry.Workers()}
}

// name is a resource's name: longrun-<Stage>-<s>.
func (b *builder) name(s string) *string { return jsii.String("longrun-" + b.props.Stage + "-" + s) }

// removal is what deleting the stack does to data and logs: on dev they go with it.
func (b *builder) removal() awscdk.RemovalPolicy {
	if b.dev {
		return awscdk.RemovalPolicy_DESTROY
	}
	return awscdk.RemovalPolicy_RETAIN
}

// storage is the table, the bus (the app's or a new one) and the stream consumers'
// dead-letter queues.
func (b *builder) storage() {
	b.lr.Table = b.table()
	if b.props.EventBus != nil {
		b.lr.Bus = b.props.EventBus
	} else {
		b.lr.Bus = awsevents.NewEventBus(b.c, jsii.String("Bus"), &awsevents.EventBusProps{EventBusName: b.name("events")})
	}
	for _, q := range []string{"dispatcher", "notifier"} {
		b.lr.DeadLetterQueues[q] = awssqs.NewQueue(b.c, jsii.String(cdkid.Title(q)+"DeadLetters"), &awssqs.QueueProps{
			QueueName:       b.name(q + "-dlq"),
			RetentionPeriod: awscdk.Duration_Days(jsii.Number(14)),
			Encryption:      awssqs.QueueEncryption_SQS_MANAGED,
			EnforceSSL:      jsii.Bool(true),
		})
	}
}

// shared is what every longrun function gets. Every one serves the same operation types
// (internal/aws/config, Types): the same files (the layer) and the same demo setting. Its
// metrics carry the stage, so the dashboard and alarms can name them exactly (a CloudWatch
// metric is its whole dimension set), and it traces as the options say.
func (b *builder) shared() {
	b.metrics = newMetrics(b.props)
	b.trace = newTracing(b.c, b.props.Tracing, b.arch)
	b.env = map[string]*string{
		"LONGRUN_TABLE":              b.lr.Table.TableName(),
		"LONGRUN_DEMO_TYPES":         jsii.String(strconv.FormatBool(b.props.DemoTypes)),
		"LONGRUN_METRICS_NAMESPACE":  jsii.String(b.metrics.namespace),
		"LONGRUN_METRICS_DIMENSIONS": jsii.String(b.metrics.dimensionsEnv()),
	}
	for k, v := range b.trace.env {
		b.env[k] = v
	}
	if len(b.served.paths) > 0 {
		dir, files, err := stageTypes(b.served.paths)
		if err != nil {
			panic("longrun construct: staging the types layer: " + err.Error())
		}
		b.lr.TypesLayer = awslambda.NewLayerVersion(b.c, jsii.String("TypesLayer"), &awslambda.LayerVersionProps{
			LayerVersionName:        b.name("types"),
			Description:             jsii.String("longrun " + b.props.Stage + ": the operation types (" + strings.Join(files, ", ") + ")"),
			Code:                    awslambda.Code_FromAsset(jsii.String(dir), nil),
			CompatibleArchitectures: &[]awslambda.Architecture{b.arch},
			CompatibleRuntimes:      &[]awslambda.Runtime{awslambda.Runtime_PROVIDED_AL2023()},
		})
		b.lr.TypesFiles = files
		b.env["LONGRUN_TYPES_FILE"] = jsii.String(strings.Join(files, ","))
		b.layers = append(b.layers, b.lr.TypesLayer)
	}
	if b.trace.layer != nil {
		b.layers = append(b.layers, b.trace.layer)
	}
	b.sizes = sizing.Functions()
	// A step after a fast one runs within the recorder's own invocation (a slow one is sent
	// asynchronously), so the recorder's timeout follows the longest step served.
	recorderSize := b.sizes[sizing.Recorder]
	recorderSize.Timeout = sizing.RecorderTimeout(b.served.longestStep())
	b.sizes[sizing.Recorder] = recorderSize
}

// function is longrun's function fname (Longrun.Functions), with the shared environment and
// extra, its log group and a role that may write to that group only.
func (b *builder) function(fname string, extra map[string]*string) awslambda.Function {
	vars := map[string]*string{}
	for k, v := range b.env {
		vars[k] = v
	}
	for k, v := range extra {
		vars[k] = v
	}
	logs := awslogs.NewLogGroup(b.c, jsii.String(cdkid.Title(fname)+"Logs"), &awslogs.LogGroupProps{
		LogGroupName:  jsii.String("/aws/lambda/longrun-" + b.props.Stage + "-" + fname),
		Retention:     awslogs.RetentionDays_ONE_MONTH,
		RemovalPolicy: b.removal(),
	})
	size, ok := b.sizes[fname]
	if !ok {
		panic("longrun construct: internal/aws/sizing has no size for " + fname)
	}
	if b.trace.layer != nil {
		size = size.WithCollector()
	}
	var reserved *float64
	if size.Reserved > 0 && !b.props.NoReservedConcurrency {
		reserved = jsii.Number(float64(size.Reserved))
	}
	var withLayers *[]awslambda.ILayerVersion
	if len(b.layers) > 0 {
		withLayers = &b.layers
	}
	f := awslambda.NewFunction(b.c, jsii.String(cdkid.Title(fname)), &awslambda.FunctionProps{
		Role:          FunctionRole(b.c, cdkid.Title(fname), logs),
		FunctionName:  b.name(fname),
		Runtime:       awslambda.Runtime_PROVIDED_AL2023(),
		Architecture:  b.arch,
		Handler:       jsii.String("bootstrap"),
		Code:          awslambda.Code_FromAsset(jsii.String(filepath.Join(b.props.CodeDir, fname+".zip")), nil),
		MemorySize:    jsii.Number(float64(size.MemoryMB)),
		Timeout:       awscdk.Duration_Seconds(jsii.Number(math.Ceil(size.Timeout.Seconds()))),
		Environment:   &vars,
		Layers:        withLayers,
		LogGroup:      logs,
		LoggingFormat: awslambda.LoggingFormat_JSON,
		// Lambda's START and REPORT lines (INFO) are left out: each function logs what
		// it did, and the Lambda metrics carry durations and errors. They were a third
		// of the bytes an operation logs (docs/cost.md).
		SystemLogLevelV2:             awslambda.SystemLogLevel_WARN,
		ReservedConcurrentExecutions: reserved,
		Tracing:                      b.trace.mode,
	})
	b.lr.Functions[fname] = f
	return f
}

// recorder is the recorder, first: the workflows need it, the dispatcher needs the
// workflows. The recorder runs the steps: it invokes the worker (whose ARN the workflow
// passes it), so it may invoke every worker, and the workflows only the recorder.
//
// The recorder also starts an operation's next execution after a wait (on the type's
// resume state machine) or when a Run had no room left for another step (on the type's
// own). The workflows refer to the recorder, so the recorder refers to them by their
// names (ARNs formatted from them, no references): a reference back would be a cycle.
func (b *builder) recorder() {
	machineArn := func(machine string) *string {
		return b.stack.FormatArn(&awscdk.ArnComponents{Service: jsii.String("states"), Resource: jsii.String("stateMachine"),
			ResourceName: b.name(machine), ArnFormat: awscdk.ArnFormat_COLON_RESOURCE_NAME})
	}
	executionsArn := func(machine string) *string {
		return b.stack.FormatArn(&awscdk.ArnComponents{Service: jsii.String("states"), Resource: jsii.String("execution"),
			ResourceName: jsii.String(*b.name(machine) + ":*"), ArnFormat: awscdk.ArnFormat_COLON_RESOURCE_NAME})
	}
	byName := map[string]interface{}{}
	for _, w := range b.workers {
		byName[w], byName[stepfunctions.ResumeKey(w)] = machineArn(w), machineArn(w+"-resume")
		b.workflowArns = append(b.workflowArns, machineArn(w))
		b.restartArns = append(b.restartArns, machineArn(w), machineArn(w+"-resume"))
		b.restartExecutions = append(b.restartExecutions, executionsArn(w), executionsArn(w+"-resume"))
	}
	b.key = b.lr.Table.EncryptionKey()
	// The key of the seals by which the recorder and the reconciler take back only what
	// longrun handed Step Functions and Lambda (docs/security.md, "What the recorder
	// trusts"), and of the callback URLs' tokens: a random string no person sees, read once
	// per cold start.
	b.lr.SealSecret = awssecretsmanager.NewSecret(b.c, jsii.String("SealSecret"), &awssecretsmanager.SecretProps{
		SecretName:  b.name("seal"),
		Description: jsii.String("longrun " + b.props.Stage + ": the key of the recorder's seals"),
		GenerateSecretString: &awssecretsmanager.SecretStringGenerator{
			PasswordLength: jsii.Number(64), ExcludePunctuation: jsii.Bool(true),
		},
		EncryptionKey: b.key,
		RemovalPolicy: b.removal(),
	})
	// The function behind each worker: a Run or a delivery that names another is refused.
	workerArns := map[string]interface{}{}
	for _, w := range b.workers {
		workerArns[w] = b.props.Workers[w].FunctionArn()
	}
	recorder := b.function("recorder", map[string]*string{
		"LONGRUN_STATE_MACHINES": b.stack.ToJsonString(byName, nil),
		"LONGRUN_SEAL_SECRET":    b.lr.SealSecret.SecretArn(),
		"LONGRUN_WORKERS":        b.stack.ToJsonString(workerArns, nil),
	})
	b.lr.SealSecret.GrantRead(recorder, nil)
	grantExecutionKey(recorder, b.key, b.restartArns)
	recorder.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions: jsii.Strings("states:StartExecution"), Resources: &b.restartArns,
	}))
	recorder.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions: jsii.Strings("states:DescribeExecution"), Resources: &b.restartExecutions,
	}))
	// The workflow's Run waits on a task token that the recorder answers once a parked Run
	// is over (internal/service/recorder/park.go). IAM cannot scope the token of a service
	// integration's task to a state machine, so the grant is on every resource; the
	// recorder only ever holds the tokens its own workflows gave it.
	recorder.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions: jsii.Strings("states:SendTaskSuccess", "states:SendTaskHeartbeat"), Resources: jsii.Strings("*"),
	}))
}

// workflows are each worker's two state machines, its own and its resume state machine,
// which may invoke the recorder only; and how the worker's steps reach the recorder back.
//
// With a customer managed key for the table, the workflows' definitions and execution
// histories are encrypted with it too: the histories hold operation data (the workers'
// handed-on state, a step's report that could not be recorded) for 90 days, and whoever
// chose to control the table's data with a key of their own means all of it. Step Functions
// reuses a data key for 5 minutes, so KMS is called a few times an hour per workflow, not
// per execution.
func (b *builder) workflows() {
	var executionEncryption awsstepfunctions.EncryptionConfiguration
	if b.key != nil {
		executionEncryption = awsstepfunctions.NewCustomerManagedEncryptionConfiguration(b.key, awscdk.Duration_Minutes(jsii.Number(5)))
	}
	recorder := b.lr.Functions["recorder"]
	for _, w := range b.workers {
		worker := b.props.Workers[w]
		for _, m := range []struct {
			key, machine, id, definition string
			into                         map[string]awsstepfunctions.StateMachine
		}{
			{w, w, cdkid.Title(w) + "Workflow", stepfunctions.Template(), b.lr.StateMachines},
			{w, w + "-resume", cdkid.Title(w) + "ResumeWorkflow", stepfunctions.ResumeTemplate(), b.lr.ResumeStateMachines},
		} {
			sm := awsstepfunctions.NewStateMachine(b.c, jsii.String(m.id), &awsstepfunctions.StateMachineProps{
				StateMachineName: b.name(m.machine),
				StateMachineType: awsstepfunctions.StateMachineType_STANDARD,
				DefinitionBody:   awsstepfunctions.DefinitionBody_FromString(jsii.String(m.definition)),
				DefinitionSubstitutions: &map[string]*string{
					stepfunctions.WorkerFunctionArn:   worker.FunctionArn(),
					stepfunctions.RecorderFunctionArn: recorder.FunctionArn(),
				},
				TracingEnabled:          jsii.Bool(b.trace.active),
				EncryptionConfiguration: executionEncryption,
			})
			sm.Node().DefaultChild().(awscdk.CfnResource).AddMetadata(jsii.String(typesMetadataKey), b.served.typesMetadata(w))
			recorder.GrantInvoke(sm)
			m.into[m.key] = sm
		}
		grantInvoke(worker, recorder)
		sendSteps(b.c, w, worker, recorder)
	}
	arns := map[string]interface{}{}
	for _, w := range b.workers {
		arns[w] = b.lr.StateMachines[w].StateMachineArn()
		arns[stepfunctions.ResumeKey(w)] = b.lr.ResumeStateMachines[w].StateMachineArn()
	}
	b.machinesJSON = b.stack.ToJsonString(arns, nil)
}

// functions are longrun's other functions (the api with the user pool it authorizes with,
// the dispatcher, the notifier and the reconciler), each with its own settings.
func (b *builder) functions() {
	b.users = b.userPool()
	apiEnv := map[string]*string{}
	if b.users != nil {
		b.lr.UserPool, b.lr.UserPoolClient = b.users.pool, b.users.client
		apiEnv["LONGRUN_COGNITO_CLIENT_IDS"] = b.users.clientIDs
	}
	if len(b.props.OperatorPrincipals) > 0 {
		apiEnv["LONGRUN_OPERATOR_PRINCIPALS"] = jsii.String(strings.Join(b.props.OperatorPrincipals, ","))
	}
	if b.props.TenantQuota != nil {
		apiEnv["LONGRUN_QUOTA"] = jsii.String(strconv.Itoa(*b.props.TenantQuota))
	}
	if b.props.PrincipalQuota != nil {
		apiEnv["LONGRUN_PRINCIPAL_QUOTA"] = jsii.String(strconv.Itoa(*b.props.PrincipalQuota))
	}
	if b.props.IdempotencyWindow > 0 {
		apiEnv["LONGRUN_IDEMPOTENCY_WINDOW"] = jsii.String(b.props.IdempotencyWindow.String())
	}
	// The api function checks the MAC of a callback URL's token (internal/core/callback),
	// made with the seal key, before it reads anything for it.
	apiEnv["LONGRUN_SEAL_SECRET"] = b.lr.SealSecret.SecretArn()
	b.lr.SealSecret.GrantRead(b.function("api", apiEnv), nil)
	dlq := b.lr.DeadLetterQueues["dispatcher"]
	// The dispatcher seals the input of an execution that wakes work waiting for a signal.
	b.lr.SealSecret.GrantRead(b.function("dispatcher", map[string]*string{
		"LONGRUN_STATE_MACHINES": b.machinesJSON, "LONGRUN_DEAD_LETTER_QUEUE_URL": dlq.QueueUrl(),
		"LONGRUN_SEAL_SECRET": b.lr.SealSecret.SecretArn(),
	}), nil)
	b.function("notifier", map[string]*string{"LONGRUN_EVENT_BUS": b.lr.Bus.EventBusName()})
	reconcilerEnv := map[string]*string{
		"LONGRUN_STATE_MACHINES": b.machinesJSON, "LONGRUN_DEAD_LETTER_QUEUE_URL": dlq.QueueUrl(),
		"LONGRUN_SEAL_SECRET": b.lr.SealSecret.SecretArn(),
	}
	for k, v := range b.props.Reconcile.env() {
		reconcilerEnv[k] = jsii.String(v)
	}
	b.lr.SealSecret.GrantRead(b.function("reconciler", reconcilerEnv), nil)
}

// grants are what longrun's functions may do with the table, the workflows, the
// dead-letter queue and the bus (the recorder's own grants came with it).
func (b *builder) grants() {
	fns, table, dlq := b.lr.Functions, b.lr.Table, b.lr.DeadLetterQueues["dispatcher"]
	dispatcher, reconciler, notifier := fns["dispatcher"], fns["reconciler"], fns["notifier"]
	grantAdmission(table, fns["api"])
	grantData(table, dispatcher)
	grantData(table, fns["recorder"])
	// The reconciler reads the due index (its work) and the attention index (its count of
	// operations waiting for an operator).
	grantData(table, reconciler, dynamo.IndexDue, dynamo.IndexAttention)
	for _, f := range []awslambda.Function{dispatcher, reconciler} {
		grantExecutions(b.stack, f, b.lr.StateMachines, b.workers)
		dlq.GrantSendMessages(f)
	}
	// The reconciler watches (and stops) the executions the recorder went on in, too.
	grantExecutions(b.stack, reconciler, b.lr.ResumeStateMachines, b.workers)
	grantExecutionKey(dispatcher, b.key, b.workflowArns)
	grantExecutionKey(reconciler, b.key, b.restartArns)
	b.lr.Bus.GrantPutEventsTo(notifier, nil)
	guardBus(b.c, b.lr.Bus, notifier, b.props.EventPublishers)
}

// streams are the table's stream mappings, with internal/aws/eventsource's settings.
func (b *builder) streams() {
	for _, m := range eventsource.Mappings() {
		mapping(b.lr.Functions[m.Function], b.lr.Table, m, b.lr.DeadLetterQueues[m.Function])
	}
}

// schedule runs the reconciler every sizing.ReconcileEvery.
func (b *builder) schedule() {
	b.reconcileSchedule = awsevents.NewRule(b.c, jsii.String("ReconcileSchedule"), &awsevents.RuleProps{
		RuleName: b.name("reconcile"),
		Schedule: awsevents.Schedule_Rate(awscdk.Duration_Minutes(jsii.Number(sizing.ReconcileEvery.Minutes()))),
		Targets:  &[]awsevents.IRuleTarget{awseventstargets.NewLambdaFunction(b.lr.Functions["reconciler"], nil)},
	})
}

// api is the REST API in front of the api function (restAPI), without the output RestApi
// adds by itself: the outputs are the app's.
//
// The recorder puts a callback URL into a step request for each signal its type declares
// with `callback: true`: LONGRUN_CALLBACK_BASE, the stage's URL without its trailing slash
// (APIURL is …/<stage>/), followed by /v1/callbacks/<token>. The recorder refers to the
// API and its stage, which never refer to the recorder (they integrate with the api
// function only), so there is no cycle; and it is updated once the stage exists, so the
// URLs it hands out lead to a deployed stage.
func (b *builder) api() {
	api := b.restAPI()
	b.lr.API = api
	api.Node().TryRemoveChild(jsii.String("Endpoint"))
	b.lr.APIURL = api.Url()
	base := awscdk.Fn_Join(jsii.String(""), &[]*string{
		jsii.String("https://"), api.RestApiId(), jsii.String(".execute-api."), b.stack.Region(), jsii.String("."),
		b.stack.UrlSuffix(), jsii.String("/"), api.DeploymentStage().StageName(),
	})
	b.lr.Functions["recorder"].AddEnvironment(jsii.String("LONGRUN_CALLBACK_BASE"), base, nil)
}
