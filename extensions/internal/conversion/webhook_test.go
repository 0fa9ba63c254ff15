package conversion

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// review posts a ConversionReview of objs to the webhook and returns its
// response.
func review(t *testing.T, w *Webhook, desired string, objs ...string) *apiextensionsv1.ConversionResponse {
	t.Helper()
	in := apiextensionsv1.ConversionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "ConversionReview"},
		Request:  &apiextensionsv1.ConversionRequest{UID: types.UID("req-1"), DesiredAPIVersion: desired},
	}
	for _, o := range objs {
		raw, err := object(t, o).MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		in.Request.Objects = append(in.Request.Objects, runtime.RawExtension{Raw: raw})
	}
	body, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	w.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, Path, bytes.NewReader(body)))
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	var out apiextensionsv1.ConversionReview
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	if out.Kind != "ConversionReview" || out.APIVersion != "apiextensions.k8s.io/v1" || out.Response == nil {
		t.Fatalf("not a ConversionReview response: %s", rec.Body)
	}
	return out.Response
}

func TestWebhookConvertsEveryObject(t *testing.T) {
	g := NewWithT(t)
	w := &Webhook{Rules: testRules(t), Log: logr.Discard()}
	resp := review(t, w, "demo.example.com/v1beta1", alpha, beta)
	g.Expect(resp.UID).To(Equal(types.UID("req-1")))
	g.Expect(resp.Result.Status).To(Equal(metav1.StatusSuccess))
	g.Expect(resp.ConvertedObjects).To(HaveLen(2))
	for _, o := range resp.ConvertedObjects {
		g.Expect(o.Raw).To(MatchJSON(mustJSON(t, beta)))
	}

	resp = review(t, w, "demo.example.com/v1alpha1", beta)
	g.Expect(resp.ConvertedObjects[0].Raw).To(MatchJSON(mustJSON(t, alpha)))
}

// One object the webhook cannot convert fails the review, with a message
// that says why.
func TestWebhookRefusesUnknownVersion(t *testing.T) {
	g := NewWithT(t)
	w := &Webhook{Rules: testRules(t), Log: logr.Discard()}
	resp := review(t, w, "demo.example.com/v1", alpha)
	g.Expect(resp.UID).To(Equal(types.UID("req-1")))
	g.Expect(resp.Result.Status).To(Equal(metav1.StatusFailure))
	g.Expect(resp.Result.Message).To(Equal(`object 0: Demo.demo.example.com has no version "v1": it is served as v1alpha1, v1beta1`))
	g.Expect(resp.ConvertedObjects).To(BeEmpty())
}

func TestWebhookBadRequests(t *testing.T) {
	g := NewWithT(t)
	w := &Webhook{Rules: testRules(t), Log: logr.Discard()}
	for _, body := range []string{`{`, `{"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview"}`} {
		rec := httptest.NewRecorder()
		w.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, Path, bytes.NewBufferString(body)))
		g.Expect(rec.Code).To(Equal(http.StatusBadRequest), body)
	}
	rec := httptest.NewRecorder()
	w.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, Path, nil))
	g.Expect(rec.Code).To(Equal(http.StatusMethodNotAllowed))
}

func mustJSON(t *testing.T, s string) []byte {
	t.Helper()
	raw, err := object(t, s).MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return raw
}
