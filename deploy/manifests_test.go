// Package deploy holds syscell's deployment files (a systemd unit, the
// Kubernetes manifests, the image) and the tests that check them. No
// Kubernetes runs here: the manifests are decoded strictly into the
// fields of the Kubernetes API they use (a misspelt or misplaced field
// fails), and checked against each other and against syscell's own
// names (annotations, flags, paths).
package deploy

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/syscell/syscell/ociruntime"
	"github.com/syscell/syscell/supervisor"
)

// The Kubernetes API's fields these manifests use (core/v1, apps/v1,
// node.k8s.io/v1), with the API's names.
type (
	object struct {
		APIVersion string            `yaml:"apiVersion"`
		Kind       string            `yaml:"kind"`
		Metadata   meta              `yaml:"metadata"`
		Handler    string            `yaml:"handler"`
		Scheduling *scheduling       `yaml:"scheduling"`
		Data       map[string]string `yaml:"data"`
		Spec       yaml.Node         `yaml:"spec"`
	}
	meta struct {
		Name        string            `yaml:"name"`
		Namespace   string            `yaml:"namespace"`
		Labels      map[string]string `yaml:"labels"`
		Annotations map[string]string `yaml:"annotations"`
	}
	scheduling struct {
		NodeSelector map[string]string `yaml:"nodeSelector"`
	}
	daemonSetSpec struct {
		Selector       labelSelector `yaml:"selector"`
		UpdateStrategy struct {
			Type string `yaml:"type"`
		} `yaml:"updateStrategy"`
		Template struct {
			Metadata meta    `yaml:"metadata"`
			Spec     podSpec `yaml:"spec"`
		} `yaml:"template"`
	}
	labelSelector struct {
		MatchLabels map[string]string `yaml:"matchLabels"`
	}
	podSpec struct {
		HostPID           bool              `yaml:"hostPID"`
		PriorityClassName string            `yaml:"priorityClassName"`
		RuntimeClassName  string            `yaml:"runtimeClassName"`
		RestartPolicy     string            `yaml:"restartPolicy"`
		SecurityContext   *podSecurity      `yaml:"securityContext"`
		InitContainers    []container       `yaml:"initContainers"`
		Containers        []container       `yaml:"containers"`
		NodeSelector      map[string]string `yaml:"nodeSelector"`
		Volumes           []volume          `yaml:"volumes"`
	}
	podSecurity struct {
		SeccompProfile struct {
			Type             string `yaml:"type"`
			LocalhostProfile string `yaml:"localhostProfile"`
		} `yaml:"seccompProfile"`
	}
	container struct {
		Name            string                     `yaml:"name"`
		Image           string                     `yaml:"image"`
		Command         []string                   `yaml:"command"`
		Args            []string                   `yaml:"args"`
		SecurityContext *struct{ Privileged bool } `yaml:"securityContext"`
		VolumeMounts    []volumeMount              `yaml:"volumeMounts"`
		Ports           []struct {
			ContainerPort int `yaml:"containerPort"`
		} `yaml:"ports"`
		Resources struct {
			Requests map[string]string `yaml:"requests"`
		} `yaml:"resources"`
	}
	volumeMount struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
		ReadOnly  bool   `yaml:"readOnly"`
	}
	volume struct {
		Name     string `yaml:"name"`
		HostPath *struct {
			Path string `yaml:"path"`
			Type string `yaml:"type"`
		} `yaml:"hostPath"`
		ConfigMap *struct {
			Name string `yaml:"name"`
		} `yaml:"configMap"`
	}
)

// kinds are the API versions of the kinds the manifests hold.
var kinds = map[string]string{
	"Namespace": "v1", "ConfigMap": "v1", "Pod": "v1",
	"DaemonSet": "apps/v1", "RuntimeClass": "node.k8s.io/v1",
}

// dns1123 is what Kubernetes takes for most names.
var (
	dns1123       = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	annotationKey = regexp.MustCompile(`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`)
)

// decode reads every document of a manifest, strictly.
func decode(t *testing.T, path string) []object {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var out []object
	for {
		var o object
		err := dec.Decode(&o)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("%s: document %d: %v", path, len(out)+1, err)
		}
		if kinds[o.Kind] == "" || kinds[o.Kind] != o.APIVersion {
			t.Errorf("%s: %s of apiVersion %q", path, o.Kind, o.APIVersion)
		}
		if !dns1123.MatchString(o.Metadata.Name) {
			t.Errorf("%s: %s name %q", path, o.Kind, o.Metadata.Name)
		}
		for key := range o.Metadata.Annotations {
			if !annotationKey.MatchString(key) {
				t.Errorf("%s: %s %s: annotation key %q", path, o.Kind, o.Metadata.Name, key)
			}
		}
		out = append(out, o)
	}
}

