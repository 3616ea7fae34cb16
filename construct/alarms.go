package construct

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsstepfunctions"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/longrun-dev/longrun/internal/aws/cdkid"

	"github.com/longrun-dev/longrun/internal/aws/stepfunctions"
)

// newAlarms watches what must never pile up: dead letters (a record no consumer could
// handle), function errors (longrun's and the workers'), failed workflows, operations the
// reconciler had to repair (stuck work), admissions refused for a full quota, and operations
// that ended outcome_unknown (each holds its lock and quota slot). Alarms carry no actions:
// each account routes them its own way.
func newAlarms(scope constructs.Construct, props *Props, fns map[string]awslambda.Function, workers map[string]awslambda.IFunction,
	dlqs map[string]awssqs.Queue, machines map[string]awsstepfunctions.StateMachine, name func(string) *string) {
	alarm := func(id string, metric awscloudwatch.IMetric, desc string) {
		awscloudwatch.NewAlarm(scope, jsii.String(id), &awscloudwatch.AlarmProps{
			AlarmName:          name(id),
			AlarmDescription:   jsii.String(desc),
			Metric:             metric,
			Threshold:          jsii.Number(0),
			ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD,
			EvaluationPeriods:  jsii.Number(1),
			TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
		})
	}
	for _, q := range sorted(dlqs) {
		alarm(cdkid.Title(q)+"DeadLettersVisible", dlqs[q].MetricApproximateNumberOfMessagesVisible(&awscloudwatch.MetricOptions{
			Period: awscdk.Duration_Minutes(jsii.Number(5)), Statistic: jsii.String("Maximum"),
		}), "Records the "+q+" could not process are waiting in its dead-letter queue.")
	}
	for _, f := range sorted(fns) {
		alarm(cdkid.Title(f)+"Errors", fns[f].MetricErrors(&awscloudwatch.MetricOptions{
			Period: awscdk.Duration_Minutes(jsii.Number(5)), Statistic: jsii.String("Sum"),
		}), "The "+f+" function failed invocations.")
	}
	// A worker's failed invocations are steps recorded outcome_unknown (worker_error): the
	// worker is the team's, the alarm longrun's, beside its workflow's.
	for _, w := range sorted(machines) {
		f := stepfunctions.FunctionName(w)
		alarm(cdkid.Title(f)+"Errors", workers[w].MetricErrors(&awscloudwatch.MetricOptions{
			Period: awscdk.Duration_Minutes(jsii.Number(5)), Statistic: jsii.String("Sum"),
		}), "The "+w+" worker's function failed invocations (each a step recorded outcome_unknown).")
	}
	for _, m := range sorted(machines) {
		alarm(cdkid.Title(m)+"ExecutionsFailed", machines[m].MetricFailed(&awscloudwatch.MetricOptions{
			Period: awscdk.Duration_Minutes(jsii.Number(5)), Statistic: jsii.String("Sum"),
		}), "Executions of the "+m+" workflow failed: a definition or runtime error (every task error is caught; a recorder that keeps failing ends in Unrecorded, which succeeds).")
	}
	// logMetric counts (value "1") or reads (a JSON path) what a function's log lines matching
	// pattern say, as metric in the stage's namespace.
	logMetric := func(id, fn, pattern, metric, value string) awslogs.MetricFilter {
		return awslogs.NewMetricFilter(scope, jsii.String(id), &awslogs.MetricFilterProps{
			LogGroup:        fns[fn].LogGroup(),
			FilterPattern:   awslogs.FilterPattern_Literal(jsii.String(pattern)),
			MetricNamespace: jsii.String("longrun/" + props.Stage),
			MetricName:      jsii.String(metric),
			MetricValue:     jsii.String(value),
		})
	}
	// The reconciler logs one line per repaired operation; repairs mean work got stuck.
	filter := logMetric("StuckOperationsRepaired", "reconciler", StuckPattern, "StuckOperationsRepaired", "1")
	alarm("StuckOperations", filter.Metric(&awscloudwatch.MetricOptions{
		Period: awscdk.Duration_Minutes(jsii.Number(5)), Statistic: jsii.String("Sum"),
	}), "The reconciler had to dispatch, stop or settle operations that were stuck.")

	// Admission refused for a full quota (the API's request line; 429 is quota_exceeded
	// only): a caller or tenant holds every slot, by load or because its operations do not end.
	quota := logMetric("QuotaExceededFilter", "api", QuotaExceededPattern, "QuotaExceeded", "1")
	alarm("QuotaExceeded", quota.Metric(&awscloudwatch.MetricOptions{
		Period: awscdk.Duration_Minutes(jsii.Number(5)), Statistic: jsii.String("Sum"),
	}), "Admissions were refused with 429 quota_exceeded: a tenant's or caller's active operations fill its quota.")

	// Operations recorded outcome_unknown, by the recorder (a worker failed after it may
	// have acted) or the reconciler (stopped past the deadline, ended mid-work). Each keeps
	// its target lock and quota slot until an operator resolves it. One metric, a filter on
	// each function's log.
	logMetric("RecorderOutcomeUnknownFilter", "recorder", RecorderOutcomeUnknownPattern, "OutcomeUnknownRecorded", "1")
	logMetric("ReconcilerOutcomeUnknownFilter", "reconciler", ReconcilerOutcomeUnknownPattern, "OutcomeUnknownRecorded", "1")
	alarm("OutcomeUnknown", awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
		Namespace: jsii.String("longrun/" + props.Stage), MetricName: jsii.String("OutcomeUnknownRecorded"),
		Period: awscdk.Duration_Minutes(jsii.Number(5)), Statistic: jsii.String("Sum"),
	}), "Operations ended outcome_unknown: each holds its target lock and quota slot until an operator resolves it.")

	// How many operations wait for an operator, all tenants together: every reconciler run
	// logs the number (the attention index), so the alarm stays on until they are resolved
	// (`longrun unknown` lists them).
	waiting := logMetric("OutcomeUnknownWaitingFilter", "reconciler", WaitingPattern, "OutcomeUnknownWaiting", "$.outcome_unknown")
	alarm("OutcomeUnknownWaiting", waiting.Metric(&awscloudwatch.MetricOptions{
		Period: awscdk.Duration_Minutes(jsii.Number(5)), Statistic: jsii.String("Maximum"),
	}), "Operations are waiting in outcome_unknown for an operator (longrun unknown lists them; resolve settles them).")
}

