package charttest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/yaml"
)

// Object is one rendered Kubernetes object, decoded into its API type.
type Object struct {
	Kind, Name string
	// Obj is a pointer to the typed object (*appsv1.StatefulSet, ...).
	Obj any
}

// kinds maps apiVersion/kind to a new typed object: the kinds the chart
// may render. Any other kind is an error.
var kinds = map[string]func() any{
	"v1/Service":                    func() any { return new(corev1.Service) },
	"v1/ConfigMap":                  func() any { return new(corev1.ConfigMap) },
	"v1/Secret":                     func() any { return new(corev1.Secret) },
	"v1/PersistentVolumeClaim":      func() any { return new(corev1.PersistentVolumeClaim) },
	"apps/v1/StatefulSet":           func() any { return new(appsv1.StatefulSet) },
	"apps/v1/Deployment":            func() any { return new(appsv1.Deployment) },
	"batch/v1/Job":                  func() any { return new(batchv1.Job) },
	"policy/v1/PodDisruptionBudget": func() any { return new(policyv1.PodDisruptionBudget) },
}

// Root is the repository's root directory.
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Chart is the chart's directory.
func Chart() string { return filepath.Join(Root(), "charts", "xps") }

// Helm returns the path of the helm binary, built and cached by
// deploy/tools.sh on first use.
func Helm() (string, error) {
	cmd := exec.Command(filepath.Join(Root(), "deploy", "tools.sh"), "helm")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("deploy/tools.sh helm: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// Render runs helm template on the chart with the values files and sets
// (key=value) and decodes every object strictly.
func Render(helm string, values []string, sets ...string) ([]Object, error) {
	args := []string{"template", "xps", Chart()}
	for _, v := range values {
		args = append(args, "-f", v)
	}
	for _, s := range sets {
		args = append(args, "--set", s)
	}
	var stderr bytes.Buffer
	cmd := exec.Command(helm, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("helm %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	return Decode(out)
}

// Decode splits a multi-document YAML stream and decodes every object
// strictly into its API type: an unknown field is an error.
func Decode(stream []byte) ([]Object, error) {
	var objs []Object
	for i, doc := range bytes.Split(stream, []byte("\n---")) {
		var head struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal(doc, &head); err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if head.Kind == "" {
			continue // comments only
		}
		mk, ok := kinds[head.APIVersion+"/"+head.Kind]
		if !ok {
			return nil, fmt.Errorf("document %d: %s/%s %q: a kind the chart should not render", i, head.APIVersion, head.Kind, head.Metadata.Name)
		}
		obj := mk()
		if err := yaml.UnmarshalStrict(doc, obj); err != nil {
			return nil, fmt.Errorf("%s %q: %w", head.Kind, head.Metadata.Name, err)
		}
		objs = append(objs, Object{Kind: head.Kind, Name: head.Metadata.Name, Obj: obj})
	}
	return objs, nil
}

// PodTemplate returns the pod template of a workload (StatefulSet,
// Deployment, Job), or nil.
func PodTemplate(o Object) *corev1.PodTemplateSpec {
	switch w := o.Obj.(type) {
	case *appsv1.StatefulSet:
		return &w.Spec.Template
	case *appsv1.Deployment:
		return &w.Spec.Template
	case *batchv1.Job:
		return &w.Spec.Template
	}
	return nil
}
