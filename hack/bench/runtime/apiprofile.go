package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"

	"k8s.io/client-go/rest"
)

// apiProfileSeconds is the length of each CPU profile of the API server
// that profileAPIServer takes; a phase's profiles are consecutive, and
// `go tool pprof` merges them when given all of a phase's files.
const apiProfileSeconds = 10

// profileAPIServer takes consecutive CPU profiles of the API server of rc
// (started with Config.Profiling) into <dir>/apiserver-<name>-<k>.pprof
// until the returned stop is called, and stop waits for the profile in
// flight. A profile that fails is reported and ends the loop: the
// measurement does not depend on it.
func profileAPIServer(rc *rest.Config, dir, name string) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		hc, err := rest.HTTPClientFor(rc)
		if err != nil {
			fmt.Printf("   API server profile: %v\n", err)
			return
		}
		url := fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", rc.Host, apiProfileSeconds)
		for k := 0; ctx.Err() == nil; k++ {
			if err := fetchProfile(hc, url, filepath.Join(dir, fmt.Sprintf("apiserver-%s-%03d.pprof", name, k))); err != nil {
				fmt.Printf("   API server profile: %v\n", err)
				return
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// fetchProfile writes the profile at url to path.
func fetchProfile(hc *http.Client, url, path string) error {
	resp, err := hc.Get(url)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}
