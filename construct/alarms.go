package construct

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsstepfunctions"
	"github.com/aws/jsii-runtime-go"

	"github.com/longrun-dev/longrun/internal/aws/cdkid"
	"github.com/longrun-dev/longrun/internal/aws/logpattern"
	"github.com/longrun-dev/longrun/internal/aws/stepfunctions"
)

// alarms watch what must never pile up: dead letters (a record no consumer could
// handle), function errors (longrun's and the workers'), failed workflows, operations the
// reconciler had to repair (stuck work), admissions refused for a full quota, and operations
// that ended outcome_unknown (each holds its lock and quota slot). Alarms carry no actions:
// each account routes them its own way.
func (b *builder) alarms() {
	scope, props, name := b.c, b.props, b.name
	fns, workers, dlqs, machines, resumes := b.lr.Functions, b.props.Workers, b.lr.DeadLetterQueues, b.lr.StateMachines, b.lr.ResumeStateMachines
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
	// Errors and failed executions are counted over 5 minutes.
	sum := func() *awscloudwatch.MetricOptions {
		return &awscloudwatch.MetricOptions{Period: awscdk.Duration_Minutes(jsii.Number(5)), Statistic: jsii.String("Sum")}
	}
	for _, f := range sorted(fns) {
		alarm(cdkid.Title(f)+"Errors", fns[f].MetricErrors(sum()), "The "+f+" function failed invocations.")
	}
	// A worker's failed invocations are steps recorded outcome_unknown (worker_error): the
	// worker is the team's, the alarm longrun's, beside its workflow's.
	for _, w := range sorted(machines) {
		f := stepfunctions.FunctionName(w)
		alarm(cdkid.Title(f)+"Errors", workers[w].MetricErrors(sum()),
			"The "+w+" worker's function failed invocations (each a step recorded outcome_unknown).")
	}
	// Each type's state machine, and its resume state machine (the same definition after a
	// wait).
	for _, kind := range []struct {
		machines map[string]awsstepfunctions.StateMachine
		id, what string
	}{{machines, "ExecutionsFailed", "workflow"}, {resumes, "ResumeExecutionsFailed", "resume workflow"}} {
		for _, m := range sorted(kind.machines) {
			alarm(cdkid.Title(m)+kind.id, kind.machines[m].MetricFailed(sum()), "Executions of the "+m+" "+kind.what+
				" failed: a definition or runtime error (every task error is caught; a recorder that keeps failing ends in Unrecorded, which succeeds).")
		}
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
	filter := logMetric("StuckOperationsRepaired", "reconciler", logpattern.Stuck, "StuckOperationsRepaired", "1")
	alarm("StuckOperations", filter.Metric(&awscloudwatch.MetricOptions{
		Period: awscdk.Duration_Minutes(jsii.Number(5)), Statistic: jsii.String("Sum"),
	}), "The reconciler had to dispatch, stop or settle operations that were stuck.")

	// Admission refused for a full quota (the API's request line; 429 is quota_exceeded
	// only): a caller or tenant holds every slot, by load or because its operations do not end.
	quota := logMetric("QuotaExceededFilter", "api", logpattern.QuotaExceeded, "QuotaExceeded", "1")
	alarm("QuotaExceeded", quota.Metric(&awscloudwatch.MetricOptions{
		Period: awscdk.Duration_Minutes(jsii.Number(5)), Statistic: jsii.String("Sum"),
	}), "Admissions were refused with 429 quota_exceeded: a tenant's or caller's active operations fill its quota.")

	// Operations recorded outcome_unknown, by the recorder (a worker failed after it may
	// have acted) or the reconciler (stopped past the deadline, ended mid-work). Each keeps
	// its target lock and quota slot until an operator resolves it. One metric, a filter on
	// each function's log.
	logMetric("RecorderOutcomeUnknownFilter", "recorder", logpattern.RecorderOutcomeUnknown, "OutcomeUnknownRecorded", "1")
	logMetric("ReconcilerOutcomeUnknownFilter", "reconciler", logpattern.ReconcilerOutcomeUnknown, "OutcomeUnknownRecorded", "1")
	alarm("OutcomeUnknown", awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
		Namespace: jsii.String("longrun/" + props.Stage), MetricName: jsii.String("OutcomeUnknownRecorded"),
		Period: awscdk.Duration_Minutes(jsii.Number(5)), Statistic: jsii.String("Sum"),
	}), "Operations ended outcome_unknown: each holds its target lock and quota slot until an operator resolves it.")

	// How many operations wait for an operator, all tenants together: every reconciler run
	// logs the number (the attention index), so the alarm stays on until they are resolved
	// (`longrun unknown` lists them).
	waiting := logMetric("OutcomeUnknownWaitingFilter", "reconciler", logpattern.Waiting, "OutcomeUnknownWaiting", "$.outcome_unknown")
	alarm("OutcomeUnknownWaiting", waiting.Metric(&awscloudwatch.MetricOptions{
		Period: awscdk.Duration_Minutes(jsii.Number(5)), Statistic: jsii.String("Maximum"),
	}), "Operations are waiting in outcome_unknown for an operator (longrun unknown lists them; resolve settles them).")
}

