// Command kube is the local control plane in one program: etcd,
// kube-apiserver, kube-controller-manager, kube-scheduler and kubectl,
// chosen by the name it runs as (bin/k8s holds a link of each name to it)
// or by its first argument ("kube etcd ...").
//
// One program instead of five: the packages the five share compile once
// into one link, where five programs linked one after another took most
// of a first `make run` on a two-core machine (DEVELOPMENT.md).
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	_ "time/tzdata" // CronJob time zones, as kube-apiserver and kube-controller-manager ship it

	"go.etcd.io/etcd/server/v3/etcdmain"
	_ "k8s.io/client-go/plugin/pkg/client/auth" // kubectl's client auth plugins
	"k8s.io/component-base/cli"
	"k8s.io/component-base/logs"
	_ "k8s.io/component-base/logs/json/register"          // the JSON log format
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client-go's metrics
	_ "k8s.io/component-base/metrics/prometheus/version"  // the version metric
	kubectl "k8s.io/kubectl/pkg/cmd"
	kubectlutil "k8s.io/kubectl/pkg/cmd/util"
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"
)

// commands are the programs kube is, by name; each returns its exit code.
var commands = map[string]func() int{
	"etcd": func() int {
		etcdmain.Main(os.Args)
		return 0
	},
	"kube-apiserver":          func() int { return cli.Run(apiserver.NewAPIServerCommand()) },
	"kube-controller-manager": func() int { return cli.Run(controllermanager.NewControllerManagerCommand()) },
	"kube-scheduler":          func() int { return cli.Run(scheduler.NewSchedulerCommand()) },
	"kubectl": func() int {
		// kubectl reads its verbosity before its flags are parsed, to
		// log while it builds its commands.
		_, _ = logs.GlogSetter(kubectl.GetLogVerbosity(os.Args))
		if err := cli.RunNoErrOutput(kubectl.NewDefaultKubectlCommand()); err != nil {
			kubectlutil.CheckErr(err)
		}
		return 0
	},
}

func main() {
	run, ok := commands[filepath.Base(os.Args[0])]
	if !ok && len(os.Args) > 1 {
		if run, ok = commands[os.Args[1]]; ok {
			os.Args = os.Args[1:]
		}
	}
	if !ok {
		names := make([]string, 0, len(commands))
		for name := range commands {
			names = append(names, name)
		}
		slices.Sort(names)
		fmt.Fprintf(os.Stderr, "kube: run it as one of %s (a link of that name), or with the name as its first argument\n", strings.Join(names, ", "))
		os.Exit(2)
	}
	os.Exit(run())
}
