package deploy

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// TestHelmTemplate renders the chart with each values set, decodes every
// object strictly into its Kubernetes type (renderChart) and checks what
// the deployment depends on: who runs, how it is probed, what may be taken
// away at once, what is scaled, and that migration is a hook.
func TestHelmTemplate(t *testing.T) {
	for _, vs := range valueSets {
		t.Run(vs.name, func(t *testing.T) {
			r := renderChart(t, vs.files)
			for _, role := range []string{"api", "worker"} {
				d, ok := r.deployments[role]
				if !ok {
					t.Fatalf("no %s Deployment", role)
				}
				checkPodSecurity(t, role, d.Spec.Template.Spec)
				if pdb, ok := r.pdbs[role]; !ok || pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.IntValue() != 1 {
					t.Errorf("%s: want a PodDisruptionBudget with maxUnavailable 1, got %+v", role, pdb)
				}
			}
			checkProbes(t, "api", r.deployments["api"].Spec.Template.Spec.Containers[0], "http", 8080)
			worker := r.deployments["worker"].Spec.Template.Spec.Containers[0]
			checkProbes(t, "worker", worker, "health", 8081)
			if args := strings.Join(worker.Args, " "); !strings.Contains(args, "--health-addr=:8081") {
				t.Errorf("worker runs %q: its health listener must be on the probed port 8081", args)
			}
			if len(r.hpas) != 1 || r.hpas[0].Spec.ScaleTargetRef.Name != r.deployments["api"].Name {
				t.Fatalf("want one HorizontalPodAutoscaler of the api Deployment, got %d", len(r.hpas))
			}
			if r.deployments["api"].Spec.Replicas != nil {
				t.Error("api: replicas is the autoscaler's, the Deployment must not set it")
			}
			if len(r.jobs) != 1 {
				t.Fatalf("want one migration Job, got %d", len(r.jobs))
			}
			job := r.jobs[0]
			if hook := job.Annotations["helm.sh/hook"]; hook != "pre-install,pre-upgrade" {
				t.Errorf("migration Job: helm.sh/hook = %q", hook)
			}
			if args := job.Spec.Template.Spec.Containers[0].Args; len(args) != 1 || args[0] != "migrate" {
				t.Errorf("migration Job runs %v", args)
			}
			checkPodSecurity(t, "migration", job.Spec.Template.Spec)
			for _, d := range r.deployments {
				if args := strings.Join(d.Spec.Template.Spec.Containers[0].Args, " "); !strings.Contains(args, "--no-migrate") {
					t.Errorf("%s runs %q: the migration Job migrates, replicas must not race it", d.Name, args)
				}
			}
		})
	}
}

// checkProbes wants c's startup and liveness probes on /healthz and its
// readiness probe on /readyz, all GETs on the named container port.
func checkProbes(t *testing.T, role string, c corev1.Container, port string, number int32) {
	t.Helper()
	for _, p := range []struct {
		name  string
		probe *corev1.Probe
		path  string
	}{
		{"liveness", c.LivenessProbe, "/healthz"},
		{"readiness", c.ReadinessProbe, "/readyz"},
		{"startup", c.StartupProbe, "/healthz"},
	} {
		if p.probe == nil || p.probe.HTTPGet == nil || p.probe.HTTPGet.Path != p.path || p.probe.HTTPGet.Port.String() != port {
			t.Errorf("%s: want a %s probe GET %s on port %s, got %+v", role, p.name, p.path, port, p.probe)
		}
	}
	found := false
	for _, cp := range c.Ports {
		found = found || (cp.Name == port && cp.ContainerPort == number)
	}
	if !found {
		t.Errorf("%s: want container port %s = %d, got %+v", role, port, number, c.Ports)
	}
}

