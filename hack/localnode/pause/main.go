// Command pause is the pod sandbox of the local cluster's real node: it holds
// a Pod's namespaces and does nothing until it is told to stop. It is built
// statically and imported into the node's containerd as its sandbox image
// (internal/devtools/localcluster), since no public registry is reachable here.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
}
