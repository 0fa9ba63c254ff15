package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// auditEvent is what the itemisation reads of an API server audit event.
type auditEvent struct {
	Verb       string    `json:"verb"`
	RequestURI string    `json:"requestURI"`
	UserAgent  string    `json:"userAgent"`
	Received   time.Time `json:"requestReceivedTimestamp"`
	ObjectRef  *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
}

// notTheRuntime are the user agents of the clients in a bench cluster that
// are not the runtime measured: the control plane's (the API server itself
// allocates Service IPs), the fake or real node's, and this benchmark's
// own.
func notTheRuntime() []string {
	return []string{"kube-apiserver/", "kube-controller-manager/", "kube-scheduler/", "kwok", "kubelet/", "kube-proxy/",
		"coredns/", "localcluster/", filepath.Base(os.Args[0]) + "/"}
}

// auditLogPath is where a run's API server writes its audit log when the
// benchmark itemises (cfg.itemise), removed first; "" when it does not.
func auditLogPath(cfg config, runtime string, n int) string {
	if !cfg.itemise {
		return ""
	}
	path := filepath.Join(cfg.outDir, fmt.Sprintf("audit-%s-%d.log", runtime, n))
	_ = os.Remove(path)
	return path
}

// auditCounts is what one read of the audit log counts in a phase.
type auditCounts struct {
	// items are the runtime's requests by verb and resource ("get version"
	// for the version and other paths that name no resource), a failed one
	// under its status code too ("update nginxes/status 409").
	items map[string]int
	// clients are every request by the client that sent it (clientOf):
	// whose work the API server did in the phase, the cluster's own
	// reactions to the created objects (ReplicaSets, Pods, EndpointSlices,
	// status reports, Events) included.
	clients map[string]int
}

// countAudit counts the requests in the audit log at path received between
// from and to, reading it once.
func countAudit(path string, from, to time.Time) (auditCounts, error) {
	counts := auditCounts{items: map[string]int{}, clients: map[string]int{}}
	f, err := os.Open(path)
	if err != nil {
		return counts, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e auditEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return counts, fmt.Errorf("%s: %w", path, err)
		}
		if e.Received.Before(from) || !e.Received.Before(to) {
			continue
		}
		client := clientOf(e.UserAgent)
		counts.clients[client]++
		if client == "runtime" {
			counts.items[itemOf(e)]++
		}
	}
	return counts, sc.Err()
}

// itemOf is the item a request of the runtime is counted under.
func itemOf(e auditEvent) string {
	what := e.Verb + " " + strings.TrimPrefix(strings.SplitN(e.RequestURI, "?", 2)[0], "/")
	if e.ObjectRef != nil {
		what = e.Verb + " " + e.ObjectRef.Resource
		if e.ObjectRef.Subresource != "" {
			what += "/" + e.ObjectRef.Subresource
		}
	}
	if e.ResponseStatus != nil && e.ResponseStatus.Code >= 400 {
		what += fmt.Sprintf(" %d", e.ResponseStatus.Code)
	}
	return what
}

// clientOf names the client of a user agent: the control plane's and the
// node's by their program, this benchmark's (which, for the floor, are its
// creates and patches) as "benchmark", and anything else, the runtime's
// own and its Helm client's ("Go-http-client"), as "runtime".
func clientOf(userAgent string) string {
	for _, p := range notTheRuntime() {
		if strings.HasPrefix(userAgent, p) {
			if p == filepath.Base(os.Args[0])+"/" {
				return "benchmark"
			}
			return strings.TrimSuffix(p, "/")
		}
	}
	return "runtime"
}

// mostFirst is the keys of counts, the largest count first, equal counts
// in key order, and their sum.
func mostFirst(counts map[string]int) (keys []string, total int) {
	for k, v := range counts {
		keys = append(keys, k)
		total += v
	}
	slices.SortFunc(keys, func(a, b string) int {
		if counts[a] != counts[b] {
			return counts[b] - counts[a]
		}
		return strings.Compare(a, b)
	})
	return keys, total
}

// reportAudit prints, per action (n actions), what the audit log at path
// counts between from and to, or why it cannot: the runtime's requests
// itemised under title (none for the floor, whose title is ""), then every
// client's requests in the phase.
func reportAudit(path string, from, to time.Time, n int, title, phase string) {
	counts, err := countAudit(path, from, to)
	if err != nil {
		fmt.Printf("   requests %s: cannot count: %v\n", phase, err)
		return
	}
	per := func(v int) float64 { return float64(v) / float64(n) }
	if title != "" {
		keys, total := mostFirst(counts.items)
		fmt.Printf("   %s, from the API server's audit log: %.2f\n", title, per(total))
		for _, k := range keys {
			// What came to less than one request in twenty actions is left out.
			if per(counts.items[k]) >= 0.05 {
				fmt.Printf("     %6.2f  %s\n", per(counts.items[k]), k)
			}
		}
	}
	names, total := mostFirst(counts.clients)
	parts := make([]string, 0, len(names))
	for _, k := range names {
		parts = append(parts, fmt.Sprintf("%s %.2f", k, per(counts.clients[k])))
	}
	fmt.Printf("   requests %s by client, per release, from the API server's audit log: %.2f (%s)\n",
		phase, per(total), strings.Join(parts, ", "))
}
