package devenv

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

const (
	fakeNodeName = "kwok-node-0"
	// kwokNodeAnnotation marks the nodes KWOK manages (--manage-nodes-with-annotation-selector).
	kwokNodeAnnotation = "kwok.x-k8s.io/node"
	// simulatedReadyTimeout bounds the wait for the fake node after the
	// components have started.
	simulatedReadyTimeout = 90 * time.Second
)

// defaultNodeMonitorGracePeriod is kube-controller-manager's own default
// --node-monitor-grace-period (Kubernetes 1.32 and later).
const defaultNodeMonitorGracePeriod = 50 * time.Second

// nodeTiming is how the simulated node keeps itself Ready: KWOK holds the
// node's Lease in kube-node-lease and renews it every leaseSeconds/4 (KWOK's
// rule, as the kubelet's), and kube-controller-manager looks every
// monitorPeriod whether a heartbeat came within gracePeriod. Without a Lease
// the only heartbeat is KWOK's node-heartbeat-with-lease stage, every 10 to
// 20 minutes, and the node turns NotReady one grace period after it starts.
type nodeTiming struct {
	gracePeriod   time.Duration // kube-controller-manager --node-monitor-grace-period
	monitorPeriod time.Duration // kube-controller-manager --node-monitor-period
	leaseSeconds  int           // kwok --node-lease-duration-seconds
}

// newNodeTiming derives the timing from a grace period (0: the default).
// The Lease lasts 4/5 of the grace period, so it is renewed five times
// within it (the kubelet's 40 s Lease against the 50 s default does the
// same); kube-controller-manager looks at most every 5 s (its default) and
// at least five times per grace period.
func newNodeTiming(grace time.Duration) (nodeTiming, error) {
	if grace == 0 {
		grace = defaultNodeMonitorGracePeriod
	}
	if grace < 2*time.Second || grace%time.Second != 0 {
		return nodeTiming{}, fmt.Errorf("devenv: NodeMonitorGracePeriod %s: want whole seconds, at least 2s (KWOK's Lease lasts whole seconds)", grace)
	}
	lease := int(grace * 4 / 5 / time.Second)
	if lease < 1 {
		lease = 1
	}
	return nodeTiming{
		gracePeriod:   grace,
		monitorPeriod: min(5*time.Second, (grace / 5).Truncate(100*time.Millisecond)),
		leaseSeconds:  lease,
	}, nil
}

// component is a simulated-cluster process before it is started.
type component struct {
	name    string
	args    []string
	healthz string // https URL polled for "ok"; empty for none
}

// startSimulation starts kube-controller-manager, kube-scheduler and KWOK,
// registers the fake node and waits until it is Ready and schedulable and
// KWOK renews its Lease (see nodeTiming).
func (c *Cluster) startSimulation(ctx context.Context, timing nodeTiming) error {
	api := c.Env.ControlPlane.APIServer
	caFile := filepath.Join(c.Dir, "apiserver-ca.crt")
	if err := os.WriteFile(caFile, api.SecureServing.CA, 0o644); err != nil {
		return fmt.Errorf("devenv: writing the API server CA: %w", err)
	}
	saKey := filepath.Join(api.CertDir, "sa-signer.key")
	if _, err := os.Stat(saKey); err != nil {
		return fmt.Errorf("devenv: service account signing key of the API server: %w", err)
	}

	comps, err := c.simulationComponents(timing, caFile, saKey)
	if err != nil {
		return err
	}
	for _, comp := range comps {
		if err := c.startComponent(comp); err != nil {
			return err
		}
	}

	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return fmt.Errorf("devenv: creating a client: %w", err)
	}
	if _, err := cs.CoreV1().Nodes().Create(ctx, fakeNode(), metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("devenv: creating node %s: %w", fakeNodeName, err)
	}
	return c.waitSimulated(ctx, cs, comps)
}

// simulationComponents are kube-controller-manager, kube-scheduler and
// KWOK, each with a kubeconfig of its own and a free port.
func (c *Cluster) simulationComponents(timing nodeTiming, caFile, saKey string) ([]component, error) {
	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	kcmPort, schedPort, kwokPort := ports[0], ports[1], ports[2]
	extraStages, err := c.writeExtraStages()
	if err != nil {
		return nil, err
	}
	var kubeconfigs [3]string
	for i, user := range []string{"system:kube-controller-manager", "system:kube-scheduler", "kwok"} {
		if kubeconfigs[i], _, err = c.AddUser(user, []string{"system:masters"}); err != nil {
			return nil, err
		}
	}
	kcm := c.controlPlaneComponent("kube-controller-manager", kubeconfigs[0], kcmPort,
		"--use-service-account-credentials=false",
		"--service-account-private-key-file="+saKey,
		"--root-ca-file="+caFile,
		// Passed through exec, no shell: no quotes around the value.
		// The node-lifecycle controller stays on; it removes the
		// node.kubernetes.io/not-ready taint every new node starts with.
		"--controllers=*,-nodeipam",
		"--node-monitor-grace-period="+timing.gracePeriod.String(),
		"--node-monitor-period="+timing.monitorPeriod.String(),
		"--kube-api-qps=100",
		"--kube-api-burst=200",
	)
	kwok := component{
		name: "kwok",
		args: []string{
			"--kubeconfig=" + kubeconfigs[2],
			"--config=" + filepath.Join(c.binDir, kwokStagesFile),
			"--config=" + extraStages,
			"--manage-all-nodes=false",
			"--manage-nodes-with-annotation-selector=" + kwokNodeAnnotation + "=fake",
			"--server-address=127.0.0.1:" + strconv.Itoa(kwokPort),
			// A Lease renewed like a kubelet's keeps the node Ready;
			// without it KWOK heartbeats every 10-20 minutes only.
			"--node-lease-duration-seconds=" + strconv.Itoa(timing.leaseSeconds),
		},
	}
	return []component{kcm, c.controlPlaneComponent("kube-scheduler", kubeconfigs[1], schedPort), kwok}, nil
}

