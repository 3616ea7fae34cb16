// Package construct is longrun as an AWS CDK construct (Go): a platform team adds one
// [Longrun] to a stack of its own CDK app, hands it the operation types' definitions file
// and the worker functions it builds and owns, and gets the whole deployment: the DynamoDB
// table and its stream mappings, longrun's own five functions (api, dispatcher, notifier,
// recorder, reconciler), two Step Functions state machines per worker (its own and its resume
// state machine, [Longrun.ResumeStateMachines]), the REST API with its
// authorizer, the event bus (or the team's), the reconciler's schedule, dead-letter queues,
// a dashboard and alarms, and tracing (X-Ray and the ADOT collector layer; [TracingOptions]).
//
//	lr := construct.New(stack, "Longrun", &construct.Props{
//		Stage:     "prod",
//		TypesFile: "longrun/team.types.yaml",
//		CodeDir:   "dist", // longrun's zips: go run github.com/longrun-dev/longrun/cmd/release -out dist
//		Workers: map[string]awslambda.IFunction{
//			"provisioner": provisioner, // an awslambda.Function of the app
//			"mailer":      awslambda.Function_FromFunctionArn(stack, jsii.String("Mailer"), jsii.String(mailerArn)),
//		},
//	})
//	awscdk.NewCfnOutput(stack, jsii.String("ApiUrl"), &awscdk.CfnOutputProps{Value: lr.APIURL})
//
// What New checks at synthesis (it panics, so `cdk synth` stops with the message):
//
//   - the definitions file(s) load (an invalid file names the file, type and field, as the
//     functions would at start-up);
//   - Workers holds exactly the workers of the types served (a missing or an extra worker is
//     named);
//   - a worker whose timeout is known (an awslambda.Function of the app) may run as long as
//     the longest stepTimeout of its types;
//   - no stepTimeout is longer than 14 minutes: the recorder waits for each step within its
//     own invocation (at most 15), with a minute to record how it ended.
//
// What it wires:
//
//   - the definitions file(s) reach longrun's functions in a Lambda layer: each file is
//     /opt/<its name> and LONGRUN_TYPES_FILE lists them (without TypesFile: no layer, no
//     variable, the built-in types);
//   - each state machine may invoke the recorder, nothing else, and the recorder may invoke
//     the workers (it runs the steps: docs/worker-protocol.md); its timeout is the longest
//     stepTimeout plus a minute, the other sizes internal/aws/sizing's. Workers get no
//     permission on longrun's table (they never touch it), and nothing else from the
//     construct either, tracing included: a worker needs what its own work needs;
//   - longrun's functions put their metrics in Props.MetricsNamespace with Stage=<Stage>, and
//     the dashboard and alarms name exactly those series (docs/observability.md);
//   - each state machine carries its types' limits as CloudFormation metadata
//     ([TypesMetadataKey]: per type deadlineSeconds, stepTimeoutSeconds, maxSteps), beside
//     what the functions read from the file; the reconciler's cancel lease follows the
//     longest stepTimeout by itself (internal/aws/config).
//
// Outputs are the app's: the construct exposes the API URL, the table, the bus, the state
// machines and longrun's functions, and creates no CfnOutput.
package construct
