package uninstall

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	webAppResource = schema.GroupVersionResource{Group: "web.acme.com", Version: "v1alpha1", Resource: "webapps"}
	tenantResource = schema.GroupVersionResource{Group: "tenancy.acme.com", Version: "v1alpha1", Resource: "namespacetenants"}
	now            = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
)

func webApp(ns, name string) Resource {
	return Resource{Kind: schema.GroupKind{Group: "web.acme.com", Kind: "WebApp"}, Resource: webAppResource, Namespace: ns, Name: name}
}

func tenant(name string) Resource {
	return Resource{Kind: schema.GroupKind{Group: "tenancy.acme.com", Kind: "NamespaceTenant"}, Resource: tenantResource, Name: name}
}

func TestResourceDescribe(t *testing.T) {
	g := NewWithT(t)
	g.Expect(webApp("shop", "shop").describe(now)).To(Equal("WebApp shop/shop"))
	g.Expect(tenant("team-a").describe(now)).To(Equal("NamespaceTenant team-a"))
	deleting := webApp("shop", "shop")
	deleting.Deleting = now.Add(-90 * time.Second)
	deleting.Finalizers = []string{"uninstall-helm-release", "example.com/other"}
	g.Expect(deleting.describe(now)).To(Equal("WebApp shop/shop (deleting for 1m30s; finalizers: uninstall-helm-release, example.com/other)"))
	deleting.Finalizers = nil
	g.Expect(deleting.describe(now)).To(Equal("WebApp shop/shop (deleting for 1m30s; finalizers: none)"))
}

func TestWriteRefusal(t *testing.T) {
	g := NewWithT(t)
	var b strings.Builder
	left := []Resource{webApp("shop", "shop"), tenant("team-a"), tenant("team-b")}
	WriteRefusal(&b, now, left, "bin/extensions uninstall --delete-resources", "")
	g.Expect(b.String()).To(Equal(`Refusing to continue: 3 resources of the operator's kinds exist.
` + finalizerNote + `
  WebApp shop/shop
  NamespaceTenant team-a
  NamespaceTenant team-b
Delete them first and wait until they are gone:
  bin/extensions uninstall --delete-resources
or with kubectl, while the operator runs:
  kubectl delete webapps.v1alpha1.web.acme.com --all --all-namespaces
  kubectl delete namespacetenants.v1alpha1.tenancy.acme.com --all
`))
}

func TestWriteRefusalOneWithSelector(t *testing.T) {
	g := NewWithT(t)
	var b strings.Builder
	WriteRefusal(&b, now, []Resource{webApp("shop", "shop")}, "x", "team in (a,b)")
	g.Expect(b.String()).To(HavePrefix("Refusing to continue: 1 resource of the operator's kinds exists.\n"))
	// The kubectl command is limited as the search was, quoted for a shell.
	g.Expect(b.String()).To(HaveSuffix("  kubectl delete webapps.v1alpha1.web.acme.com -l 'team in (a,b)' --all-namespaces\n"))
}

func TestWriteTimeout(t *testing.T) {
	g := NewWithT(t)
	var b strings.Builder
	stuck := tenant("team-a")
	stuck.Deleting = now.Add(-5 * time.Minute)
	stuck.Finalizers = []string{"tenancy.acme.com/finalizer"}
	WriteTimeout(&b, now, 5*time.Minute, []Resource{stuck})
	g.Expect(b.String()).To(HavePrefix("Timed out after 5m0s: 1 resource of the operator's kinds is still there:\n" +
		"  NamespaceTenant team-a (deleting for 5m0s; finalizers: tenancy.acme.com/finalizer)\n"))
	g.Expect(b.String()).To(ContainSubstring("Remove the operator only once they are gone."))
}

func TestShellCommand(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		// Plain words stay as they are.
		{[]string{"bin/extensions", "uninstall", "--timeout=5m", "-l", "a=b,c!=d"}, "bin/extensions uninstall --timeout=5m -l 'a=b,c!=d'"},
		// Spaces and quotes are quoted for a POSIX shell.
		{[]string{"x", "--kubeconfig=/my dir/it's"}, `x '--kubeconfig=/my dir/it'\''s'`},
		{[]string{"x", ""}, "x ''"},
	}
	for _, tc := range cases {
		NewWithT(t).Expect(ShellCommand(tc.args...)).To(Equal(tc.want))
	}
}