// checkPodSecurity wants a pod that cannot become root or write its image.
func checkPodSecurity(t *testing.T, role string, spec corev1.PodSpec) {
	t.Helper()
	psc := spec.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser == 0 {
		t.Errorf("%s: the pod must run as a non-root user, got %+v", role, psc)
	}
	if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
		t.Errorf("%s: the pod does not talk to the Kubernetes API; its token must not be mounted", role)
	}
	for _, c := range spec.Containers {
		sc := c.SecurityContext
		switch {
		case sc == nil:
			t.Errorf("%s/%s: no securityContext", role, c.Name)
		case sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem:
			t.Errorf("%s/%s: the root filesystem must be read-only", role, c.Name)
		case sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation:
			t.Errorf("%s/%s: privilege escalation must be off", role, c.Name)
		case sc.Privileged != nil && *sc.Privileged:
			t.Errorf("%s/%s: privileged", role, c.Name)
		case sc.Capabilities == nil || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" || len(sc.Capabilities.Add) != 0:
			t.Errorf("%s/%s: want capabilities drop [ALL] and none added, got %+v", role, c.Name, sc.Capabilities)
		}
		if !mountsWritableData(c, spec.Volumes) {
			t.Errorf("%s/%s: /data (TMPDIR) must be a writable emptyDir", role, c.Name)
		}
		if limit, ok := c.Resources.Limits[corev1.ResourceMemory]; !ok || limit.IsZero() {
			t.Errorf("%s/%s: no memory limit", role, c.Name)
		}
	}
}

func mountsWritableData(c corev1.Container, volumes []corev1.Volume) bool {
	for _, m := range c.VolumeMounts {
		if m.MountPath != "/data" || m.ReadOnly {
			continue
		}
		for _, v := range volumes {
			if v.Name == m.Name && v.EmptyDir != nil {
				return true
			}
		}
	}
	return false
}

// TestHelmToggles checks the values that add or remove objects.
func TestHelmToggles(t *testing.T) {
	def := renderChart(t, nil)
	prod := renderChart(t, []string{chartDir + "/ci/production-values.yaml"})
	if len(def.serviceMonitors) != 0 {
		t.Error("serviceMonitor.enabled is false by default, yet a ServiceMonitor is rendered")
	}
	if len(prod.serviceMonitors) != 1 {
		t.Fatalf("production values enable one ServiceMonitor, got %d", len(prod.serviceMonitors))
	}
	checkServiceMonitor(t, prod)
	for _, svc := range def.services {
		if svc.Labels["app.kubernetes.io/component"] == "worker" {
			t.Errorf("Service %s: the worker Service exists for the ServiceMonitor only", svc.Name)
		}
	}
	if got := secretNames(def); len(got) != 3 {
		t.Errorf("default values: want the database, JWT and S3 Secrets, got %v", got)
	}
	for _, s := range def.secrets {
		if s.Annotations["helm.sh/hook"] != "pre-install,pre-upgrade" || s.Annotations["helm.sh/hook-weight"] != "-10" {
			t.Errorf("Secret %s must exist before the migration Job: a hook of weight -10, got %v", s.Name, s.Annotations)
		}
		if strings.HasSuffix(s.Name, "-jwt") && !strings.Contains(string(s.Data["jwt-ed25519.pem"]), "BEGIN PRIVATE KEY") {
			t.Errorf("Secret %s: want a generated PKCS#8 PEM key", s.Name)
		}
	}
	if got := secretNames(prod); len(got) != 0 {
		t.Errorf("production values name existing Secrets, yet the chart renders %v", got)
	}
}

func secretNames(r rendered) []string {
	var names []string
	for _, s := range r.secrets {
		names = append(names, s.Name)
	}
	return names
}

// checkServiceMonitor wants the ServiceMonitor to select the api and the
// worker Services and scrape /metrics on each one's port.
func checkServiceMonitor(t *testing.T, r rendered) {
	t.Helper()
	sm := r.serviceMonitors[0]
	selector, err := metav1.LabelSelectorAsSelector(&sm.Spec.Selector)
	if err != nil {
		t.Fatalf("ServiceMonitor selector: %v", err)
	}
	scraped := map[string]bool{}
	for _, svc := range r.services {
		if !selector.Matches(labels.Set(svc.Labels)) {
			continue
		}
		for _, port := range svc.Spec.Ports {
			for _, ep := range sm.Spec.Endpoints {
				if ep.Port == port.Name && ep.Path == "/metrics" {
					scraped[svc.Labels["app.kubernetes.io/component"]] = true
				}
			}
		}
	}
	for _, role := range []string{"api", "worker"} {
		if !scraped[role] {
			t.Errorf("the ServiceMonitor does not scrape /metrics of a %s Service; endpoints %+v", role, sm.Spec.Endpoints)
		}
	}
	for _, svc := range r.services {
		if svc.Labels["app.kubernetes.io/component"] != "worker" {
			continue
		}
		if svc.Spec.Selector["app.kubernetes.io/component"] != "worker" || len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].TargetPort.String() != "health" {
			t.Errorf("worker Service %s: want the worker pods' health port, got %+v", svc.Name, svc.Spec)
		}
	}
}
