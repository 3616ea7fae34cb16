package construct_test

import (
	"strings"
	"testing"

	"github.com/longrun-dev/longrun/internal/aws/lambdalog"
	"github.com/longrun-dev/longrun/internal/aws/logpattern"
)

// The alarms' filter patterns read the field the functions' log handler writes the message
// under.
func TestPatternsReadTheLogFormat(t *testing.T) {
	for _, p := range []string{logpattern.Stuck, logpattern.QuotaExceeded, logpattern.Waiting,
		logpattern.RecorderOutcomeUnknown, logpattern.ReconcilerOutcomeUnknown} {
		if !strings.Contains(p, "$."+lambdalog.KeyMessage+" = ") || strings.Contains(p, "$.msg") {
			t.Errorf("pattern %s does not match on $.%s", p, lambdalog.KeyMessage)
		}
	}
}
