// Command coredns is CoreDNS with only the plugins the local cluster's real
// node needs: cluster DNS for Services and Pods (kubernetes), answers cached
// (cache), listening on one address (bind), health and readiness endpoints,
// and error logging. There is no
// forward plugin: the cluster answers for cluster.local only and never sends
// queries off the machine.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/ready"
)

func main() {
	// The Corefile may only name directives whose plugins are linked in.
	dnsserver.Directives = []string{"bind", "errors", "log", "health", "ready", "cache", "kubernetes"}
	coremain.Run()
}
