package ociruntime

import (
	"fmt"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/syscell/syscell/supervisor"
)

// The annotations a container asks syscell with.
const (
	// AnnotationPolicy names the policy (a file of the supervisor's
	// policy directory) whose compartments the container's programs run
	// under.
	AnnotationPolicy = "syscell.policy"
	// AnnotationMode is enforce (the default), audit or complain, as for
	// syscell run --mode.
	AnnotationMode = "syscell.mode"
	// AnnotationRecord names a recording: the supervisor records the
	// container and writes RECORD/ID.toml to its recording directory.
	AnnotationRecord = "syscell.record"
)

// Annotations that Kubernetes' container runtimes set: which container
// of a pod a bundle is, and whether it is the pod's sandbox (its pause
// container), which a pod's annotations never mean.
var (
	containerNameAnnotations = []string{"io.kubernetes.cri.container-name", "io.kubernetes.container.name"}
	sandboxAnnotations       = map[string]string{
		"io.kubernetes.cri.container-type":  "sandbox",
		"io.kubernetes.cri-o.ContainerType": "sandbox",
		"io.kubernetes.docker.type":         "podsandbox",
	}
)

// useOf reads what a container's annotations ask of syscell: nil for
// nothing. Annotations of a pod apply to every container of the pod
// except its sandbox; one suffixed with "/NAME" (syscell.policy/nginx)
// applies to the container NAME alone, and wins over the pod's.
func useOf(spec *specs.Spec) (*supervisor.Use, error) {
	a := spec.Annotations
	for key, value := range sandboxAnnotations {
		if a[key] == value {
			return nil, nil
		}
	}
	name := ""
	for _, key := range containerNameAnnotations {
		if a[key] != "" {
			name = a[key]
		}
	}
	get := func(key string) string {
		if v, ok := a[key+"/"+name]; ok && name != "" {
			return v
		}
		return a[key]
	}
	use := supervisor.Use{Policy: get(AnnotationPolicy), Mode: get(AnnotationMode), Record: get(AnnotationRecord)}
	switch {
	case use.Policy == "" && use.Record == "" && use.Mode != "":
		return nil, fmt.Errorf("annotation %s=%s names no policy (%s)", AnnotationMode, use.Mode, AnnotationPolicy)
	case use.Policy == "" && use.Record == "":
		return nil, nil
	case use.Policy != "" && use.Record != "":
		return nil, fmt.Errorf("annotations %s and %s: a container is recorded or run under a policy, not both", AnnotationPolicy, AnnotationRecord)
	}
	return &use, nil
}
