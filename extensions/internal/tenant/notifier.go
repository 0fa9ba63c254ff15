package tenant

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// EventType is the kind of lifecycle event sent to the webhook.
type EventType string

// Lifecycle event types.
const (
	// EventCreated is sent once, when the tenant's namespace first exists.
	EventCreated EventType = "created"
	// EventDeleted is sent when the tenant is deleted and its namespace is
	// gone; the tenant is kept until it is delivered.
	EventDeleted EventType = "deleted"
)

// Event is the JSON body POSTed to the lifecycle webhook.
type Event struct {
	// Type is created or deleted.
	Type EventType `json:"type"`
	// ID is the same for every delivery attempt of one event of one
	// tenant; receivers use it to drop duplicates.
	ID string `json:"id"`
	// Tenant is the NamespaceTenant's name, TenantUID its UID.
	Tenant    string `json:"tenant"`
	TenantUID string `json:"tenantUID"`
	// Namespace is the tenant's namespace.
	Namespace string `json:"namespace"`
	// Admins are the users, AdminGroups the groups bound to admin.
	Admins      []string `json:"admins"`
	AdminGroups []string `json:"adminGroups"`
	// Tier is dev, stg or prod.
	Tier string `json:"tier"`
	// Timestamp is when it happened: the namespace's creation for created,
	// the tenant's deletion for deleted. Stable across retries.
	Timestamp time.Time `json:"timestamp"`
}

// EventID returns the idempotency id of an event of a tenant: stable across
// retries and restarts, different for another tenant (UID) or type.
func EventID(tenantUID string, t EventType) string {
	return tenantUID + "-" + string(t)
}

// NewEvent builds the event of type typ for a tenant that happened at ts.
func NewEvent(typ EventType, t Tenant, ts time.Time) Event {
	return Event{
		Type:        typ,
		ID:          EventID(string(t.GetUID()), typ),
		Tenant:      t.GetName(),
		TenantUID:   string(t.GetUID()),
		Namespace:   t.NamespaceName(),
		Admins:      t.AdminUsers(),
		AdminGroups: t.AdminGroups(),
		Tier:        t.Tier(),
		Timestamp:   ts.UTC(),
	}
}

// TokenSource returns the bearer token for a delivery; "" sends none.
type TokenSource func(ctx context.Context) (string, error)

// Notifier delivers lifecycle events to a webhook.
type Notifier struct {
	// URL receives a POST per event.
	URL string
	// Client sends the requests; its Timeout bounds one attempt.
	Client *http.Client
	// Token, when set, provides an Authorization bearer token.
	Token TokenSource
}

// Notify POSTs ev as JSON and succeeds only on a 2xx answer. The event id is
// also sent as the Idempotency-Key header.
func (n *Notifier) Notify(ctx context.Context, ev Event) error {
	body, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("encode %s event: %w", ev.Type, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, n.URL, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("build webhook request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", ev.ID)
	req.Header.Set("User-Agent", "platform-operator-extensions")
	if n.Token != nil {
		token, err := n.Token(ctx)
		if err != nil {
			return fmt.Errorf("read webhook token: %w", err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
	}
	client := n.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("POST %s event: %w", ev.Type, err)
	}
	defer resp.Body.Close()
	snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 256))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("POST %s event: webhook answered %s: %s", ev.Type, resp.Status, strings.TrimSpace(string(snippet)))
	}
	return nil
}

// Backoff is a capped exponential retry delay.
type Backoff struct {
	// Base is the delay after the first failure; it doubles after each
	// further failure.
	Base time.Duration
	// Max caps the delay.
	Max time.Duration
}

// DefaultBackoff retries after 1s, 2s, 4s, ... and at most every 5 minutes.
var DefaultBackoff = Backoff{Base: time.Second, Max: 5 * time.Minute}

// Delay returns how long to wait after the given number of consecutive
// failures (1 for the first failure).
func (b Backoff) Delay(failures int) time.Duration {
	if failures < 1 {
		return 0
	}
	d := b.Base
	for i := 1; i < failures; i++ {
		d *= 2
		if d >= b.Max || d <= 0 {
			return b.Max
		}
	}
	return min(d, b.Max)
}
