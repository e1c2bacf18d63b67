package charttest

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// Runner starts rendered pods as containers on a Docker network, as a
// kubelet and the cluster's DNS would: each pod is one container (the
// chart's pods have one), named by its pod name, with its Services' names
// as network aliases.
type Runner struct {
	// Image replaces every container's image (the image the test built).
	Image string
	// Prefix names the network and prefixes every container.
	Prefix string
	// Dir holds the pods' volumes on the host.
	Dir string
	// Pods are the pods of the rendered workloads, by pod name.
	Pods map[string]*Pod

	objs []Object
}

// Pod is one pod of a rendered workload.
type Pod struct {
	Name        string
	Kind        string // the owner's kind: StatefulSet, Deployment, Job
	Labels      map[string]string
	Annotations map[string]string
	Spec        corev1.PodSpec
	// Aliases are the names the pod answers to on the network.
	Aliases []string
	// claims maps a volumeClaimTemplate's name to this pod's claim.
	claims map[string]string
}

// Container is the pod's container name on the Docker host.
func (r *Runner) Container(pod string) string { return r.Prefix + pod }

// NewRunner expands the workloads of objs into pods and their aliases.
func NewRunner(objs []Object, image, prefix, dir string) (*Runner, error) {
	r := &Runner{Image: image, Prefix: prefix, Dir: dir, Pods: map[string]*Pod{}, objs: objs}
	for _, o := range objs {
		switch w := o.Obj.(type) {
		case *appsv1.StatefulSet:
			r.statefulSet(w)
		case *appsv1.Deployment:
			for i := range int(ptrOr(w.Spec.Replicas, 1)) {
				r.add(&Pod{Name: fmt.Sprintf("%s-%d", w.Name, i), Kind: o.Kind}, w.Spec.Template)
			}
		case *batchv1.Job:
			if w.Spec.CompletionMode == nil || *w.Spec.CompletionMode != batchv1.IndexedCompletion {
				return nil, fmt.Errorf("job %s: only Indexed Jobs are run", w.Name)
			}
			for i := range int(ptrOr(w.Spec.Completions, 1)) {
				p := &Pod{Name: fmt.Sprintf("%s-%d", w.Name, i), Kind: o.Kind,
					Annotations: map[string]string{"batch.kubernetes.io/job-completion-index": strconv.Itoa(i)}}
				r.add(p, w.Spec.Template)
			}
		}
	}
	r.serviceAliases()
	return r, nil
}

func (r *Runner) statefulSet(w *appsv1.StatefulSet) {
	for i := range int(ptrOr(w.Spec.Replicas, 1)) {
		name := fmt.Sprintf("%s-%d", w.Name, i)
		p := &Pod{Name: name, Kind: "StatefulSet", claims: map[string]string{},
			Labels:  map[string]string{"apps.kubernetes.io/pod-index": strconv.Itoa(i), "statefulset.kubernetes.io/pod-name": name},
			Aliases: []string{name + "." + w.Spec.ServiceName}}
		for _, c := range w.Spec.VolumeClaimTemplates {
			p.claims[c.Name] = c.Name + "-" + name
		}
		r.add(p, w.Spec.Template)
	}
}

func (r *Runner) add(p *Pod, tpl corev1.PodTemplateSpec) {
	p.Labels = merge(tpl.Labels, p.Labels)
	p.Annotations = merge(tpl.Annotations, p.Annotations)
	p.Spec = *tpl.Spec.DeepCopy()
	p.Aliases = append(p.Aliases, p.Name)
	r.Pods[p.Name] = p
}

// serviceAliases gives every pod the names of the Services that select it.
func (r *Runner) serviceAliases() {
	for _, o := range r.objs {
		s, ok := o.Obj.(*corev1.Service)
		if !ok || len(s.Spec.Selector) == 0 {
			continue
		}
		for _, p := range r.Pods {
			if selects(s.Spec.Selector, p.Labels) {
				p.Aliases = append(p.Aliases, s.Name)
			}
		}
	}
}

