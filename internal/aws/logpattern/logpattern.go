// Package logpattern holds the CloudWatch Logs filter patterns that count longrun's own log
// lines (JSON, as internal/aws/lambdalog writes them: Powertools' field names, the slog
// message under message). The construct's metric filters and alarms use them, and the tests
// of the construct and of infra/stack check the template against them; they are no part of
// the construct's API.
package logpattern

const (
	// Stuck matches the reconciler's "reconciled" line (internal/service/reconcile) for an
	// operation it had to repair: work got stuck.
	Stuck = `{ $.message = "reconciled" && ($.action = "stopped" || $.action = "recorded" || $.action = "dispatched") }`
	// QuotaExceeded matches the API's "request" line (internal/service/httpapi, Handle) of a
	// 429, which is quota_exceeded only.
	QuotaExceeded = `{ $.message = "request" && $.status = 429 }`
	// Waiting matches the reconciler's "run" line, whose outcome_unknown is the number of
	// operations in that state (-1 when it could not count: left out).
	Waiting = `{ $.message = "run" && $.outcome_unknown >= 0 }`
)

// The recorder's "recorded" line (internal/service/recorder) and the reconciler's
// "reconciled" line, each with the kind of the fact it meant to record (outcome) and the
// operation's state after the call (state): both outcome_unknown means it was recorded now
// (a dropped fact leaves another state).
const (
	RecorderOutcomeUnknown   = `{ $.message = "recorded" && $.outcome = "outcome_unknown" && $.state = "outcome_unknown" }`
	ReconcilerOutcomeUnknown = `{ $.message = "reconciled" && $.outcome = "outcome_unknown" && $.state = "outcome_unknown" }`
)
