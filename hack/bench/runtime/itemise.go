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

// countAudit counts the requests in the audit log at path received between
// from and to under the key each gets, leaving out those key refuses.
func countAudit(path string, from, to time.Time, key func(auditEvent) (string, bool)) (map[string]int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	counts := map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e auditEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if e.Received.Before(from) || !e.Received.Before(to) {
			continue
		}
		if k, ok := key(e); ok {
			counts[k]++
		}
	}
	return counts, sc.Err()
}

// mostFirst is the keys of counts, the largest count first, equal counts
// in key order.
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

// itemiseAudit counts the requests in the audit log at path that the
// runtime sent between from and to, by verb and resource ("get version"
// for the version and other paths that name no resource), a failed one
// under its status code too ("update nginxes/status 409").
func itemiseAudit(path string, from, to time.Time) (map[string]int, error) {
	return countAudit(path, from, to, func(e auditEvent) (string, bool) {
		if clientOf(e.UserAgent) != "runtime" {
			return "", false
		}
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
		return what, true
	})
}

// printItems prints what itemiseAudit counted per action (n actions),
// most first, leaving out what came to less than one request in twenty
// actions.
func printItems(title string, items map[string]int, n int) {
	keys, total := mostFirst(items)
	fmt.Printf("   %s, from the API server's audit log: %.2f\n", title, float64(total)/float64(n))
	for _, k := range keys {
		if per := float64(items[k]) / float64(n); per >= 0.05 {
			fmt.Printf("     %6.2f  %s\n", per, k)
		}
	}
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

// clientsAudit counts every request in the audit log at path between from
// and to by the client that sent it (clientOf): whose work the API server
// did in a phase, the cluster's own reactions to the created objects
// (ReplicaSets, Pods, EndpointSlices, status reports, Events) included.
func clientsAudit(path string, from, to time.Time) (map[string]int, error) {
	return countAudit(path, from, to, func(e auditEvent) (string, bool) { return clientOf(e.UserAgent), true })
}

// clientsInPhase prints, per action (n actions), the requests of the audit
// log at path between from and to by client, most first, or why it cannot.
func clientsInPhase(path, phase string, from, to time.Time, n int) {
	clients, err := clientsAudit(path, from, to)
	if err != nil {
		fmt.Printf("   requests %s by client: cannot count: %v\n", phase, err)
		return
	}
	names, total := mostFirst(clients)
	parts := make([]string, 0, len(names))
	for _, k := range names {
		parts = append(parts, fmt.Sprintf("%s %.2f", k, float64(clients[k])/float64(n)))
	}
	fmt.Printf("   requests %s by client, per release, from the API server's audit log: %.2f (%s)\n",
		phase, float64(total)/float64(n), strings.Join(parts, ", "))
}

// itemised prints the requests of the audit log at path between from and
// to, per action, or why it cannot.
func itemised(path, title string, from, to time.Time, n int) {
	items, err := itemiseAudit(path, from, to)
	if err != nil {
		fmt.Printf("   %s: cannot itemise: %v\n", title, err)
		return
	}
	printItems(title, items, n)
}
