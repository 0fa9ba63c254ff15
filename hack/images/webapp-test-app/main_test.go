package main

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// Without a database the app still answers /healthz and says why / fails;
// the database paths are exercised against PostgreSQL by
// hack/images/smoke.sh.
func TestWithoutDatabase(t *testing.T) {
	t.Setenv("WEBAPP_TEST_APP_SET", "yes")
	a := &app{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	srv := httptest.NewServer(a.routes())
	defer srv.Close()

	for _, tc := range []struct {
		path   string // request path
		status int    // expected status code
		body   string // expected substring of the body
	}{
		{"/healthz", http.StatusOK, "ok"},
		{"/", http.StatusServiceUnavailable, "DATABASE_HOST is empty"},
		{"/read", http.StatusServiceUnavailable, "DATABASE_HOST is empty"},
		{"/write", http.StatusBadRequest, "missing v"},
		{"/write?v=x", http.StatusServiceUnavailable, "DATABASE_HOST is empty"},
		{"/nope", http.StatusNotFound, ""},
		{"/env?name=WEBAPP_TEST_APP_UNSET", http.StatusNotFound, "not set"},
		{"/env?name=WEBAPP_TEST_APP_SET", http.StatusOK, "yes"},
	} {
		resp, err := http.Get(srv.URL + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status || !strings.Contains(string(body), tc.body) {
			t.Errorf("GET %s: %d %q, want %d containing %q", tc.path, resp.StatusCode, body, tc.status, tc.body)
		}
	}
}

func TestURLEscapesCredentials(t *testing.T) {
	got := dbConfig{host: "db.ns", port: "5432", name: "app", user: "app", password: "p@ss/w:rd"}.url()
	want := "postgres://app:p%40ss%2Fw%3Ard@db.ns:5432/app?sslmode=disable&connect_timeout=3"
	if got != want {
		t.Errorf("url() = %q, want %q", got, want)
	}
}
