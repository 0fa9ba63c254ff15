package actionpath

import (
	"bytes"
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/action"
)

// countingChain stands for the post-render chain: it counts its runs,
// refuses a manifest containing "refused", and appends a line (what the
// owner references do to a manifest, in small).
type countingChain struct{ runs int }

func (c *countingChain) Run(in *bytes.Buffer) (*bytes.Buffer, error) {
	c.runs++
	if bytes.Contains(in.Bytes(), []byte("refused")) {
		return nil, errors.New("refused")
	}
	out := bytes.NewBuffer(bytes.Clone(in.Bytes()))
	out.WriteString("owned: true\n")
	in.Reset() // a chain may consume its input
	return out, nil
}

// memoised returns the post-renderer the layer's option sets over chain.
func memoised(g Gomega, c *renderMemoClient, chain *countingChain) func(string) (string, error) {
	u := action.NewUpgrade(&action.Configuration{})
	u.PostRenderer = chain
	g.Expect(c.memoise()(u)).To(Succeed())
	return func(manifest string) (string, error) {
		out, err := u.PostRenderer.Run(bytes.NewBufferString(manifest))
		if err != nil {
			return "", err
		}
		return out.String(), nil
	}
}

// TestPostRenderMemo: the upgrade after a dry-run of the same manifest
// gets the dry-run's output without running the chain again; another
// manifest runs it; a refusal is not remembered.
func TestPostRenderMemo(t *testing.T) {
	g := NewWithT(t)
	c := &renderMemoClient{}
	chain := &countingChain{}
	dryRun, upgrade := memoised(g, c, chain), memoised(g, c, chain)

	first, err := dryRun("kind: ConfigMap\n")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(first).To(Equal("kind: ConfigMap\nowned: true\n"))
	again, err := upgrade("kind: ConfigMap\n")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again).To(Equal(first))
	g.Expect(chain.runs).To(Equal(1), "the same manifest is post-rendered once")

	other, err := upgrade("kind: Secret\n")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(other).To(Equal("kind: Secret\nowned: true\n"))
	g.Expect(chain.runs).To(Equal(2), "another manifest runs the chain")

	for range 2 {
		_, err = upgrade("kind: refused\n")
		g.Expect(err).To(MatchError("refused"))
	}
	g.Expect(chain.runs).To(Equal(4), "a refusal is judged on every render")

	c2 := &renderMemoClient{}
	chain2 := &countingChain{}
	_, err = memoised(g, c2, chain2)("kind: ConfigMap\n")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(chain2.runs).To(Equal(1), "each reconcile's client remembers its own renders")
}