// The log lines the alarms count (JSON, as internal/aws/lambdalog writes them: Powertools'
// field names, the slog message under message).
const (
	// StuckPattern: the reconciler's "reconciled" line (internal/service/reconcile).
	StuckPattern = `{ $.message = "reconciled" && ($.action = "stopped" || $.action = "recorded" || $.action = "dispatched") }`
	// QuotaExceededPattern: the API's "request" line (internal/service/httpapi, Handle).
	QuotaExceededPattern = `{ $.message = "request" && $.status = 429 }`
	// WaitingPattern: the reconciler's "run" line, whose outcome_unknown is the number of
	// operations in that state (-1 when it could not count: left out).
	WaitingPattern = `{ $.message = "run" && $.outcome_unknown >= 0 }`
)

// The recorder's "recorded" line (internal/service/recorder) and the reconciler's
// "reconciled" line, each with the kind of the fact it meant to record (outcome) and the
// operation's state after the call (state): both outcome_unknown means it was recorded now
// (a dropped fact leaves another state).
const (
	RecorderOutcomeUnknownPattern   = `{ $.message = "recorded" && $.outcome = "outcome_unknown" && $.state = "outcome_unknown" }`
	ReconcilerOutcomeUnknownPattern = `{ $.message = "reconciled" && $.outcome = "outcome_unknown" && $.state = "outcome_unknown" }`
)