// spec decodes an object's spec, strictly, into v.
func spec(t *testing.T, o object, v any) {
	t.Helper()
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	if err := enc.Encode(&o.Spec); err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(&buf)
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%s %s: spec: %v", o.Kind, o.Metadata.Name, err)
	}
}

func find(objs []object, kind, name string) (object, bool) {
	for _, o := range objs {
		if o.Kind == kind && o.Metadata.Name == name {
			return o, true
		}
	}
	return object{}, false
}

// The paths where the DaemonSet installs the runtime and publishes what
// the supervisor needs.
const (
	runtimeOnNode = "/opt/syscell/bin/syscell-runtime"
	handler       = "syscell"
)

// TestManifests checks the manifests against each other and against
// syscell: the RuntimeClass's handler is the one the engines' drop-ins
// map to the runtime the DaemonSet installs; the supervisor's flags and
// mounts are its own defaults (which the runtime on the node uses); the
// example pods use the RuntimeClass and syscell's annotations.
func TestManifests(t *testing.T) {
	dir := "kubernetes"
	var objs []object
	for _, f := range []string{"runtimeclass.yaml", "daemonset.yaml", "pod-example.yaml"} {
		objs = append(objs, decode(t, filepath.Join(dir, f))...)
	}
	rc, ok := find(objs, "RuntimeClass", "syscell")
	if !ok || rc.Handler != handler {
		t.Fatalf("no RuntimeClass syscell with handler %q: %+v", handler, rc)
	}
	engines, ok := find(objs, "ConfigMap", "syscell-engines")
	if !ok {
		t.Fatal("no ConfigMap syscell-engines")
	}
	checkEngines(t, engines.Data)
	ds, ok := find(objs, "DaemonSet", "syscell")
	if !ok {
		t.Fatal("no DaemonSet syscell")
	}
	var d daemonSetSpec
	spec(t, ds, &d)
	checkDaemonSet(t, d, rc)
	if _, ok := find(objs, "ConfigMap", "syscell-policies"); !ok {
		t.Error("no ConfigMap syscell-policies, which the DaemonSet mounts")
	}
	pods := 0
	for _, o := range objs {
		if o.Kind != "Pod" {
			continue
		}
		pods++
		var p podSpec
		spec(t, o, &p)
		if p.RuntimeClassName != rc.Metadata.Name {
			t.Errorf("pod %s: runtimeClassName %q", o.Metadata.Name, p.RuntimeClassName)
		}
		use := 0
		for key := range o.Metadata.Annotations {
			if key == ociruntime.AnnotationPolicy || key == ociruntime.AnnotationRecord {
				use++
			}
		}
		if use != 1 {
			t.Errorf("pod %s: annotations %v, want one of %s and %s", o.Metadata.Name, o.Metadata.Annotations, ociruntime.AnnotationPolicy, ociruntime.AnnotationRecord)
		}
	}
	if pods != 2 {
		t.Errorf("%d example pods, want one under a policy and one recorded", pods)
	}
}

// checkEngines checks the containerd and CRI-O configurations: the
// handler, the runtime installed, and the annotations passed on.
func checkEngines(t *testing.T, data map[string]string) {
	containerd, crio := data["containerd.toml"], data["crio.conf"]
	for name, conf := range map[string]string{"containerd.toml": containerd, "crio.conf": crio} {
		if !strings.Contains(conf, `"`+runtimeOnNode+`"`) {
			t.Errorf("%s does not name %s", name, runtimeOnNode)
		}
	}
	if !strings.Contains(containerd, `containerd.runtimes.`+handler+`]`) || !strings.Contains(containerd, `pod_annotations = ["syscell.*"]`) {
		t.Errorf("containerd.toml: no runtime %s passing syscell's annotations:\n%s", handler, containerd)
	}
	if !strings.Contains(crio, `[crio.runtime.runtimes.`+handler+`]`) {
		t.Errorf("crio.conf: no runtime %s:\n%s", handler, crio)
	}
	for _, a := range []string{ociruntime.AnnotationPolicy, ociruntime.AnnotationMode, ociruntime.AnnotationRecord} {
		if !strings.Contains(crio, `"`+a+`"`) {
			t.Errorf("crio.conf: %s is not an allowed annotation", a)
		}
	}
}

