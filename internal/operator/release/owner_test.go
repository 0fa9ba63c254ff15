package release

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestJudge(t *testing.T) {
	nginx := schema.GroupKind{Group: "platform.acme.com", Kind: "Nginx"}
	claimant := Owner{GroupKind: nginx, Namespace: "acc", Name: "shop", UID: "uid-1"}
	cases := []struct {
		name string
		// recorded is the owner the release records; ok false: none.
		recorded Owner
		ok       bool
		want     Verdict
	}{
		{name: "the same resource", recorded: claimant, ok: true, want: Owned},
		{name: "recorded without a UID", recorded: Owner{GroupKind: nginx, Namespace: "acc", Name: "shop"}, ok: true, want: Owned},
		// The recorded owner was deleted: two live objects cannot share a
		// kind, a namespace and a name.
		{name: "the same kind and name, another UID", recorded: Owner{GroupKind: nginx, Namespace: "acc", Name: "shop", UID: "uid-0"}, ok: true, want: Adopted},
		{name: "another kind", recorded: Owner{GroupKind: schema.GroupKind{Group: "platform.acme.com", Kind: "WebApp"}, Namespace: "acc", Name: "shop", UID: "uid-1"}, ok: true, want: Foreign},
		{name: "the same kind in another group", recorded: Owner{GroupKind: schema.GroupKind{Group: "other.example.com", Kind: "Nginx"}, Namespace: "acc", Name: "shop", UID: "uid-1"}, ok: true, want: Foreign},
		{name: "another namespace", recorded: Owner{GroupKind: nginx, Namespace: "other", Name: "shop", UID: "uid-1"}, ok: true, want: Foreign},
		{name: "another name", recorded: Owner{GroupKind: nginx, Namespace: "acc", Name: "other", UID: "uid-1"}, ok: true, want: Foreign},
		// Installed by hand: no owner is known.
		{name: "unknown owner", ok: false, want: Foreign},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(Judge(tc.recorded, tc.ok, claimant)).To(Equal(tc.want))
		})
	}
}

func TestLatestRecord(t *testing.T) {
	g := NewWithT(t)
	record := func(name, version string) metav1.PartialObjectMetadata {
		return metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"version": version}}}
	}
	records := []metav1.PartialObjectMetadata{
		record("sh.helm.release.v1.web.v2", "2"),
		record("sh.helm.release.v1.web.v10", "10"), // numerically, not as text
		record("not-a-revision", "latest"),
		record("sh.helm.release.v1.web.v9", "9"),
		{ObjectMeta: metav1.ObjectMeta{Name: "unlabelled"}},
	}
	latest := LatestRecord(records)
	g.Expect(latest).NotTo(BeNil())
	g.Expect(latest.Name).To(Equal("sh.helm.release.v1.web.v10"))
	g.Expect(latest).To(BeIdenticalTo(&records[1]), "a pointer into the list")

	g.Expect(LatestRecord([]metav1.PartialObjectMetadata{record("x", "x"), {}})).To(BeNil(), "no numeric version")
	g.Expect(LatestRecord([]metav1.PartialObjectMetadata(nil))).To(BeNil())
}
