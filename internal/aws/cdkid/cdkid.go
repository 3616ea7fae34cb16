// Package cdkid makes the CDK construct ids longrun's deployment code gives its resources,
// one way for the construct and for longrun's own app, so a resource keeps its logical id
// (and a deployed stage updates it in place) whichever of them creates it.
package cdkid

// Title turns "worker-demo-task" (or "demo.task") into "WorkerDemoTask".
func Title(s string) string {
	out := []byte{}
	up := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '-' || c == '.' {
			up = true
			continue
		}
		if up && c >= 'a' && c <= 'z' {
			c -= 'a' - 'A'
		}
		up = false
		out = append(out, c)
	}
	return string(out)
}
