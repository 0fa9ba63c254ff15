package tenant

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// sampleTenant is a NamespaceTenant as the API server returns it.
func sampleTenant() Tenant {
	u := NewObject()
	u.SetName("team-x")
	u.SetUID(types.UID("0b6c6c1e-3f0e-4d7c-9a43-2f1f5d0e8a11"))
	_ = unstructured.SetNestedMap(u.Object, map[string]interface{}{
		"namespaceName":    "app-y",
		"adminUsername":    "sam",
		"deploymentTier":   "stg",
		"additionalAdmins": map[string]interface{}{"users": []interface{}{"kim", "sam"}, "groups": []interface{}{"oncall"}},
	}, "spec")
	return Tenant{u}
}

func TestEventPayload(t *testing.T) {
	g := NewWithT(t)
	ts := time.Date(2026, 11, 21, 12, 0, 0, 0, time.FixedZone("CET", 3600))
	ev := NewEvent(EventDeleted, sampleTenant(), ts)
	raw, err := json.Marshal(ev)
	g.Expect(err).NotTo(HaveOccurred())
	// The wire format receivers depend on: field names, admins without
	// duplicates, UTC timestamp, id from UID and type.
	g.Expect(raw).To(MatchJSON(`{
		"type": "deleted",
		"id": "0b6c6c1e-3f0e-4d7c-9a43-2f1f5d0e8a11-deleted",
		"tenant": "team-x",
		"tenantUID": "0b6c6c1e-3f0e-4d7c-9a43-2f1f5d0e8a11",
		"namespace": "app-y",
		"admins": ["sam", "kim"],
		"adminGroups": ["oncall"],
		"tier": "stg",
		"timestamp": "2026-11-21T11:00:00Z"
	}`))
}

func TestEventID(t *testing.T) {
	g := NewWithT(t)
	// Stable for one tenant and type, different across types and tenants.
	g.Expect(EventID("uid-1", EventCreated)).To(Equal(EventID("uid-1", EventCreated)))
	g.Expect(EventID("uid-1", EventCreated)).NotTo(Equal(EventID("uid-1", EventDeleted)))
	g.Expect(EventID("uid-1", EventDeleted)).NotTo(Equal(EventID("uid-2", EventDeleted)))
}

func TestTenantDefaults(t *testing.T) {
	g := NewWithT(t)
	u := NewObject()
	_ = unstructured.SetNestedField(u.Object, "sam", "spec", "adminUsername")
	tn := Tenant{u}
	// A tier left out is the CRD's default; no groups is an empty list.
	g.Expect(tn.Tier()).To(Equal("dev"))
	g.Expect(tn.AdminUsers()).To(Equal([]string{"sam"}))
	g.Expect(tn.AdminGroups()).To(BeEmpty())
	g.Expect(tn.SkipFinalizer()).To(BeFalse())
	u.SetAnnotations(map[string]string{SkipFinalizerAnnotation: "true"})
	g.Expect(tn.SkipFinalizer()).To(BeTrue())
}

