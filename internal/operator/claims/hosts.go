package claims

import (
	"context"
	"fmt"
	"strings"
)

// HostScope is how far an Ingress hostname must be unique.
type HostScope string

const (
	// HostsCluster: a host that a resource of ours serves in any
	// namespace, or that any Ingress in another namespace serves, is
	// refused. A tenant cannot take another tenant's traffic on a shared
	// ingress controller.
	HostsCluster HostScope = "cluster"
	// HostsNamespace: a host is refused only when another resource of ours
	// in the same namespace serves it (an ingress controller per
	// namespace).
	HostsNamespace HostScope = "namespace"
	// HostsOff: hostnames are not checked.
	HostsOff HostScope = "off"
)

// HostScopes lists the scopes, for flags and errors.
var HostScopes = []HostScope{HostsCluster, HostsNamespace, HostsOff}

// ParseHostScope returns the scope named s.
func ParseHostScope(s string) (HostScope, error) {
	for _, h := range HostScopes {
		if string(h) == s {
			return h, nil
		}
	}
	names := make([]string, len(HostScopes))
	for i, h := range HostScopes {
		names[i] = string(h)
	}
	return "", fmt.Errorf("%q is not a host scope (%s)", s, strings.Join(names, ", "))
}

// Ingress is an Ingress that serves a host, with the release that
// rendered it (empty when none did).
type Ingress struct {
	Namespace, Name               string
	ReleaseName, ReleaseNamespace string
}

// IngressIndex finds the Ingresses that serve a host, in any namespace.
type IngressIndex interface {
	ServingHost(ctx context.Context, host string) ([]Ingress, error)
}

// HostClashError is a host a release's Ingress would serve that another
// Ingress serves already.
type HostClashError struct {
	Host string
	// Ingress serves the host; Holder is the resource of ours whose
	// release rendered it, "" for an Ingress of no resource of ours.
	Ingress Ingress
	Holder  string
	// Claimant is the kind of the refused resource; Field the spec value
	// that holds the host, if one does.
	Claimant, Field string
}

func (e *HostClashError) Error() string {
	by := fmt.Sprintf("Ingress %s/%s", e.Ingress.Namespace, e.Ingress.Name)
	if e.Holder != "" {
		by += " of " + e.Holder
	}
	hint := "choose another host for this " + e.Claimant
	if e.Field != "" {
		hint = "choose another " + e.Field
	}
	return fmt.Sprintf("host %s is served by %s already; %s", e.Host, by, hint)
}

// Hosts returns the first host of objs' Ingresses that another Ingress
// serves and that c.HostScope does not let claimant share; nil when there is
// none, or the check is off. An Ingress of the claimant's own release
// never clashes, so a resource keeps its hosts across edits.
func (c Checker) Hosts(ctx context.Context, objs []Object, claimant Claimant) (*HostClashError, error) {
	if c.Ingresses == nil || c.HostScope == HostsOff || c.HostScope == "" {
		return nil, nil
	}
	for _, o := range objs {
		for _, host := range o.Hosts {
			holders, err := c.Ingresses.ServingHost(ctx, host)
			if err != nil {
				return nil, fmt.Errorf("look up the Ingresses of host %s: %w", host, err)
			}
			for _, in := range holders {
				if in.ReleaseName == claimant.ReleaseName && in.ReleaseNamespace == claimant.ReleaseNamespace {
					continue
				}
				sameNamespace := in.Namespace == o.Namespace
				if c.HostScope == HostsCluster && !sameNamespace {
					clash := &HostClashError{Host: host, Ingress: in, Claimant: claimant.Owner.GroupKind.Kind, Field: specPathOf(claimant.Spec, host)}
					if in.ReleaseName != "" {
						if holder, ours, err := c.releaseHolder(ctx, in.ReleaseName, in.ReleaseNamespace, claimant.Owner); err != nil {
							return nil, err
						} else if ours {
							clash.Holder = holder
						}
					}
					return clash, nil
				}
				if !sameNamespace || in.ReleaseName == "" {
					continue
				}
				// Same namespace: only an Ingress of another resource of
				// ours is refused; the namespace's own Ingresses are its
				// owner's business.
				holder, ours, err := c.releaseHolder(ctx, in.ReleaseName, in.ReleaseNamespace, claimant.Owner)
				if err != nil {
					return nil, err
				}
				if ours {
					return &HostClashError{Host: host, Ingress: in, Holder: holder, Claimant: claimant.Owner.GroupKind.Kind, Field: specPathOf(claimant.Spec, host)}, nil
				}
			}
		}
	}
	return nil, nil
}
