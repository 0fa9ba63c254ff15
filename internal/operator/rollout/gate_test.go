package rollout

import (
	"testing"

	. "github.com/onsi/gomega"
)

func TestGate(t *testing.T) {
	g := NewWithT(t)
	var none *Gate
	g.Expect(none.Admits("ns/a")).To(BeTrue(), "a kind without a gate moves freely")

	gate := &Gate{}
	g.Expect(gate.Admits("ns/a")).To(BeFalse(), "before the controller's first pass, nothing moves")

	g.Expect(gate.Admit([]string{"ns/a"})).To(Equal([]string{"ns/a"}))
	g.Expect(gate.Admits("ns/a")).To(BeTrue())
	g.Expect(gate.Admits("ns/b")).To(BeFalse())

	g.Expect(gate.Admit([]string{"ns/a", "ns/b", "ns/c"})).To(Equal([]string{"ns/b", "ns/c"}), "only the newly admitted")
	g.Expect(gate.Admit([]string{"ns/c"})).To(BeEmpty())
	g.Expect(gate.Admits("ns/a")).To(BeFalse(), "Admit sets exactly the keys given")

	gate.AdmitAll()
	g.Expect(gate.Admits("ns/anything")).To(BeTrue())
	g.Expect(gate.Admit([]string{"ns/a"})).To(BeEmpty(), "every key was admitted already")
	g.Expect(gate.Admits("ns/a")).To(BeTrue())
	g.Expect(gate.Admits("ns/anything")).To(BeFalse(), "a new rollout closes the gate again")
}

func TestKey(t *testing.T) {
	g := NewWithT(t)
	g.Expect(Key("shop", "web")).To(Equal("shop/web"))
	g.Expect(Key("", "tenant")).To(Equal("tenant"), "a cluster-scoped resource")
}
