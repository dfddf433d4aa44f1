package policy
import ("testing";"strings";"time")
func TestSlowEval(t *testing.T) {
	for _, n := range []int{5, 10, 20, 40, 80} {
		cmd := strings.Repeat("eval ", n)
		start := time.Now()
		Decide(Policy{Deny: []string{"Bash(rm:*)"}}, false, "Bash", bash(cmd))
		t.Logf("%d: %v", n, time.Since(start))
	}
}
