package admissioncheck

import (
	"errors"
	"testing"

	. "github.com/onsi/gomega"
)

// TestRenderCacheForgetsTheOldestFirst: the cache of render results keeps
// at most its size, errors as well as successes, and a second put of a
// key keeps the first answer.
func TestRenderCacheForgetsTheOldestFirst(t *testing.T) {
	g := NewWithT(t)
	c := newRenderCache(2)
	refused := errors.New("containerPort and statusPort must differ")
	c.put("a", rendered{})
	c.put("b", rendered{err: refused})
	c.put("b", rendered{})
	r, ok := c.get("b")
	g.Expect(ok).To(BeTrue())
	g.Expect(r.err).To(MatchError(refused))
	c.put("c", rendered{})
	_, ok = c.get("a")
	g.Expect(ok).To(BeFalse(), "the oldest entry is forgotten")
	for _, key := range []string{"b", "c"} {
		_, ok = c.get(key)
		g.Expect(ok).To(BeTrue(), key)
	}
}
