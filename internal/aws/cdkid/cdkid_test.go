package cdkid

import "testing"

func TestTitle(t *testing.T) {
	for in, want := range map[string]string{"worker-demo-task": "WorkerDemoTask", "demo.task": "DemoTask", "api": "Api", "x9-y": "X9Y"} {
		if got := Title(in); got != want {
			t.Errorf("Title(%q) = %q, want %q", in, got, want)
		}
	}
}
