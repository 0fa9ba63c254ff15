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

// itemiseAudit counts the requests in the audit log at path that the
// runtime sent between from and to, by verb and resource ("get version"
// for the version and other paths that name no resource), a failed one
// under its status code too ("update nginxes/status 409").
func itemiseAudit(path string, from, to time.Time) (map[string]int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	others := notTheRuntime()
	items := map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e auditEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if e.Received.Before(from) || !e.Received.Before(to) ||
			slices.ContainsFunc(others, func(p string) bool { return strings.HasPrefix(e.UserAgent, p) }) {
			continue
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
		items[what]++
	}
	return items, sc.Err()
}

// printItems prints what itemiseAudit counted per action (n actions),
// most first, leaving out what came to less than one request in twenty
// actions.
func printItems(title string, items map[string]int, n int) {
	keys := make([]string, 0, len(items))
	total := 0
	for k, v := range items {
		keys = append(keys, k)
		total += v
	}
	slices.SortFunc(keys, func(a, b string) int {
		if items[a] != items[b] {
			return items[b] - items[a]
		}
		return strings.Compare(a, b)
	})
	fmt.Printf("   %s, from the API server's audit log: %.2f\n", title, float64(total)/float64(n))
	for _, k := range keys {
		if per := float64(items[k]) / float64(n); per >= 0.05 {
			fmt.Printf("     %6.2f  %s\n", per, k)
		}
	}
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
