package benchkit

import (
	"testing"

	. "github.com/onsi/gomega"
)

func TestCleanupRunsOnceAndIsForgotten(t *testing.T) {
	g := NewWithT(t)
	calls := 0
	run := Cleanup(func() { calls++ })
	run()
	run()
	g.Expect(calls).To(Equal(1))
	cleanups.mu.Lock()
	defer cleanups.mu.Unlock()
	g.Expect(cleanups.run).To(BeEmpty(), "a cleanup that ran is not run again on an interrupt")
}
