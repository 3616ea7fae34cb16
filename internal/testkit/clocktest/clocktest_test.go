package clocktest_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/longrun-dev/longrun/internal/testkit/clocktest"
)

func TestSleepMovesTheClockAndIsRecorded(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	c := clocktest.New(t0)
	_ = c.Sleep(context.Background(), 2*time.Second)
	c.Advance(time.Minute)
	_ = c.Sleep(context.Background(), time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.Sleep(ctx, time.Hour); err == nil {
		t.Fatal("a done context did not end the sleep")
	}
	if got := c.Now().Sub(t0); got != time.Minute+3*time.Second || fmt.Sprint(c.Waits()) != "[2s 1s]" {
		t.Fatalf("moved %s, waits %v", got, c.Waits())
	}
}
