// Package construct is longrun as an AWS CDK construct (Go): a platform team adds one
// [Longrun] to a stack of its own CDK app, hands it the operation types' definitions files
// and the worker functions it builds and owns (of any Lambda runtime, Go, Node.js, Python …:
// [Props].Workers says what the construct needs of them), and gets the whole deployment:
// the DynamoDB table and its stream mappings, longrun's own five functions (api,
// dispatcher, notifier, recorder, reconciler), two Step Functions state machines per worker
// (its own and its resume state machine, [Longrun.ResumeStateMachines]), the REST API with
// its authorizer, the event bus (or the team's), the reconciler's schedule, dead-letter queues,
// a dashboard and alarms, and tracing (X-Ray and the ADOT collector layer; [TracingOptions]).
//
//	props := &construct.Props{
//		Stage:      "prod",
//		TypesFiles: []string{"longrun/team.types.yaml"},
//		CodeDir:    "dist", // longrun's zips: go run github.com/longrun-dev/longrun/cmd/release -out dist
//	}
//	timeouts, err := construct.WorkerTimeouts(props) // each worker's least timeout: its longest stepTimeout
//	…
//	props.Workers = map[string]awslambda.IFunction{
//		"provisioner": provisioner, // an awslambda.Function of the app, Timeout from timeouts
//		"mailer":      awslambda.Function_FromFunctionArn(stack, jsii.String("Mailer"), jsii.String(mailerArn)),
//	}
//	lr := construct.New(stack, "Longrun", props)
//	awscdk.NewCfnOutput(stack, jsii.String("ApiUrl"), &awscdk.CfnOutputProps{Value: lr.APIURL})
//
// What New checks at synthesis (it panics, so `cdk synth` stops with the message):
//
//   - the definitions file(s) load (an invalid file names the file, type and field, as the
//     functions would at start-up);
//   - Workers holds exactly the workers of the types served (a missing or an extra worker is
//     named);
//   - a worker whose timeout is known (an awslambda.Function of the app) may run as long as
//     the longest stepTimeout of its types, and configures no asynchronous invocation of its
//     own (the construct gives it the event invoke config that hands its steps back);
//   - no stepTimeout is longer than 14 minutes. A step is usually sent to its worker
//     asynchronously, and the workflow's Run waits on a task token, holding no recorder
//     invocation (docs/lifecycle.md, "One Lambda slot per step"); but a step that follows a
//     fast one (under half a second) is invoked synchronously, within the recorder's own
//     invocation (at most 15 minutes), which needs a minute after the step to record how it
//     ended.
//
// What it wires:
//
//   - the definitions file(s) reach longrun's functions in a Lambda layer: each file is
//     /opt/<its name> and LONGRUN_TYPES_FILE lists them (without TypesFiles: no layer, no
//     variable, the built-in types);
//   - each state machine may invoke the recorder, nothing else, and the recorder may invoke
//     the workers (it runs the steps: docs/worker-protocol.md), each of which sends how a
//     step sent asynchronously ended to the recorder (its destinations); the recorder's
//     timeout is the longest stepTimeout plus a minute (for the steps it runs
//     synchronously), the other sizes longrun's own (docs/deploy.md lists them). Workers get no
//     permission on longrun's table (they never touch it), and nothing else from the
//     construct either, tracing included: a worker needs what its own work needs;
//   - longrun's functions put their metrics in Props.MetricsNamespace with Stage=<Stage>, and
//     the dashboard and alarms name exactly those series (docs/observability.md);
//   - each state machine carries its types' limits as CloudFormation metadata (key
//     "longrun:types": per type deadlineSeconds, stepTimeoutSeconds, maxSteps), beside
//     what the functions read from the file; the reconciler's cancel lease follows the
//     longest stepTimeout by itself.
//
// Outputs are the app's: the construct exposes the API URL, the table, the bus, the state
// machines and longrun's functions, and creates no CfnOutput. Besides New and its options the
// package exports what an app needs around it: [WorkerTimeouts] to size its workers,
// [FunctionRole] to give them a role that writes their own logs only, and with Cognito
// [OperatorsGroup] and [TenantAttribute], the group and attribute its users are given.
package construct
