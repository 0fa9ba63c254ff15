package managersetup

import (
	"math"
	"runtime/debug"
	"testing"

	"github.com/go-logr/logr"
)

func TestSetMemoryLimit(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	env := func(vars map[string]string) func(string) string { return func(k string) string { return vars[k] } }

	debug.SetMemoryLimit(math.MaxInt64)
	if got := SetMemoryLimit(logr.Discard(), env(map[string]string{MemoryLimitEnv: "1073741824"})); got != 966367641 {
		t.Errorf("1 GiB container: Go limit %d, want 90%% of it (966367641)", got)
	}
	if got := debug.SetMemoryLimit(-1); got != 966367641 {
		t.Errorf("the runtime's limit is %d", got)
	}
	for _, bad := range []string{"", "0", "-5", "1Gi"} {
		debug.SetMemoryLimit(math.MaxInt64)
		if got := SetMemoryLimit(logr.Discard(), env(map[string]string{MemoryLimitEnv: bad})); got != math.MaxInt64 {
			t.Errorf("MEMORY_LIMIT=%q set the limit to %d", bad, got)
		}
	}
	// GOMEMLIMIT wins: the runtime applied it at start-up; it is left alone.
	debug.SetMemoryLimit(500 << 20)
	if got := SetMemoryLimit(logr.Discard(), env(map[string]string{"GOMEMLIMIT": "500MiB", MemoryLimitEnv: "1073741824"})); got != 500<<20 {
		t.Errorf("with GOMEMLIMIT the limit became %d", got)
	}
}
