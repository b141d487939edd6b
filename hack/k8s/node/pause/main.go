// Command pause is the Pod sandbox's process, as Kubernetes' pause image runs it: it holds
// the Pod's namespaces, reaps orphaned children and exits on SIGINT or SIGTERM. The test
// kit's node wraps it in an image of its own (no registry is reachable there).
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	child := make(chan os.Signal, 16)
	signal.Notify(child, syscall.SIGCHLD)
	for {
		select {
		case <-stop:
			os.Exit(0)
		case <-child:
			for {
				var status syscall.WaitStatus
				pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
				if pid <= 0 || err != nil {
					break
				}
			}
		}
	}
}
