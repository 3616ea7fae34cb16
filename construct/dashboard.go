package construct

import (
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/jsii-runtime-go"

	"github.com/longrun-dev/longrun/internal/aws/stepfunctions"
)

// dashboard is the deployment's dashboard, longrun-<Stage>: admissions, the API's
// answers, store contention, dispatch lag, accept → outcome latency by type, steps,
// outcome_unknown, repairs, dead letters, publishing, and the functions' errors and
// throttles. docs/observability.md ("Dashboard and alarms") describes each widget.
func (b *builder) dashboard() {
	scope, props, name, m, lr, reg := b.c, b.props, b.name, b.metrics, b.lr, b.served.registry
	five := awscdk.Duration_Minutes(jsii.Number(metricPeriod))
	graph := func(title string, width float64, left []awscloudwatch.IMetric, right ...awscloudwatch.IMetric) awscloudwatch.IWidget {
		p := &awscloudwatch.GraphWidgetProps{Title: jsii.String(title), Width: jsii.Number(width), Height: jsii.Number(6), Left: &left, Period: five}
		if len(right) > 0 {
			p.Right = &right
		}
		return awscloudwatch.NewGraphWidget(p)
	}
	types := typeNames(reg)

	var admissions []awscloudwatch.IMetric
	for _, o := range admissionOutcomes {
		admissions = append(admissions, m.metric("api", "Admissions", "Sum", o, "Outcome", o))
	}
	stage := lr.API.DeploymentStage()
	sum := func(label string) *awscloudwatch.MetricOptions {
		return &awscloudwatch.MetricOptions{Statistic: jsii.String("Sum"), Period: five, Label: jsii.String(label)}
	}
	gateway := []awscloudwatch.IMetric{stage.MetricClientError(sum("4xx")), stage.MetricServerError(sum("5xx"))}

	var conflicts []awscloudwatch.IMetric
	for _, c := range m.conflicts() {
		conflicts = append(conflicts, c)
	}

	var lag, latency []awscloudwatch.IMetric
	var steps, unknown []awscloudwatch.IMetric
	for _, t := range types {
		for _, fn := range []string{"dispatcher", "reconciler"} {
			for _, p := range []string{"p50", "p99"} {
				lag = append(lag, m.metric(fn, "DispatchLag", p, fmt.Sprintf("%s %s (%s)", t, p, fn), "Type", t))
			}
		}
		for _, o := range operationOutcomes {
			steps = append(steps, m.metric("recorder", "StepsRun", "Sum", t+" "+o, "Type", t, "Outcome", o))
		}
		for _, fn := range []string{"recorder", "reconciler"} {
			unknown = append(unknown, m.metric(fn, "OutcomeUnknown", "Sum", t+" ("+fn+")", "Type", t))
		}
	}
	// One latency widget per type: its outcomes' p50 and p99, as the recorder measured them.
	var latencyWidgets []awscloudwatch.IWidget
	for _, t := range types {
		latency = nil
		for _, o := range operationOutcomes {
			for _, p := range []string{"p50", "p99"} {
				latency = append(latency, m.metric("recorder", "OperationLatency", p, o+" "+p, "Type", t, "Outcome", o))
			}
		}
		latencyWidgets = append(latencyWidgets, graph("OperationLatency "+t+" (accepted → outcome, ms)", 12, latency))
	}

	var repairs []awscloudwatch.IMetric
	for _, a := range repairActions {
		repairs = append(repairs, m.metric("reconciler", "Repairs", "Sum", a, "Action", a))
	}
	var deadLetters []awscloudwatch.IMetric
	for _, fn := range []string{"dispatcher", "reconciler"} {
		deadLetters = append(deadLetters, m.metric(fn, "DeadLetters", "Sum", "sent by the "+fn, "Source", "dispatcher"))
	}
	var queued []awscloudwatch.IMetric
	for _, q := range sorted(lr.DeadLetterQueues) {
		queued = append(queued, lr.DeadLetterQueues[q].MetricApproximateNumberOfMessagesVisible(&awscloudwatch.MetricOptions{
			Statistic: jsii.String("Maximum"), Period: five, Label: jsii.String(q + " queue (visible)"),
		}))
	}
	notifier := []awscloudwatch.IMetric{m.metric("notifier", "EventsPublished", "Sum", "events published"), m.metric("notifier", "PublishFailures", "Sum", "failed to publish")}
	notifyLag := m.metric("notifier", "NotifyLag", "p99", "notify lag p99 (ms)")

	var errs, throttles []awscloudwatch.IMetric
	for _, f := range sorted(lr.Functions) {
		errs = append(errs, lr.Functions[f].MetricErrors(sum(f)))
		throttles = append(throttles, lr.Functions[f].MetricThrottles(sum(f)))
	}
	for _, w := range sorted(props.Workers) {
		fw := props.Workers[w]
		if fw == nil {
			continue
		}
		errs = append(errs, fw.MetricErrors(sum(stepfunctions.FunctionName(w))))
		throttles = append(throttles, fw.MetricThrottles(sum(stepfunctions.FunctionName(w))))
	}

	d := awscloudwatch.NewDashboard(scope, jsii.String("Dashboard"), &awscloudwatch.DashboardProps{
		DashboardName:   name("dashboard"),
		DefaultInterval: awscdk.Duration_Hours(jsii.Number(3)),
	})
	d.AddWidgets(awscloudwatch.NewTextWidget(&awscloudwatch.TextWidgetProps{
		Markdown: jsii.String(fmt.Sprintf("## longrun %s\nMetrics in namespace `%s`, each with the dimensions `Service` (the function) and `%s=%s` beside its own; "+
			"per-type widgets for %d types. What each shows: docs/observability.md, \"Dashboard and alarms\".", props.Stage, m.namespace, stageDimension, props.Stage, len(types))),
		Width: jsii.Number(24), Height: jsii.Number(2),
	}))
	d.AddWidgets(
		graph("Admissions by outcome", 12, admissions),
		graph("API Gateway: 4xx and 5xx (left), requests (right)", 12, gateway, stage.MetricCount(sum("requests"))),
	)
	d.AddWidgets(
		graph("TransactionConflicts by function and call", 8, conflicts),
		graph("StoreRetries by function and call", 8, []awscloudwatch.IMetric{m.search("StoreRetries", "Sum", "", "Call")}),
		graph("StoreBusy by function and call", 8, []awscloudwatch.IMetric{m.search("StoreBusy", "Sum", "", "Call")}),
	)
	d.AddWidgets(
		graph("DispatchLag by type (accepted → dispatched, ms)", 12, lag),
		graph("Dead letters: sent (left), waiting in the queues (right)", 12, deadLetters, queued...),
	)
	for i := 0; i < len(latencyWidgets); i += 2 {
		d.AddWidgets(latencyWidgets[i:min(i+2, len(latencyWidgets))]...)
	}
	d.AddWidgets(
		graph("StepsRun by type and outcome", 8, steps),
		graph("OutcomeUnknown recorded by type", 8, unknown),
		graph("OutcomeUnknownWaiting (all tenants)", 8, []awscloudwatch.IMetric{m.metric("reconciler", "OutcomeUnknownWaiting", "Maximum", "waiting for an operator")}),
	)
	d.AddWidgets(
		graph("Repairs by action (reconciler)", 8, repairs),
		graph("OperationLatency p99 of outcomes the reconciler recorded (ms)", 8,
			[]awscloudwatch.IMetric{m.search("OperationLatency", "p99", `Service="`+serviceDimension("reconciler")+`"`, "Type", "Outcome")}),
		graph("Notifier: events (left), lag p99 (right)", 8, notifier, notifyLag),
	)
	d.AddWidgets(
		graph("Lambda errors", 12, errs),
		graph("Lambda throttles", 12, throttles),
	)
	lr.Dashboard = d
}
