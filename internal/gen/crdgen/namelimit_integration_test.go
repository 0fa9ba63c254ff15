package crdgen

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/acme/platform-operator/internal/devtools/testenv"
	"github.com/acme/platform-operator/internal/operator/apikinds"
)

// minimalSpecs is a valid spec per chart kind (the chart's required values),
// so that an object is refused for its name only.
var minimalSpecs = map[string]map[string]any{
	"Nginx": {},
	"WebApp": {
		"deploymentTier": "dev",
		"webAppImage":    "registry.acme.com/app/app:v1",
		"webAppHostname": "app.acme.com",
	},
	"NamespaceTenant": {
		"namespaceName": "team-ns",
		"adminUsername": "sam",
	},
}

// TestNameLimitOnAPIServer applies the committed CRDs of config/crd/kinds.yaml
// (TestCommittedCRDsUpToDate keeps them equal to crdgen's output) to a real
// kube-apiserver and checks each kind's name rule at its boundary: the
// longest allowed name is created, one character more is refused with the
// kind's message, and names with a dot or a leading digit are refused
// exactly for the kinds that ask for a DNS-1035 label.
//
// Needs KUBEBUILDER_ASSETS (a directory with etcd and kube-apiserver, e.g.
// bin/k8s after `make cluster-binaries`); skipped without it.
func TestNameLimitOnAPIServer(t *testing.T) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Skip("KUBEBUILDER_ASSETS is not set: this test needs a directory with etcd and kube-apiserver (`make test-integration` sets it)")
	}
	g := NewWithT(t)
	root := filepath.Join("..", "..", "..")
	kinds, err := apikinds.LoadKinds(filepath.Join(root, "config", "crd", "kinds.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	var crdFiles []string
	for _, k := range kinds {
		crdFiles = append(crdFiles, filepath.Join(root, "config", "crd", "bases", k.FileName()))
	}

	env := testenv.Start(crdFiles...)
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stop envtest: %v", err)
		}
	})
	cfg := env.Require(t)
	c, err := client.New(cfg, client.Options{})
	g.Expect(err).NotTo(HaveOccurred())

	for _, k := range kinds {
		t.Run(k.Kind, func(t *testing.T) {
			spec, ok := minimalSpecs[k.Kind]
			if !ok {
				t.Fatalf("no minimal spec for kind %s: add one to minimalSpecs", k.Kind)
			}
			l := k.NameLimit
			gvk := schema.GroupVersionKind{Group: k.Group, Version: k.Version, Kind: k.Kind}
			message := NameRule(l).Message
			ns := ""
			if k.Scope == "Namespaced" {
				ns = "default"
			}
			newObject := func(name string) *unstructured.Unstructured {
				u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
				u.SetGroupVersionKind(gvk)
				u.SetName(name)
				u.SetNamespace(ns)
				return u
			}
			accepted := func(t *testing.T, name string) {
				t.Helper()
				g := NewWithT(t)
				g.Expect(c.Create(context.Background(), newObject(name))).To(Succeed(), "%q (%d characters)", name, len(name))
				g.Expect(c.Delete(context.Background(), newObject(name))).To(Succeed())
			}
			refused := func(t *testing.T, name string) {
				t.Helper()
				g := NewWithT(t)
				err := c.Create(context.Background(), newObject(name))
				g.Expect(err).To(HaveOccurred(), "%q (%d characters) was accepted", name, len(name))
				g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
				// The API server names the field and quotes the rule's message.
				g.Expect(err.Error()).To(ContainSubstring("metadata.name: Invalid value"))
				g.Expect(err.Error()).To(ContainSubstring(message))
				var status apierrors.APIStatus
				g.Expect(errors.As(err, &status)).To(BeTrue())
				g.Expect(status.Status().Details.Causes).To(ContainElement(metav1.StatusCause{
					Type: metav1.CauseTypeFieldValueInvalid, Field: "metadata.name",
					Message: "Invalid value: " + message,
				}))
				t.Logf("refused %q: %v", name, err)
				got := newObject(name)
				g.Expect(apierrors.IsNotFound(c.Get(context.Background(), client.ObjectKeyFromObject(got), got))).To(BeTrue(), "the refused object exists")
			}

			t.Run("longest name is accepted", func(t *testing.T) {
				accepted(t, nameOfLength("a", l.MaxLength))
			})
			t.Run("one character more is refused", func(t *testing.T) {
				refused(t, nameOfLength("a", l.MaxLength+1))
			})
			t.Run("generated name over the limit is refused", func(t *testing.T) {
				// The API server appends 5 random characters to generateName
				// before validating, so the rule sees the final name.
				g := NewWithT(t)
				u := newObject("")
				u.SetGenerateName(nameOfLength("g", l.MaxLength-4))
				err := c.Create(context.Background(), u)
				g.Expect(err).To(MatchError(ContainSubstring(message)))
			})
			if *l.DNS1035Label {
				t.Run("dot is refused", func(t *testing.T) { refused(t, "web.app") })
				t.Run("leading digit is refused", func(t *testing.T) { refused(t, "1app") })
			} else {
				// Helm's release-name rule equals the DNS-1123 subdomain the
				// API server already enforces; nothing more is refused.
				t.Run("dot is accepted", func(t *testing.T) { accepted(t, "team.a") })
				t.Run("leading digit is accepted", func(t *testing.T) { accepted(t, "1team") })
			}
		})
	}
}

// nameOfLength is a valid name of n characters starting with prefix.
func nameOfLength(prefix string, n int) string {
	return prefix + strings.Repeat("x", n-len(prefix)-1) + "z"
}
