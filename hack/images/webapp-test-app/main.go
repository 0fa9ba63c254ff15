// Command webapp-test-app is the test application the WebApp chart runs in
// this project's end-to-end tests on a real node. It reads the database
// connection the chart gives every app container (DATABASE_HOST,
// DATABASE_PORT, DATABASE_NAME, DATABASE_USER, DATABASE_PASSWORD) and
// serves on PORT (default 8080, the chart's containerPort):
//
//	GET /healthz      200 "ok": the process is up (no database needed)
//	GET /             200 "connected to <db> as <user> on <host>:<port>"
//	                  after a round trip to PostgreSQL; 503 with the
//	                  error otherwise (the chart's probes use /)
//	GET|POST /write?v=X  stores X as the newest row of table webapp_test
//	GET /read         200 with the newest stored value; 404 when none
//	GET /env?name=X   200 with the value of the environment variable X
//	                  (a test app: it shows what the Pod was given, e.g.
//	                  from a Secret); 404 when unset
//
// /write and /read let a test prove the data outlives the app and the
// database pods (and a re-created WebApp whose volume was retained).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

func main() {
	listen := flag.String("listen", ":"+envOr("PORT", "8080"), "address to serve HTTP on")
	flag.Parse()
	log := slog.New(slog.NewJSONHandler(os.Stdout, nil))

	db := dbConfig{
		host:     os.Getenv("DATABASE_HOST"),
		port:     envOr("DATABASE_PORT", "5432"),
		name:     os.Getenv("DATABASE_NAME"),
		user:     os.Getenv("DATABASE_USER"),
		password: os.Getenv("DATABASE_PASSWORD"),
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()

	a := &app{db: db, log: log}
	if db.host != "" {
		cfg, err := pgxpool.ParseConfig(db.url())
		if err != nil {
			log.Error("bad database settings", "err", err)
			os.Exit(2)
		}
		cfg.MaxConns = 4
		// The pool connects lazily: the app serves /healthz (and reports
		// the database error on /) while PostgreSQL is still starting.
		pool, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			log.Error("database pool", "err", err)
			os.Exit(2)
		}
		defer pool.Close()
		a.pool = pool
	}

	srv := &http.Server{Addr: *listen, Handler: a.routes(), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	log.Info("serving", "listen", *listen, "database", db.name, "user", db.user, "host", db.host, "port", db.port)
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Error("serve", "err", err)
		os.Exit(1)
	}
}

type dbConfig struct{ host, port, name, user, password string }

func (c dbConfig) url() string {
	u := url.URL{
		Scheme:   "postgres",
		User:     url.UserPassword(c.user, c.password),
		Host:     net.JoinHostPort(c.host, c.port),
		Path:     "/" + c.name,
		RawQuery: "sslmode=disable&connect_timeout=3",
	}
	return u.String()
}

type app struct {
	db   dbConfig
	pool *pgxpool.Pool
	log  *slog.Logger
}

func (a *app) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /{$}", a.root)
	mux.HandleFunc("/write", a.write)
	mux.HandleFunc("GET /read", a.read)
	mux.HandleFunc("GET /env", func(w http.ResponseWriter, r *http.Request) {
		v, ok := os.LookupEnv(r.URL.Query().Get("name"))
		if !ok {
			http.Error(w, "not set", http.StatusNotFound)
			return
		}
		fmt.Fprintln(w, v)
	})
	return mux
}

// conn checks out a connection after a round trip, or writes 503.
func (a *app) conn(w http.ResponseWriter, r *http.Request) (*pgxpool.Conn, bool) {
	if a.pool == nil {
		http.Error(w, "no database configured (DATABASE_HOST is empty)", http.StatusServiceUnavailable)
		return nil, false
	}
	ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
	defer cancel()
	c, err := a.pool.Acquire(ctx)
	if err == nil {
		err = c.Ping(ctx)
		if err != nil {
			c.Release()
		}
	}
	if err != nil {
		a.log.Warn("database unreachable", "err", err)
		http.Error(w, "database unreachable: "+err.Error(), http.StatusServiceUnavailable)
		return nil, false
	}
	return c, true
}

func (a *app) root(w http.ResponseWriter, r *http.Request) {
	c, ok := a.conn(w, r)
	if !ok {
		return
	}
	defer c.Release()
	var db, user string
	if err := c.QueryRow(r.Context(), "SELECT current_database(), current_user").Scan(&db, &user); err != nil {
		http.Error(w, "query: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	fmt.Fprintf(w, "connected to %s as %s on %s\n", db, user, net.JoinHostPort(a.db.host, a.db.port))
}

const createTable = `CREATE TABLE IF NOT EXISTS webapp_test (
	id      bigserial PRIMARY KEY,
	value   text NOT NULL,
	written timestamptz NOT NULL DEFAULT now()
)`

func (a *app) write(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodPost {
		http.Error(w, "GET or POST", http.StatusMethodNotAllowed)
		return
	}
	v := r.FormValue("v")
	if v == "" {
		http.Error(w, "missing v", http.StatusBadRequest)
		return
	}
	c, ok := a.conn(w, r)
	if !ok {
		return
	}
	defer c.Release()
	if _, err := c.Exec(r.Context(), createTable); err != nil {
		http.Error(w, "create table: "+err.Error(), http.StatusInternalServerError)
		return
	}
	var id int64
	if err := c.QueryRow(r.Context(), "INSERT INTO webapp_test (value) VALUES ($1) RETURNING id", v).Scan(&id); err != nil {
		http.Error(w, "insert: "+err.Error(), http.StatusInternalServerError)
		return
	}
	fmt.Fprintf(w, "stored %s (row %d)\n", v, id)
}

func (a *app) read(w http.ResponseWriter, r *http.Request) {
	c, ok := a.conn(w, r)
	if !ok {
		return
	}
	defer c.Release()
	var v string
	err := c.QueryRow(r.Context(), "SELECT value FROM webapp_test ORDER BY id DESC LIMIT 1").Scan(&v)
	var pgErr interface{ SQLState() string }
	switch {
	case errors.Is(err, pgx.ErrNoRows), errors.As(err, &pgErr) && pgErr.SQLState() == "42P01": // no rows, or no table yet
		http.Error(w, "nothing stored", http.StatusNotFound)
	case err != nil:
		http.Error(w, "select: "+err.Error(), http.StatusInternalServerError)
	default:
		fmt.Fprintln(w, v)
	}
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
