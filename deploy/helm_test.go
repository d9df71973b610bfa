package deploy

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/yaml"
)

const chartDir = "helm/contenteval"

// kubeVersion is the oldest Kubernetes the chart supports (Chart.yaml's
// kubeVersion). helm built with go install assumes v1.20 otherwise.
const kubeVersion = "1.25.0"

// valueSets are the values files the chart must lint and render with.
var valueSets = []struct {
	name  string
	files []string
}{
	{name: "default"},
	{name: "production", files: []string{chartDir + "/ci/production-values.yaml"}},
}

// helmBinary is the helm that make test-deploy installs from the module
// proxy (deploy/test/run.sh); without it the chart tests cannot run.
func helmBinary(t *testing.T) string {
	t.Helper()
	if h := os.Getenv("HELM"); h != "" {
		return h
	}
	if p, err := exec.LookPath("helm"); err == nil {
		return p
	}
	skipUnlessCI(t, "no helm and HELM is not set: run the chart tests with make test-deploy")
	return ""
}

func runHelm(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(helmBinary(t), args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("helm %s: %v\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

func valuesArgs(files []string) []string {
	var args []string
	for _, f := range files {
		args = append(args, "--values", f)
	}
	return args
}

func TestHelmLint(t *testing.T) {
	for _, vs := range valueSets {
		t.Run(vs.name, func(t *testing.T) {
			out := runHelm(t, append([]string{"lint", "--strict", "--kube-version", kubeVersion, chartDir}, valuesArgs(vs.files)...)...)
			if !strings.Contains(out, "0 chart(s) failed") {
				t.Fatalf("helm lint:\n%s", out)
			}
		})
	}
}

// rendered is the chart's manifests, decoded strictly into their types.
type rendered struct {
	deployments     map[string]*appsv1.Deployment
	pdbs            map[string]*policyv1.PodDisruptionBudget
	hpas            []*autoscalingv2.HorizontalPodAutoscaler
	jobs            []*batchv1.Job
	secrets         []*corev1.Secret
	services        []*corev1.Service
	serviceAccounts []*corev1.ServiceAccount
	serviceMonitors []*monitoringv1.ServiceMonitor
}

// decodeStrict fills out from a YAML document, failing on any field the
// type does not have: a misspelt or misplaced key would be dropped by the
// API server without a word.
func decodeStrict[T any](t *testing.T, doc []byte, source string) *T {
	t.Helper()
	out := new(T)
	if err := yaml.UnmarshalStrict(doc, out); err != nil {
		t.Fatalf("%s does not decode strictly into %T: %v\n%s", source, out, err, doc)
	}
	return out
}

func renderChart(t *testing.T, files []string) rendered {
	t.Helper()
	args := append([]string{"template", "ce", chartDir, "--namespace", "moderation", "--kube-version", kubeVersion}, valuesArgs(files)...)
	out := runHelm(t, args...)
	r := rendered{deployments: map[string]*appsv1.Deployment{}, pdbs: map[string]*policyv1.PodDisruptionBudget{}}
	for _, doc := range splitYAML(out) {
		var head struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal(doc, &head); err != nil {
			t.Fatalf("not YAML: %v\n%s", err, doc)
		}
		source := fmt.Sprintf("%s %s/%s", head.APIVersion, head.Kind, head.Metadata.Name)
		switch head.APIVersion + " " + head.Kind {
		case "apps/v1 Deployment":
			d := decodeStrict[appsv1.Deployment](t, doc, source)
			r.deployments[d.Spec.Template.Labels["app.kubernetes.io/component"]] = d
		case "policy/v1 PodDisruptionBudget":
			p := decodeStrict[policyv1.PodDisruptionBudget](t, doc, source)
			r.pdbs[p.Spec.Selector.MatchLabels["app.kubernetes.io/component"]] = p
		case "autoscaling/v2 HorizontalPodAutoscaler":
			r.hpas = append(r.hpas, decodeStrict[autoscalingv2.HorizontalPodAutoscaler](t, doc, source))
		case "batch/v1 Job":
			r.jobs = append(r.jobs, decodeStrict[batchv1.Job](t, doc, source))
		case "v1 Secret":
			r.secrets = append(r.secrets, decodeStrict[corev1.Secret](t, doc, source))
		case "v1 Service":
			r.services = append(r.services, decodeStrict[corev1.Service](t, doc, source))
		case "v1 ServiceAccount":
			r.serviceAccounts = append(r.serviceAccounts, decodeStrict[corev1.ServiceAccount](t, doc, source))
		case "monitoring.coreos.com/v1 ServiceMonitor":
			r.serviceMonitors = append(r.serviceMonitors, decodeStrict[monitoringv1.ServiceMonitor](t, doc, source))
		default:
			t.Fatalf("%s: a kind this test does not decode; add it", source)
		}
	}
	return r
}

// splitYAML cuts helm's output into its non-empty documents.
func splitYAML(s string) [][]byte {
	var docs [][]byte
	for _, part := range strings.Split("\n"+s, "\n---") {
		lines := strings.SplitN(part, "\n", 2)
		if len(lines) < 2 {
			continue
		}
		body := lines[1] // the rest of the "---" line is helm's "# Source:" comment or nothing
		if strings.TrimSpace(stripComments(body)) == "" {
			continue
		}
		docs = append(docs, []byte(body))
	}
	return docs
}

func stripComments(s string) string {
	var b strings.Builder
	for _, line := range strings.Split(s, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

// TestChartMatchesTheReadme keeps the chart README's table of values and
// values.yaml in step: every key in the table exists, and every value is in
// the table itself or under a key that is (api.resources covers
// api.resources.limits.memory).
func TestChartMatchesTheReadme(t *testing.T) {
	values, err := os.ReadFile(filepath.Join(chartDir, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(chartDir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var tree map[string]any
	if err := yaml.Unmarshal(values, &tree); err != nil {
		t.Fatal(err)
	}
	nodes, leaves := map[string]bool{}, map[string]bool{}
	valueKeys("", tree, nodes, leaves)
	documented := readmeKeys(string(readme))
	if len(documented) == 0 {
		t.Fatal("no | `key` | rows in the README")
	}
	for k := range documented {
		if !nodes[k] {
			t.Errorf("the README's table has %s, values.yaml does not", k)
		}
	}
	for leaf := range leaves {
		if !coveredBy(leaf, documented) {
			t.Errorf("values.yaml has %s, the README's table does not", leaf)
		}
	}
}

// valueKeys records every dotted path of tree in nodes, and the ones that
// are not maps (or are empty maps) in leaves.
func valueKeys(prefix string, tree map[string]any, nodes, leaves map[string]bool) {
	for k, v := range tree {
		path := k
		if prefix != "" {
			path = prefix + "." + k
		}
		nodes[path] = true
		if sub, ok := v.(map[string]any); ok && len(sub) > 0 {
			valueKeys(path, sub, nodes, leaves)
			continue
		}
		leaves[path] = true
	}
}

// readmeKeys are the keys in the first column of the README's table rows.
func readmeKeys(readme string) map[string]bool {
	keys := map[string]bool{}
	for _, line := range strings.Split(readme, "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		rest := strings.TrimPrefix(line, "| `")
		if end := strings.Index(rest, "`"); end > 0 {
			keys[rest[:end]] = true
		}
	}
	return keys
}

func coveredBy(path string, documented map[string]bool) bool {
	for p := path; ; {
		if documented[p] {
			return true
		}
		i := strings.LastIndex(p, ".")
		if i < 0 {
			return false
		}
		p = p[:i]
	}
}