// controlPlaneComponent is a kube-controller-manager or kube-scheduler
// serving on 127.0.0.1:port with kubeconfig for everything, no leader
// election, its certificates in the cluster's folder, and the extra flags.
func (c *Cluster) controlPlaneComponent(name, kubeconfig string, port int, extra ...string) component {
	args := []string{
		"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--cert-dir=" + filepath.Join(c.Dir, name),
		"--leader-elect=false",
	}
	return component{name: name, args: append(args, extra...), healthz: fmt.Sprintf("https://127.0.0.1:%d/healthz", port)}
}

func (c *Cluster) startComponent(comp component) error {
	f, err := c.openLog(comp.name)
	if err != nil {
		return err
	}
	ch, err := startChild(comp.name, filepath.Join(c.binDir, comp.name), comp.args, f, c.logPath(comp.name))
	// The child holds its own descriptor; ours is not needed any more.
	_ = f.Close()
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.children = append(c.children, ch)
	c.mu.Unlock()
	c.log.V(1).Info("started", "process", comp.name, "pid", ch.pid, "log", ch.logPath)
	return nil
}

// fakeNode is the one node KWOK simulates.
func fakeNode() *corev1.Node {
	res := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("32"),
		corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: fakeNodeName,
			Annotations: map[string]string{
				kwokNodeAnnotation:             "fake",
				"node.alpha.kubernetes.io/ttl": "0",
			},
			Labels: map[string]string{
				"type":                   "kwok",
				"kubernetes.io/hostname": fakeNodeName,
				"kubernetes.io/os":       "linux",
				"kubernetes.io/arch":     "amd64",
			},
		},
		Status: corev1.NodeStatus{
			Capacity:    res,
			Allocatable: res.DeepCopy(),
		},
	}
}

// waitSimulated waits until the components answer /healthz, the fake node is
// Ready without the not-ready taint, and the default ServiceAccount exists.
func (c *Cluster) waitSimulated(ctx context.Context, cs kubernetes.Interface, comps []component) error {
	ctx, cancel := context.WithTimeout(ctx, simulatedReadyTimeout)
	defer cancel()
	hc := &http.Client{
		Timeout: 2 * time.Second,
		// The components serve self-signed loopback certificates.
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, //nolint:gosec // loopback health probe
	}
	defer hc.CloseIdleConnections()

	healthy := map[string]bool{}
	var pending string
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		c.mu.Lock()
		children := append([]*child(nil), c.children...)
		c.mu.Unlock()
		for _, ch := range children {
			if gone, err := ch.exited(); gone {
				return fmt.Errorf("devenv: simulated cluster: %w", err)
			}
		}

		pending = ""
		for _, comp := range comps {
			if comp.healthz == "" || healthy[comp.name] {
				continue
			}
			if probe(ctx, hc, comp.healthz) {
				healthy[comp.name] = true
				continue
			}
			pending = fmt.Sprintf("%s to answer %s (log: %s)", comp.name, comp.healthz, c.logPath(comp.name))
			break
		}
		if pending == "" {
			pending = c.nodePending(ctx, cs)
		}
		if pending == "" {
			if _, err := cs.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{}); err != nil {
				pending = fmt.Sprintf("ServiceAccount default/default (kube-controller-manager, log: %s): %v", c.logPath("kube-controller-manager"), err)
			}
		}
		if pending == "" {
			return nil
		}

		select {
		case <-ctx.Done():
			return fmt.Errorf("devenv: simulated cluster not ready after %s: still waiting for %s: %w", simulatedReadyTimeout, pending, ctx.Err())
		case <-tick.C:
		}
	}
}

// nodePending says what the fake node still lacks, or "" once it is usable.
func (c *Cluster) nodePending(ctx context.Context, cs kubernetes.Interface) string {
	node, err := cs.CoreV1().Nodes().Get(ctx, fakeNodeName, metav1.GetOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Sprintf("node %s to exist", fakeNodeName)
		}
		return fmt.Sprintf("node %s: %v", fakeNodeName, err)
	}
	ready := false
	for _, cond := range node.Status.Conditions {
		if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
			ready = true
		}
	}
	if !ready {
		return fmt.Sprintf("node %s to become Ready (KWOK marks it; log: %s)", fakeNodeName, c.logPath("kwok"))
	}
	var taints []string
	for _, t := range node.Spec.Taints {
		if t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable {
			taints = append(taints, t.Key)
		}
	}
	if len(taints) > 0 {
		return fmt.Sprintf("taints %s on node %s to be removed (node-lifecycle controller; log: %s)",
			strings.Join(taints, ","), fakeNodeName, c.logPath("kube-controller-manager"))
	}
	// The Lease is what keeps the node Ready after the first grace period.
	lease, err := cs.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, fakeNodeName, metav1.GetOptions{})
	if err != nil || lease.Spec.RenewTime == nil {
		return fmt.Sprintf("Lease %s/%s of node %s to be renewed (KWOK; log: %s): %v",
			corev1.NamespaceNodeLease, fakeNodeName, fakeNodeName, c.logPath("kwok"), err)
	}
	return ""
}

func probe(ctx context.Context, hc *http.Client, url string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	resp, err := hc.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}