// checkDaemonSet checks the DaemonSet: its selector, its volumes, the
// supervisor's command line (flags of syscell supervise, with the
// defaults the runtime on the node uses), where its directories are
// mounted, and that it runs where the RuntimeClass schedules pods.
func checkDaemonSet(t *testing.T, d daemonSetSpec, rc object) {
	for k, v := range d.Selector.MatchLabels {
		if d.Template.Metadata.Labels[k] != v {
			t.Errorf("the selector's %s=%s is not a label of the pods", k, v)
		}
	}
	p := d.Template.Spec
	if !p.HostPID {
		t.Error("the supervisor needs the host's PID namespace (hostPID)")
	}
	volumes := map[string]volume{}
	for _, v := range p.Volumes {
		volumes[v.Name] = v
	}
	for _, c := range append(slices.Clone(p.InitContainers), p.Containers...) {
		if c.Image == "" || c.SecurityContext == nil || !c.SecurityContext.Privileged {
			t.Errorf("container %s: an image, privileged", c.Name)
		}
		for _, m := range c.VolumeMounts {
			if _, ok := volumes[m.Name]; !ok {
				t.Errorf("container %s mounts volume %s, which the pod lacks", c.Name, m.Name)
			}
		}
	}
	if len(p.Containers) != 1 {
		t.Fatalf("%d containers, want the supervisor", len(p.Containers))
	}
	sup := p.Containers[0]
	if len(sup.Command) < 2 || sup.Command[1] != "supervise" {
		t.Fatalf("the supervisor's command: %q", sup.Command)
	}
	defaults := supervisor.DefaultDirs()
	flags := map[string]string{}
	for i := 2; i+1 < len(sup.Command); i += 2 {
		flags[sup.Command[i]] = sup.Command[i+1]
	}
	want := map[string]string{"--dir": defaults.State, "--policy-dir": defaults.PolicyDir, "--record-dir": defaults.RecordDir}
	for flag, path := range want {
		if flags[flag] != path {
			t.Errorf("supervise %s %s, want %s (the runtime's default)", flag, flags[flag], path)
		}
	}
	mounts := map[string]volume{}
	for _, m := range sup.VolumeMounts {
		mounts[m.MountPath] = volumes[m.Name]
	}
	if v := mounts[defaults.State]; v.HostPath == nil || v.HostPath.Path != defaults.State {
		t.Errorf("the state directory %s is not the node's", defaults.State)
	}
	if v := mounts[defaults.PolicyDir]; v.ConfigMap == nil || v.ConfigMap.Name != "syscell-policies" {
		t.Errorf("the policy directory %s is not the ConfigMap syscell-policies", defaults.PolicyDir)
	}
	if v := mounts[defaults.RecordDir]; v.HostPath == nil || v.HostPath.Path != defaults.RecordDir {
		t.Errorf("the recording directory %s is not the node's", defaults.RecordDir)
	}
	if lib := flags["--library"]; filepath.Dir(lib) != filepath.Dir(runtimeOnNode) {
		t.Errorf("the audit library %s is not installed next to the runtime %s", lib, runtimeOnNode)
	}
	install := strings.Join(p.InitContainers[0].Command, " ")
	for _, want := range []string{"/host" + runtimeOnNode, filepath.Join(defaults.State, "managed")} {
		if !strings.Contains(install, want) {
			t.Errorf("the installer does not write %s", want)
		}
	}
	for k, v := range rc.Scheduling.NodeSelector {
		if p.NodeSelector[k] != v {
			t.Errorf("the RuntimeClass schedules pods on %s=%s, where the DaemonSet does not run", k, v)
		}
	}
}

// TestSystemdUnit checks the unit's command line: syscell supervise
// with the runtime's default directories.
func TestSystemdUnit(t *testing.T) {
	data, err := os.ReadFile("systemd/syscell-supervise.service")
	if err != nil {
		t.Fatal(err)
	}
	var exec string
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "ExecStart="); ok {
			exec = v
		}
	}
	d := supervisor.DefaultDirs()
	want := "/usr/local/lib/syscell/syscell supervise --dir " + d.State + " --policy-dir " + d.PolicyDir + " --record-dir " + d.RecordDir
	if exec != want {
		t.Errorf("ExecStart=%s\nwant %s", exec, want)
	}
	if !strings.Contains(string(data), filepath.Join(d.State, "managed")) {
		t.Error("the unit does not say that it manages the supervisor")
	}
}