// metricAlarms are the alarms on longrun's own metrics and the API's answers, on top of
// alarms': the API's 5xx rate, transaction conflicts, the dispatch lag of each type and
// outcome_unknown of each type. Alarms cannot use SEARCH, so each names its series exactly
// (metrics.metric). docs/observability.md ("Dashboard and alarms") gives the thresholds.
func (b *builder) metricAlarms() {
	scope, props, name, m, api, reg := b.c, b.props, b.name, b.metrics, b.lr.API, b.served.registry
	opts := props.Alarms.withDefaults()
	five := awscdk.Duration_Minutes(jsii.Number(metricPeriod))
	alarm := func(id string, metric awscloudwatch.IMetric, threshold float64, op awscloudwatch.ComparisonOperator, desc string) {
		awscloudwatch.NewAlarm(scope, jsii.String(id), &awscloudwatch.AlarmProps{
			AlarmName:          name(id),
			AlarmDescription:   jsii.String(desc),
			Metric:             metric,
			Threshold:          jsii.Number(threshold),
			ComparisonOperator: op,
			EvaluationPeriods:  jsii.Number(1),
			TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
		})
	}
	num := func(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

	// The API's 5xx answers in percent of its requests (API Gateway's own errors and the
	// function's), counted only when there were enough requests to mean something.
	stage := api.DeploymentStage()
	sum := &awscloudwatch.MetricOptions{Statistic: jsii.String("Sum"), Period: five}
	alarm("ApiServerErrorRate", awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
		Expression: jsii.String(fmt.Sprintf("IF(requests >= %s, 100 * errors / requests, 0)", num(opts.ServerErrorMinRequests))),
		UsingMetrics: &map[string]awscloudwatch.IMetric{
			"errors": stage.MetricServerError(sum), "requests": stage.MetricCount(sum),
		},
		Label:  jsii.String("5xx % of requests"),
		Period: five,
	}), opts.ServerErrorPercent, awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD,
		fmt.Sprintf("More than %s%% of the API's answers were 5xx in 5 minutes (with at least %s requests).", num(opts.ServerErrorPercent), num(opts.ServerErrorMinRequests)))

	// Conflicts of every function and call together; each is retried, so only many of them
	// (hot targets, keys or quota counters) are news.
	using := map[string]awscloudwatch.IMetric{}
	var ids []string
	for i, c := range m.conflicts() {
		id := fmt.Sprintf("c%d", i)
		using[id] = c
		ids = append(ids, "FILL("+id+", 0)")
	}
	alarm("TransactionConflicts", awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
		Expression:   jsii.String(strings.Join(ids, " + ")),
		UsingMetrics: &using,
		Label:        jsii.String("transaction conflicts"),
		Period:       five,
	}), opts.TransactionConflicts, awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD,
		fmt.Sprintf("DynamoDB cancelled more than %s of longrun's transactions for conflicts in 5 minutes: items are hot (one target, key or quota counter written at once by many); StoreBusy shows whether calls failed.", num(opts.TransactionConflicts)))

	typeID := typeIDs(reg)
	for _, t := range typeNames(reg) {
		// The dispatcher's lag only: the reconciler dispatches what the dispatcher did not,
		// late by design (the StuckOperations alarm covers that).
		alarm("Type"+typeID[t]+"DispatchLag", m.metric("dispatcher", "DispatchLag", "p99", "", "Type", t),
			float64(opts.DispatchLag.Milliseconds()), awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD,
			fmt.Sprintf("The p99 of accepted → dispatched of %s operations was over %s in 5 minutes: the stream or the dispatcher is behind, or StartExecution is throttled.", t, opts.DispatchLag))
		// outcome_unknown recorded by the recorder or the reconciler.
		alarm("Type"+typeID[t]+"OutcomeUnknown", awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
			Expression: jsii.String("FILL(recorder, 0) + FILL(reconciler, 0)"),
			UsingMetrics: &map[string]awscloudwatch.IMetric{
				"recorder":   m.metric("recorder", "OutcomeUnknown", "Sum", "", "Type", t),
				"reconciler": m.metric("reconciler", "OutcomeUnknown", "Sum", "", "Type", t),
			},
			Label:  jsii.String(t + " outcome_unknown"),
			Period: five,
		}), 1, awscloudwatch.ComparisonOperator_GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
			fmt.Sprintf("%s operations ended outcome_unknown: each holds its target lock and quota slot until an operator resolves it (longrun unknown lists them).", t))
	}
}
