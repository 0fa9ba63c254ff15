package helmruntime

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/chart"
	hrelease "helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/acme/platform-operator/internal/operator/manifest"
	"github.com/acme/platform-operator/internal/operator/reconcilerecord"
	"github.com/acme/platform-operator/internal/operator/release"
	"github.com/acme/platform-operator/internal/operator/watchconfig"
)

func chartWithAnnotation(value string) *chart.Chart {
	return &chart.Chart{Metadata: &chart.Metadata{Name: "demo", Annotations: map[string]string{manifest.GeneratedValuesAnnotation: value}}}
}

func TestRandomString(t *testing.T) {
	g := NewWithT(t)
	seen := map[string]bool{}
	for range 50 {
		s, err := randomString(32)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(s).To(MatchRegexp(`^[A-Za-z0-9]{32}$`))
		g.Expect(seen).NotTo(HaveKey(s))
		seen[s] = true
	}
}

// A stand-in for the translator's Secret reader. It stands in for plain
// reads, not for anything the API server enforces; the integration and e2e
// tests run the real one. The release store is the reconcile's record,
// where the action path puts what it read.

type secretReader struct {
	client.Reader // nil: only Get is used
	secrets       map[client.ObjectKey]*corev1.Secret
}

func (r secretReader) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	s, ok := r.secrets[key]
	if !ok {
		return apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, key.Name)
	}
	s.DeepCopyInto(obj.(*corev1.Secret))
	return nil
}

func TestValuesTranslator(t *testing.T) {
	const generated = "GENERATEDgeneratedGENERATED12345"
	decl := "- path: database.auth.password\n  secret: {name: '{{ .Release.Name }}-db', key: password}"
	kept := &corev1.Secret{Data: map[string][]byte{"password": []byte("keptKEPTkeptKEPTkeptKEPTkeptKEPT")}}
	emptyKept := &corev1.Secret{Data: map[string][]byte{"password": nil}}
	storedRelease := &hrelease.Release{Config: map[string]interface{}{
		"database": map[string]interface{}{"auth": map[string]interface{}{"password": "storedSTOREDstoredSTOREDstored12"}},
	}}

	cases := []struct {
		name string
		// spec of the custom resource
		spec map[string]interface{}
		// rel and relErr are what the reconcile read of the release;
		// unread: it read nothing
		rel    *hrelease.Release
		relErr error
		unread bool
		// secret, when set, exists as "web-db"
		secret *corev1.Secret
		// want is the password the chart gets, wantEvent the reason of the
		// event ("" for none)
		want      string
		wantEvent string
		wantErr   string
	}{
		{
			// The user set the value (plain helm style): used as is, the
			// release is not even looked at.
			name: "set by the user", spec: map[string]interface{}{"database": map[string]interface{}{"auth": map[string]interface{}{"password": "mine"}}},
			want: "mine",
		},
		{
			// Every later reconcile: the value of the deployed release.
			name: "from the release", spec: map[string]interface{}{}, rel: storedRelease, secret: kept,
			want: "storedSTOREDstoredSTOREDstored12",
		},
		{
			// No release yet but a kept Secret of an earlier release of the
			// same name: its value, reported as recovered.
			name: "from a kept Secret", spec: map[string]interface{}{"database": map[string]interface{}{"name": "app"}}, relErr: driver.ErrReleaseNotFound, secret: kept,
			want: "keptKEPTkeptKEPTkeptKEPTkeptKEPT", wantEvent: ReasonValueRecovered,
		},
		{
			// A release whose values lack it (say, installed before the chart
			// declared it) also falls back to the Secret.
			name: "release without the value", spec: map[string]interface{}{}, rel: &hrelease.Release{Config: map[string]interface{}{}}, secret: kept,
			want: "keptKEPTkeptKEPTkeptKEPTkeptKEPT", wantEvent: ReasonValueRecovered,
		},
		{
			// First install: generated, reported without the value.
			name: "generated", spec: map[string]interface{}{}, relErr: driver.ErrReleaseNotFound,
			want: generated, wantEvent: ReasonValueGenerated,
		},
		{
			// A Secret without the key does not count.
			name: "kept Secret without the key", spec: map[string]interface{}{}, relErr: driver.ErrReleaseNotFound, secret: emptyKept,
			want: generated, wantEvent: ReasonValueGenerated,
		},
		{
			// A store that cannot be read is an error, never a new value.
			name: "release store error", spec: map[string]interface{}{}, relErr: errors.New("etcd is down"),
			wantErr: "etcd is down",
		},
		{
			// A release the reconcile did not read is an error, never a
			// new value.
			name: "release not read", spec: map[string]interface{}{}, unread: true,
			wantErr: "was not read",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			secrets := map[client.ObjectKey]*corev1.Secret{}
			if tc.secret != nil {
				secrets[client.ObjectKey{Namespace: "ns", Name: "web-db"}] = tc.secret
			}
			recorder := record.NewFakeRecorder(10)
			vals, err := watchconfig.ResolvedWatch{Chart: chartWithAnnotation(decl)}.Values()
			g.Expect(err).NotTo(HaveOccurred())
			tr := newValuesTranslator(vals, watchconfig.ReleaseNamespaceMapper(false, ""), secretReader{secrets: secrets}, secretReader{secrets: secrets}, recorder, logr.Discard())
			tr.random = func(n int) (string, error) { return generated[:n], nil }
			obj := &unstructured.Unstructured{Object: map[string]interface{}{"spec": tc.spec}}
			obj.SetNamespace("ns")
			obj.SetName("web")
			obj.SetUID("uid-web")
			if !tc.unread {
				reconcilerecord.Of(obj).ReadRelease(tc.rel, tc.relErr)
			}
			before := obj.DeepCopy()

			// A failed install: translated, never kept. It records
			// nothing, and its retry does not add a second claim.
			_, _ = tr.Translate(context.Background(), obj)
			g.Expect(recorder.Events).To(BeEmpty(), "no Event before a release keeps the values")
			got, err := tr.Translate(context.Background(), obj)
			if tc.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tc.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			password, _ := release.NestedString(got, []string{"database", "auth", "password"})
			g.Expect(password).To(Equal(tc.want))
			g.Expect(obj).To(Equal(before), "the custom resource must not change")

			// The reconcile succeeded: the post hook records the Events.
			g.Expect(tr.Exec(obj, hrelease.Release{}, logr.Discard())).To(Succeed())
			g.Expect(tr.Exec(obj, hrelease.Release{}, logr.Discard())).To(Succeed(), "a later reconcile records nothing again")
			close(recorder.Events)
			var events []string
			for e := range recorder.Events {
				events = append(events, e)
			}
			if tc.wantEvent == "" {
				g.Expect(events).To(BeEmpty())
				return
			}
			g.Expect(events).To(HaveLen(1))
			g.Expect(events[0]).To(ContainSubstring(tc.wantEvent))
			g.Expect(events[0]).To(ContainSubstring("database.auth.password"))
			g.Expect(events[0]).NotTo(ContainSubstring(tc.want), "events name the value, never show it")
			g.Expect(strings.Contains(events[0], generated)).To(BeFalse())
		})
	}
}
