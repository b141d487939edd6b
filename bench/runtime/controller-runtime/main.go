// Command controller-runtime is the Go anchor of bench/runtime: the smallest
// controller-runtime controller that reconciles every ConfigMap of one
// namespace with a Reconcile that reads the object from the cache and counts.
//
// Protocol (see bench/README.md): env KUBECONFIG, BENCH_NAMESPACE, BENCH_COUNT;
// JSON lines on stdout: started, synced, reconciled (BENCH_COUNT distinct
// objects reconciled once), updated (BENCH_COUNT distinct objects reconciled
// with data.gen == BENCH_FINAL_GEN, default "2"). Logs go to stderr.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

var stdoutMu sync.Mutex

func emit(event string, count int) {
	line := map[string]any{"event": event, "t": float64(time.Now().UnixNano()) / 1e9}
	if count >= 0 {
		line["count"] = count
	}
	b, _ := json.Marshal(line)
	stdoutMu.Lock()
	defer stdoutMu.Unlock()
	_, _ = os.Stdout.Write(append(b, '\n'))
}

type counter struct {
	client.Client
	want    int
	final   string
	mu      sync.Mutex
	seen    map[types.NamespacedName]struct{}
	updated map[types.NamespacedName]struct{}
}

func (c *counter) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var cm corev1.ConfigMap
	if err := c.Get(ctx, req.NamespacedName, &cm); err != nil { // served by the informer cache
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.seen[req.NamespacedName]; !ok {
		c.seen[req.NamespacedName] = struct{}{}
		if len(c.seen) == c.want {
			emit("reconciled", len(c.seen))
		}
	}
	if cm.Data["gen"] == c.final {
		if _, ok := c.updated[req.NamespacedName]; !ok {
			c.updated[req.NamespacedName] = struct{}{}
			if len(c.updated) == c.want {
				emit("updated", len(c.updated))
			}
		}
	}
	return reconcile.Result{}, nil
}

// finalGen is the data.gen value of the last update the orchestrator writes.
func finalGen() string {
	if g := os.Getenv("BENCH_FINAL_GEN"); g != "" {
		return g
	}
	return "2"
}

func main() {
	emit("started", -1)
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

func run() error {
	ns := os.Getenv("BENCH_NAMESPACE")
	want, err := strconv.Atoi(os.Getenv("BENCH_COUNT"))
	if ns == "" || err != nil {
		return fmt.Errorf("BENCH_NAMESPACE and BENCH_COUNT must be set")
	}
	ctrl.SetLogger(zap.New())
	cfg, err := ctrl.GetConfig() // KUBECONFIG
	if err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Cache:                  cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}},
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		LeaderElection:         false,
	})
	if err != nil {
		return err
	}
	r := &counter{
		Client:  mgr.GetClient(),
		want:    want,
		final:   finalGen(),
		seen:    make(map[types.NamespacedName]struct{}, want),
		updated: make(map[types.NamespacedName]struct{}, want),
	}
	if err := ctrl.NewControllerManagedBy(mgr).For(&corev1.ConfigMap{}).Complete(r); err != nil {
		return err
	}
	ctx := ctrl.SetupSignalHandler()
	go func() {
		// The same shared informer the controller watches through; HasSynced is
		// polled every millisecond (client-go's WaitForCacheSync polls every 100 ms).
		inf, err := mgr.GetCache().GetInformer(ctx, &corev1.ConfigMap{}, cache.BlockUntilSynced(false))
		if err != nil {
			fmt.Fprintln(os.Stderr, "informer:", err)
			return
		}
		for !inf.HasSynced() {
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Millisecond):
			}
		}
		emit("synced", -1)
	}()
	return mgr.Start(ctx)
}