func selects(sel, labels map[string]string) bool {
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func merge(a, b map[string]string) map[string]string {
	m := maps.Clone(a)
	if m == nil {
		m = map[string]string{}
	}
	maps.Copy(m, b)
	return m
}

func ptrOr(p *int32, def int32) int32 {
	if p == nil {
		return def
	}
	return *p
}

// Docker runs the docker command and returns its trimmed stdout.
func Docker(ctx context.Context, args ...string) (string, error) {
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "docker", args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("docker %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}

// Network creates the runner's Docker network.
func (r *Runner) Network(ctx context.Context) error {
	_, err := Docker(ctx, "network", "create", r.Prefix+"net")
	return err
}

// Start starts a pod's container (detached).
func (r *Runner) Start(ctx context.Context, name string) error {
	p := r.Pods[name]
	args, err := r.runArgs(p)
	if err != nil {
		return fmt.Errorf("pod %s: %w", name, err)
	}
	_, err = Docker(ctx, args...)
	return err
}

// runArgs is the docker run command line of a pod.
func (r *Runner) runArgs(p *Pod) ([]string, error) {
	if len(p.Spec.Containers) != 1 {
		return nil, fmt.Errorf("%d containers; the runner runs pods of one", len(p.Spec.Containers))
	}
	c := p.Spec.Containers[0]
	args := []string{"run", "-d", "--name", r.Container(p.Name), "--network", r.Prefix + "net", "--hostname", p.Name}
	for _, a := range p.Aliases {
		args = append(args, "--network-alias", a)
	}
	env, err := r.env(p, c)
	if err != nil {
		return nil, err
	}
	for _, kv := range env {
		args = append(args, "-e", kv[0]+"="+kv[1])
	}
	vols, err := r.mounts(p, c)
	if err != nil {
		return nil, err
	}
	args = append(args, vols...)
	args = append(args, security(p, c)...)
	switch {
	case p.Kind == "Job" && p.Spec.RestartPolicy == corev1.RestartPolicyOnFailure:
		args = append(args, "--restart", "on-failure")
	case p.Kind != "Job":
		args = append(args, "--restart", "always")
	}
	if m := c.Resources.Limits.Memory(); !m.IsZero() {
		args = append(args, "--memory", strconv.FormatInt(m.Value(), 10))
	}
	if len(c.Command) == 0 {
		return nil, fmt.Errorf("container %s has no command", c.Name)
	}
	vars := map[string]string{}
	for _, kv := range env {
		vars[kv[0]] = kv[1]
	}
	args = append(args, "--entrypoint", expand(c.Command[0], vars), r.Image)
	for _, a := range append(c.Command[1:], c.Args...) {
		args = append(args, expand(a, vars))
	}
	return args, nil
}

var varRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// expand replaces $(VAR) by the variable's value, as Kubernetes does in
// command, args and env values (an unknown reference stays as it is).
func expand(s string, vars map[string]string) string {
	return varRef.ReplaceAllStringFunc(s, func(ref string) string {
		if v, ok := vars[ref[2:len(ref)-1]]; ok {
			return v
		}
		return ref
	})
}

// env resolves a container's environment, downward-API references
// included, in order; an Indexed Job's pod also gets JOB_COMPLETION_INDEX.
func (r *Runner) env(p *Pod, c corev1.Container) ([][2]string, error) {
	var out [][2]string
	vars := map[string]string{}
	if idx, ok := p.Annotations["batch.kubernetes.io/job-completion-index"]; ok {
		out = append(out, [2]string{"JOB_COMPLETION_INDEX", idx})
		vars["JOB_COMPLETION_INDEX"] = idx
	}
	for _, e := range c.Env {
		v := expand(e.Value, vars)
		if e.ValueFrom != nil {
			f := e.ValueFrom.FieldRef
			if f == nil {
				return nil, fmt.Errorf("env %s: only fieldRef values are supported", e.Name)
			}
			var err error
			if v, err = fieldRef(p, f.FieldPath); err != nil {
				return nil, fmt.Errorf("env %s: %w", e.Name, err)
			}
		}
		out = append(out, [2]string{e.Name, v})
		vars[e.Name] = v
	}
	return out, nil
}

var mapRef = regexp.MustCompile(`^metadata\.(labels|annotations)\['([^']+)'\]$`)

// fieldRef is the downward API's value of a field path for a pod.
func fieldRef(p *Pod, path string) (string, error) {
	switch path {
	case "metadata.name":
		return p.Name, nil
	case "metadata.namespace":
		return "default", nil
	}
	m := mapRef.FindStringSubmatch(path)
	if m == nil {
		return "", fmt.Errorf("field path %q is not supported", path)
	}
	src := p.Labels
	if m[1] == "annotations" {
		src = p.Annotations
	}
	v, ok := src[m[2]]
	if !ok {
		return "", fmt.Errorf("field path %q: the pod has no such %s", path, m[1][:len(m[1])-1])
	}
	return v, nil
}

// security maps the pod's and container's security contexts to docker
// run flags.
func security(p *Pod, c corev1.Container) []string {
	var args []string
	if ps := p.Spec.SecurityContext; ps != nil && ps.RunAsUser != nil {
		user := strconv.FormatInt(*ps.RunAsUser, 10)
		if ps.RunAsGroup != nil {
			user += ":" + strconv.FormatInt(*ps.RunAsGroup, 10)
		}
		args = append(args, "--user", user)
		if ps.FSGroup != nil {
			args = append(args, "--group-add", strconv.FormatInt(*ps.FSGroup, 10))
		}
	}
	if s := c.SecurityContext; s != nil {
		if s.ReadOnlyRootFilesystem != nil && *s.ReadOnlyRootFilesystem {
			args = append(args, "--read-only")
		}
		if s.AllowPrivilegeEscalation != nil && !*s.AllowPrivilegeEscalation {
			args = append(args, "--security-opt", "no-new-privileges")
		}
		if s.Capabilities != nil {
			for _, d := range s.Capabilities.Drop {
				args = append(args, "--cap-drop", string(d))
			}
		}
	}
	return args
}

// mounts makes the host directories of a pod's volumes and returns the
// docker run flags that mount them.
func (r *Runner) mounts(p *Pod, c corev1.Container) ([]string, error) {
	src := map[string]string{}
	for _, v := range p.Spec.Volumes {
		dir, err := r.volume(p, v)
		if err != nil {
			return nil, fmt.Errorf("volume %s: %w", v.Name, err)
		}
		src[v.Name] = dir
	}
	for name, claim := range p.claims {
		dir := filepath.Join(r.Dir, "claims", claim)
		if err := mkdirOpen(dir); err != nil {
			return nil, err
		}
		src[name] = dir
	}
	var args []string
	for _, m := range c.VolumeMounts {
		dir, ok := src[m.Name]
		if !ok {
			return nil, fmt.Errorf("mount of volume %q, which the pod does not have", m.Name)
		}
		spec := dir + ":" + m.MountPath
		if m.ReadOnly {
			spec += ":ro"
		}
		args = append(args, "-v", spec)
	}
	return args, nil
}

// volume returns the host directory of one pod volume, creating it.
func (r *Runner) volume(p *Pod, v corev1.Volume) (string, error) {
	switch {
	case v.EmptyDir != nil:
		dir := filepath.Join(r.Dir, "pods", p.Name, v.Name)
		return dir, mkdirOpen(dir)
	case v.PersistentVolumeClaim != nil:
		dir := filepath.Join(r.Dir, "claims", v.PersistentVolumeClaim.ClaimName)
		return dir, mkdirOpen(dir)
	case v.HostPath != nil:
		return v.HostPath.Path, nil
	case v.ConfigMap != nil:
		return r.configMap(v.ConfigMap.Name)
	case v.Secret != nil:
		return r.secret(v.Secret.SecretName)
	}
	return "", fmt.Errorf("a kind of volume the runner does not support")
}

func (r *Runner) configMap(name string) (string, error) {
	for _, o := range r.objs {
		if cm, ok := o.Obj.(*corev1.ConfigMap); ok && cm.Name == name {
			files := map[string][]byte{}
			for k, v := range cm.Data {
				files[k] = []byte(v)
			}
			return r.files("configmaps/"+name, files)
		}
	}
	return "", fmt.Errorf("no ConfigMap %q rendered", name)
}

func (r *Runner) secret(name string) (string, error) {
	for _, o := range r.objs {
		if s, ok := o.Obj.(*corev1.Secret); ok && s.Name == name {
			files := maps.Clone(s.Data)
			if files == nil {
				files = map[string][]byte{}
			}
			for k, v := range s.StringData {
				files[k] = []byte(v)
			}
			return r.files("secrets/"+name, files)
		}
	}
	if dir := filepath.Join(r.Dir, "secrets", name); exists(dir) {
		return dir, nil // provided by the test (a Secret made outside the chart)
	}
	return "", fmt.Errorf("no Secret %q rendered or provided", name)
}

// files writes a ConfigMap's or Secret's keys as files (readable by the
// pods' non-root user) and returns their directory.
func (r *Runner) files(sub string, files map[string][]byte) (string, error) {
	dir := filepath.Join(r.Dir, sub)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	for k, v := range files {
		if err := os.WriteFile(filepath.Join(dir, k), v, 0o644); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// mkdirOpen makes a directory any pod user may write (an emptyDir or a
// claim whose owner fsGroup would set).
func mkdirOpen(dir string) error {
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return err
	}
	return os.Chmod(dir, 0o777)
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

// State is a container's docker state: "running", "exited", ...
type State struct {
	Status   string
	ExitCode int
	Restarts int
}

// Inspect returns a pod container's state.
func (r *Runner) Inspect(ctx context.Context, pod string) (State, error) {
	out, err := Docker(ctx, "inspect", "-f", "{{.State.Status}} {{.State.ExitCode}} {{.RestartCount}}", r.Container(pod))
	if err != nil {
		return State{}, err
	}
	var s State
	_, err = fmt.Sscan(out, &s.Status, &s.ExitCode, &s.Restarts)
	return s, err
}

// Logs returns a pod container's stdout and stderr.
func (r *Runner) Logs(ctx context.Context, pod string) (stdout, stderr string, err error) {
	var o, e bytes.Buffer
	cmd := exec.CommandContext(ctx, "docker", "logs", r.Container(pod))
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	return o.String(), e.String(), err
}

// Get fetches path from a pod's named container port over the Docker
// network (the host reaches the containers' addresses), as a probe does.
func (r *Runner) Get(ctx context.Context, pod, port, path string) (int, string, error) {
	p := r.Pods[pod]
	num := 0
	for _, cp := range p.Spec.Containers[0].Ports {
		if cp.Name == port {
			num = int(cp.ContainerPort)
		}
	}
	if num == 0 {
		return 0, "", fmt.Errorf("pod %s has no port %q", pod, port)
	}
	ip, err := Docker(ctx, "inspect", "-f", "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}", r.Container(pod))
	if err != nil || ip == "" {
		return 0, "", fmt.Errorf("pod %s has no address (%v)", pod, err)
	}
	return httpGet(ctx, fmt.Sprintf("http://%s:%d%s", ip, num, path))
}

// Close removes every container of the runner and its network.
func (r *Runner) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for name := range r.Pods {
		Docker(ctx, "rm", "-f", r.Container(name)) //nolint:errcheck // best effort
	}
	Docker(ctx, "network", "rm", r.Prefix+"net") //nolint:errcheck // best effort
}
