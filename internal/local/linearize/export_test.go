package linearize

import "time"

// CheckUnreduced is Check without dropping the calls whose answers others imply.
func CheckUnreduced(history []Entry, timeout time.Duration) (Result, error) {
	return check(history, timeout, false)
}