func TestNotify(t *testing.T) {
	cases := []struct {
		name string
		// status the webhook answers
		status int
		// token the notifier sends ("" for none)
		token string
		// tokenErr makes reading the token fail
		tokenErr error
		// wantErr is a substring of the expected error, "" for success
		wantErr string
	}{
		// 2xx is success, with or without a token.
		{name: "200", status: http.StatusOK},
		{name: "204 with token", status: http.StatusNoContent, token: "s3cret"},
		// Anything else is a failure naming the status and the body.
		{name: "500", status: http.StatusInternalServerError, wantErr: "500 Internal Server Error: boom"},
		{name: "302 is not delivered", status: http.StatusFound, wantErr: "302"},
		{name: "404", status: http.StatusNotFound, wantErr: "404"},
		// A token that cannot be read stops the delivery.
		{name: "token error", status: http.StatusOK, tokenErr: errors.New("no secret"), wantErr: "no secret"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			var got *http.Request
			var body []byte
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				got = r
				body, _ = io.ReadAll(r.Body)
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte("boom"))
			}))
			defer srv.Close()
			n := &Notifier{URL: srv.URL, Client: srv.Client()}
			if tc.token != "" || tc.tokenErr != nil {
				n.Token = func(context.Context) (string, error) { return tc.token, tc.tokenErr }
			}
			ev := NewEvent(EventCreated, sampleTenant(), time.Unix(0, 0))
			err := n.Notify(context.Background(), ev)
			if tc.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tc.wantErr)))
			} else {
				g.Expect(err).NotTo(HaveOccurred())
			}
			if tc.tokenErr != nil {
				g.Expect(got).To(BeNil(), "nothing is sent without the token")
				return
			}
			g.Expect(got.Method).To(Equal(http.MethodPost))
			g.Expect(got.Header.Get("Content-Type")).To(Equal("application/json"))
			g.Expect(got.Header.Get("Idempotency-Key")).To(Equal(ev.ID))
			if tc.token != "" {
				g.Expect(got.Header.Get("Authorization")).To(Equal("Bearer " + tc.token))
			} else {
				g.Expect(got.Header.Get("Authorization")).To(BeEmpty())
			}
			var decoded Event
			g.Expect(json.Unmarshal(body, &decoded)).To(Succeed())
			g.Expect(decoded.ID).To(Equal(ev.ID))
			g.Expect(decoded.Type).To(Equal(EventCreated))
		})
	}
}

func TestNotifyTimeout(t *testing.T) {
	g := NewWithT(t)
	// A webhook that never answers fails the attempt after the client's
	// timeout instead of blocking the controller.
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	n := &Notifier{URL: srv.URL, Client: &http.Client{Timeout: 50 * time.Millisecond}}
	err := n.Notify(context.Background(), NewEvent(EventDeleted, sampleTenant(), time.Unix(0, 0)))
	g.Expect(err).To(MatchError(ContainSubstring("deleted")))
}

func TestBackoffDelay(t *testing.T) {
	b := Backoff{Base: time.Second, Max: 30 * time.Second}
	cases := []struct {
		// failures so far
		failures int
		want     time.Duration
	}{
		{0, 0},                  // nothing failed yet
		{1, time.Second},        // first failure: the base
		{2, 2 * time.Second},    // doubles
		{3, 4 * time.Second},    // doubles again
		{5, 16 * time.Second},   // still below the cap
		{6, 30 * time.Second},   // 32s capped
		{100, 30 * time.Second}, // no overflow for long outages
	}
	for _, tc := range cases {
		NewWithT(t).Expect(b.Delay(tc.failures)).To(Equal(tc.want), "failures=%d", tc.failures)
	}
	// The default caps at five minutes.
	NewWithT(t).Expect(DefaultBackoff.Delay(1000)).To(Equal(5 * time.Minute))
}

func TestOptionsValidate(t *testing.T) {
	cases := []struct {
		name    string
		opts    Options
		wantErr string
	}{
		// No webhook at all is valid.
		{name: "defaults", opts: DefaultOptions()},
		// URL and secret reference.
		{name: "webhook with token", opts: Options{WebhookURL: "https://hooks.acme.com/tenants", WebhookTokenSecret: "ops/tenant-hook", WebhookTimeout: time.Second}},
		// Not an http(s) URL.
		{name: "bad URL", opts: Options{WebhookURL: "hooks.acme.com", WebhookTimeout: time.Second}, wantErr: "--tenant-webhook-url"},
		// A token without a webhook is a mistake.
		{name: "token without URL", opts: Options{WebhookTokenSecret: "ops/hook", WebhookTimeout: time.Second}, wantErr: "needs --tenant-webhook-url"},
		// Secret reference must be namespace/name.
		{name: "bad secret ref", opts: Options{WebhookURL: "http://127.0.0.1:1", WebhookTokenSecret: "hook", WebhookTimeout: time.Second}, wantErr: "<namespace>/<name>"},
		// A zero timeout would never time out.
		{name: "zero timeout", opts: Options{}, wantErr: "timeout"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			err := tc.opts.Validate()
			if tc.wantErr == "" {
				g.Expect(err).NotTo(HaveOccurred())
			} else {
				g.Expect(err).To(MatchError(ContainSubstring(tc.wantErr)))
			}
		})
	}
}
