// Command probe is the workload of the real-node smoke test
// (internal/devtools/localcluster, make cluster-smoke-real): one static binary that
// serves HTTP, resolves names and fetches URLs, so that a single local image
// checks readiness probes, cluster DNS and Service routing from inside a Pod.
//
//	probe serve :8080          answer 200 "ok <hostname>" on every path
//	probe lookup NAME...       print each name's addresses, fail if one does not resolve
//	probe get URL              print the body, fail unless the status is 200
//	probe write FILE           write FILE (a volume's writability)
//	probe dial HOST:PORT       open a TCP connection
package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"
)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: probe serve ADDR | lookup NAME... | get URL | write FILE | dial HOST:PORT")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "serve":
		err = serve(os.Args[2])
	case "lookup":
		err = lookup(os.Args[2:])
	case "get":
		err = get(os.Args[2])
	case "dial":
		var c net.Conn
		if c, err = net.DialTimeout("tcp", os.Args[2], 10*time.Second); err == nil {
			fmt.Println("connected to", os.Args[2])
			c.Close()
		}
	case "write":
		err = os.WriteFile(os.Args[2], []byte("written by probe\n"), 0o644)
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "probe:", err)
		os.Exit(1)
	}
}

func serve(addr string) error {
	host, _ := os.Hostname()
	return http.ListenAndServe(addr, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, "ok %s\n", host)
	}))
}

func lookup(names []string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, n := range names {
		addrs, err := net.DefaultResolver.LookupHost(ctx, n)
		if err != nil {
			return err
		}
		fmt.Println(n, addrs)
	}
	return nil
}

func get(url string) error {
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Print(string(body))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	return nil
}
