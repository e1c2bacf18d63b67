package charttest

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/yaml"
)

func helm(t *testing.T) string {
	t.Helper()
	h, err := Helm()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// valueSets are the default values and every file of charts/xps/ci.
func valueSets(t *testing.T) map[string][]string {
	files, err := filepath.Glob(filepath.Join(Chart(), "ci", "*.yaml"))
	if err != nil || len(files) < 3 {
		t.Fatalf("charts/xps/ci holds %d values files (%v); want at least 3", len(files), err)
	}
	sets := map[string][]string{"default": nil}
	for _, f := range files {
		sets[strings.TrimSuffix(filepath.Base(f), "-values.yaml")] = []string{f}
	}
	return sets
}

func TestLint(t *testing.T) {
	h := helm(t)
	for name, files := range valueSets(t) {
		args := []string{"lint", "--strict", Chart()}
		for _, f := range files {
			args = append(args, "-f", f)
		}
		if out, err := exec.Command(h, args...).CombinedOutput(); err != nil {
			t.Errorf("%s: helm lint: %v\n%s", name, err, out)
		}
	}
}

// TestRenderStrict renders every value set, decodes every object
// strictly, and checks the chart's rules on what it renders.
func TestRenderStrict(t *testing.T) {
	h := helm(t)
	for name, files := range valueSets(t) {
		t.Run(name, func(t *testing.T) {
			objs, err := Render(h, files)
			if err != nil {
				t.Fatal(err)
			}
			checkRules(t, objs)
		})
	}
}

// TestRenderRefusesBadValues: values the chart cannot honour fail the
// render with a message, never a broken manifest.
func TestRenderRefusesBadValues(t *testing.T) {
	h := helm(t)
	for _, c := range []struct{ set, want string }{
		{"mode=online", `mode "online": want batch or streaming`},
		{"mode=streaming", "kafka.brokers is required"},
		{"etcd.bundled=false", "etcd.endpoints is required"},
		{"serve.enabled=true", "serve needs export.store"},
		{"tls.ownWorkerCerts=true", "tls.ownWorkerCerts needs tls.enabled"},
	} {
		_, err := Render(h, nil, c.set)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("--set %s: %v; want an error containing %q", c.set, err, c.want)
		}
	}
}

// TestDecodeIsStrict: the decoder itself refuses an unknown field, so
// that TestRenderStrict can fail.
func TestDecodeIsStrict(t *testing.T) {
	doc := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata: {a: b}\nmistake: 1\n"
	if _, err := Decode([]byte(doc)); err == nil || !strings.Contains(err.Error(), "mistake") {
		t.Errorf("Decode of an unknown field: %v; want an error naming it", err)
	}
	if _, err := Decode([]byte("apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n")); err == nil {
		t.Error("Decode of a kind the chart never renders: no error")
	}
}

// checkRules checks what every rendered workload must have.
func checkRules(t *testing.T, objs []Object) {
	pdbs := map[string]bool{}
	for _, o := range objs {
		if p, ok := o.Obj.(*policyv1.PodDisruptionBudget); ok {
			pdbs[p.Spec.Selector.MatchLabels["app.kubernetes.io/component"]] = true
		}
	}
	workloads := 0
	for _, o := range objs {
		tpl := PodTemplate(o)
		if tpl == nil {
			continue
		}
		workloads++
		where := fmt.Sprintf("%s %s", o.Kind, o.Name)
		if c := tpl.Labels["app.kubernetes.io/component"]; !pdbs[c] {
			t.Errorf("%s: no PodDisruptionBudget selects component %q", where, c)
		}
		checkPod(t, where, &tpl.Spec)
	}
	if workloads < 3 {
		t.Errorf("%d workloads rendered; want at least ams, scheduler and worker", workloads)
	}
}

func checkPod(t *testing.T, where string, spec *corev1.PodSpec) {
	if sc := spec.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
		t.Errorf("%s: the pod does not set runAsNonRoot", where)
	}
	for _, c := range spec.Containers {
		where := where + " container " + c.Name
		if c.LivenessProbe == nil || c.ReadinessProbe == nil {
			t.Errorf("%s: lacks a liveness or readiness probe", where)
		}
		if c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
			t.Errorf("%s: lacks a memory request or limit", where)
		}
		sc := c.SecurityContext
		if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
			t.Errorf("%s: the root filesystem is not read-only", where)
		}
		ports := map[string]bool{}
		for _, p := range c.Ports {
			ports[p.Name] = true
		}
		for _, p := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe} {
			if p != nil && p.HTTPGet != nil && !ports[p.HTTPGet.Port.String()] {
				t.Errorf("%s: a probe names port %q, which the container does not declare", where, p.HTTPGet.Port.String())
			}
		}
		checkMounts(t, where, spec, c)
	}
}

func checkMounts(t *testing.T, where string, spec *corev1.PodSpec, c corev1.Container) {
	vols := map[string]bool{}
	for _, v := range spec.Volumes {
		vols[v.Name] = true
	}
	tmp := false
	for _, m := range c.VolumeMounts {
		tmp = tmp || m.MountPath == "/tmp"
		if !vols[m.Name] && !strings.HasPrefix(where, "StatefulSet etcd") {
			t.Errorf("%s: mounts volume %q, which the pod does not have", where, m.Name)
		}
	}
	if !tmp {
		t.Errorf("%s: no writable /tmp (the root filesystem is read-only)", where)
	}
}

// TestServeModels: with serve.models, each server reads a models file
// from a ConfigMap (serve -models), whose YAML holds every model with the
// keys serve reads (serve.ReadModels decodes strictly: name, store,
// max_bytes, limits), and serve.maxModelBytes becomes -max-model-bytes.
func TestServeModels(t *testing.T) {
	objs, err := Render(helm(t), []string{filepath.Join(Chart(), "ci", "serve-models-values.yaml")})
	if err != nil {
		t.Fatal(err)
	}
	var file string
	var args []string
	for _, o := range objs {
		switch x := o.Obj.(type) {
		case *corev1.ConfigMap:
			if strings.HasSuffix(o.Name, "serve-models") {
				file = x.Data["models.yaml"]
			}
		default:
			if tpl := PodTemplate(o); tpl != nil && tpl.Spec.Containers[0].Name == "serve" {
				args = tpl.Spec.Containers[0].Args
			}
		}
	}
	var models struct {
		Models []struct {
			Name     string `json:"name"`
			Store    string `json:"store"`
			MaxBytes int64  `json:"max_bytes"`
			Limits   struct {
				MaxInFlight int `json:"max_in_flight"`
			} `json:"limits"`
		} `json:"models"`
	}
	if err := yaml.UnmarshalStrict([]byte(file), &models); err != nil || len(models.Models) != 2 ||
		models.Models[1].Name != "exp" || models.Models[1].MaxBytes != 1<<30 || models.Models[1].Limits.MaxInFlight != 4 {
		t.Fatalf("the models file %q: %+v, %v", file, models, err)
	}
	joined := strings.Join(args, " ")
	for _, want := range []string{"-models=/etc/xps-serve/models.yaml", "-max-model-bytes=2147483648"} {
		if !strings.Contains(joined, want) {
			t.Errorf("serve's args %q lack %s", joined, want)
		}
	}
	if strings.Contains(joined, "-store=") {
		t.Errorf("serve's args %q name a -store beside -models", joined)
	}
}
