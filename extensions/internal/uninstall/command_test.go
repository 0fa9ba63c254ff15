package uninstall

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

func TestDeleteCommand(t *testing.T) {
	g := NewWithT(t)
	// The same command line, flags kept, with --delete-resources.
	g.Expect(deleteCommand("bin/extensions", []string{"--timeout=2m", "--selector", "team=a"})).
		To(Equal("bin/extensions uninstall --timeout=2m --selector team=a --delete-resources"))
}

func TestOptionsValidate(t *testing.T) {
	cases := []struct {
		name    string
		edit    func(*Options)
		wantErr string // empty: valid
	}{
		{"defaults", func(*Options) {}, ""},
		// A wait of zero would give up at once.
		{"zero timeout", func(o *Options) { o.Timeout = 0 }, "--timeout 0s is not positive"},
		// A selector the API server would refuse is refused before.
		{"bad selector", func(o *Options) { o.Selector = "a in" }, "--selector"},
		{"selector", func(o *Options) { o.Selector = "app.kubernetes.io/part-of=shop" }, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			o := DefaultOptions()
			tc.edit(&o)
			err := o.Validate()
			if tc.wantErr == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(MatchError(ContainSubstring(tc.wantErr)))
		})
	}
}

// TestCommandUsageErrors: wrong flags exit 2 before the cluster is asked.
func TestCommandUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"--no-such-flag"},
		{"extra-argument"},
		{"--timeout=-1s"},
		{"--kinds-file=/nonexistent/kinds.yaml"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			g := NewWithT(t)
			var out, errOut strings.Builder
			code := Command(context.Background(), "extensions", args, &out, &errOut)
			g.Expect(code).To(Equal(ExitUsage), errOut.String())
			g.Expect(out.String()).To(BeEmpty())
			g.Expect(errOut.String()).NotTo(BeEmpty())
		})
	}
}
