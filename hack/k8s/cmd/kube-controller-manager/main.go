// Command kube-controller-manager is the upstream controller manager. okra's
// harness runs it with only the garbage-collector and namespace controllers so
// that ownerReference cascades and namespace deletion behave as on a cluster.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-controller-manager/app"
)

func main() {
	os.Exit(cli.Run(app.NewControllerManagerCommand()))
}
