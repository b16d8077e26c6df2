package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// spoCase is a policy and the SeccompProfile WriteSPO must write for it.
type spoCase struct {
	name   string
	pol    *Policy
	opt    SPOOptions
	golden string
}

// spoCases are the good_*.toml vectors of testdata/spo, named after their
// files, and Docker's profile in a namespace. Each golden file sits next to
// its policy.
func spoCases(t *testing.T) []spoCase {
	t.Helper()
	cases := []spoCase{{
		name:   "docker-default",
		pol:    docker(t, dockerDefaults),
		opt:    SPOOptions{Namespace: "default"},
		golden: "testdata/spo/docker-default.yaml",
	}}
	for _, f := range vectors(t, "spo/good_*.toml") {
		cases = append(cases, spoCase{
			name:   filepath.Base(f),
			pol:    mustParse(t, f),
			golden: strings.TrimSuffix(f, ".toml") + ".yaml",
		})
	}
	return cases
}

func writeSPO(t *testing.T, p *Policy, opt SPOOptions) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := p.WriteSPO(&b, opt); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestSPOGolden keeps the SeccompProfiles in testdata/spo in step with
// WriteSPO; go test -run TestSPOGolden -update rewrites them.
func TestSPOGolden(t *testing.T) {
	for _, c := range spoCases(t) {
		t.Run(c.name, func(t *testing.T) {
			got := writeSPO(t, c.pol, c.opt)
			if *update {
				if err := os.WriteFile(c.golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if want := readFile(t, c.golden); !bytes.Equal(got, want) {
				t.Errorf("WriteSPO differs from %s:\n%s", c.golden, got)
			}
			if again := writeSPO(t, c.pol, c.opt); !bytes.Equal(again, got) {
				t.Errorf("WriteSPO is not stable:\n%s\nthen\n%s", got, again)
			}
		})
	}
}

// TestSPORoundTrip checks each resource against the CRD, then does what the
// operator does with it: its spec, written as JSON, is the seccomp profile a
// runtime reads. Read back with ParseOCI, which refuses unknown fields, it
// must decide every call as the policy does.
func TestSPORoundTrip(t *testing.T) {
	for _, c := range spoCases(t) {
		t.Run(c.name, func(t *testing.T) {
			var doc map[string]any
			if err := yaml.Unmarshal(writeSPO(t, c.pol, c.opt), &doc); err != nil {
				t.Fatal(err)
			}
			if err := checkCRD(doc); err != nil {
				t.Fatalf("the CRD would refuse the resource: %v", err)
			}
			js, err := json.Marshal(doc["spec"])
			if err != nil {
				t.Fatal(err)
			}
			back, warnings, err := ParseOCI("spec.json", js, OCIOptions{Kernel: "2.6", Caps: []string{}})
			if err != nil || len(warnings) > 0 {
				t.Fatalf("ParseOCI of the spec: %v, warnings %q\n%s", err, warnings, js)
			}
			if d := verdictDiff(c.pol, back); d != "" {
				t.Errorf("the spec decides differently: %s", d)
			}
		})
	}
}

// TestSPOFailures runs the fail_*.toml vectors of testdata/spo: policies
// Parse accepts but a SeccompProfile cannot express. The first line of each
// is "# error: " and the exact error.
func TestSPOFailures(t *testing.T) {
	for _, f := range vectors(t, "spo/fail_*.toml") {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data := readFile(t, f)
			first, _, _ := strings.Cut(string(data), "\n")
			want, ok := strings.CutPrefix(first, "# error: ")
			if !ok {
				t.Fatalf("%s does not start with \"# error: \"", f)
			}
			err := mustParse(t, f).WriteSPO(&bytes.Buffer{}, SPOOptions{})
			if err == nil || err.Error() != want {
				t.Fatalf("WriteSPO: %v\nwant %s", err, want)
			}
			if perr := (*Error)(nil); !errors.As(err, &perr) {
				t.Errorf("WriteSPO's error is %T, want *Error", err)
			}
		})
	}
}

func TestSPOMetadata(t *testing.T) {
	long := strings.Repeat("a", 62) + "_b"
	tests := []struct {
		source string
		opt    SPOOptions
		want   spoMetadata
		err    string
	}{
		{"docker-default.json", SPOOptions{}, spoMetadata{Name: "docker-default"}, ""},
		{"/etc/syscell/My_Policy v2.toml", SPOOptions{}, spoMetadata{Name: "my-policy-v2"}, ""},
		{"nginx.prod.toml", SPOOptions{Namespace: "web"}, spoMetadata{Name: "nginx-prod", Namespace: "web"}, ""},
		{"-redis-.toml", SPOOptions{}, spoMetadata{Name: "redis"}, ""},
		{long + ".toml", SPOOptions{}, spoMetadata{Name: strings.Repeat("a", 62)}, ""},
		{"x.toml", SPOOptions{Name: "team.nginx-1"}, spoMetadata{Name: "team.nginx-1"}, ""},
		{"___.toml", SPOOptions{}, spoMetadata{}, `cannot make a metadata.name of "___.toml", which has no letters or digits: name the resource`},
		{"x.toml", SPOOptions{Name: "Nginx"}, spoMetadata{}, `metadata.name "Nginx" is not a DNS-1123 subdomain`},
		{"x.toml", SPOOptions{Name: "nginx-"}, spoMetadata{}, `metadata.name "nginx-" is not a DNS-1123 subdomain`},
		{"x.toml", SPOOptions{Name: strings.Repeat("a", 254)}, spoMetadata{}, "is not a DNS-1123 subdomain"},
		{"x.toml", SPOOptions{Namespace: "kube.system"}, spoMetadata{}, `metadata.namespace "kube.system" is not a DNS-1123 label`},
		{"x.toml", SPOOptions{Namespace: strings.Repeat("a", 64)}, spoMetadata{}, "is not a DNS-1123 label"},
	}
	for _, tt := range tests {
		t.Run(tt.source+" "+tt.opt.Name+" "+tt.opt.Namespace, func(t *testing.T) {
			got, err := tt.opt.metadata(tt.source)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("metadata: %v (%+v), want an error containing %q", err, got, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("metadata = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

// The operator's v1beta1 CRD (deploy/base-crds/crds/seccompprofile.yaml in
// kubernetes-sigs/security-profiles-operator): the keys of each object among
// those syscell writes, and the values of its enums (architectures: the x86
// ones).
var (
	crdKeys = map[string][]string{
		"resource": {"apiVersion", "kind", "metadata", "spec"},
		"metadata": {"name", "namespace"},
		"spec":     {"defaultAction", "architectures", "syscalls"},
		"syscall":  {"names", "action", "errnoRet", "args"},
		"arg":      {"index", "value", "valueTwo", "op"},
	}
	crdRequired = map[string][]string{
		"resource": {"apiVersion", "kind", "metadata", "spec"},
		"metadata": {"name"},
		"spec":     {"defaultAction"},
		"syscall":  {"names", "action"},
		"arg":      {"index", "op"},
	}
	crdActions = []string{"SCMP_ACT_KILL", "SCMP_ACT_KILL_PROCESS", "SCMP_ACT_KILL_THREAD", "SCMP_ACT_TRAP",
		"SCMP_ACT_ERRNO", "SCMP_ACT_TRACE", "SCMP_ACT_ALLOW", "SCMP_ACT_LOG", "SCMP_ACT_NOTIFY"}
	crdArches = []string{"SCMP_ARCH_X86", "SCMP_ARCH_X86_64", "SCMP_ARCH_X32"}
	crdOps    = []string{"SCMP_CMP_NE", "SCMP_CMP_LT", "SCMP_CMP_LE", "SCMP_CMP_EQ", "SCMP_CMP_GE",
		"SCMP_CMP_GT", "SCMP_CMP_MASKED_EQ"}
)

// checkCRD reports the first thing in a decoded resource that the CRD's
// schema refuses, as the API server would.
func checkCRD(doc map[string]any) error {
	if err := crdObject("resource", doc); err != nil {
		return err
	}
	if doc["apiVersion"] != SPOAPIVersion || doc["kind"] != SPOKind {
		return fmt.Errorf("apiVersion %v, kind %v; want %s, %s", doc["apiVersion"], doc["kind"], SPOAPIVersion, SPOKind)
	}
	meta, ok := doc["metadata"].(map[string]any)
	if !ok {
		return fmt.Errorf("metadata is %T", doc["metadata"])
	}
	if err := crdObject("metadata", meta); err != nil {
		return err
	}
	spec, ok := doc["spec"].(map[string]any)
	if !ok {
		return fmt.Errorf("spec is %T", doc["spec"])
	}
	return crdSpec(spec)
}

func crdSpec(spec map[string]any) error {
	if err := crdObject("spec", spec); err != nil {
		return err
	}
	if err := crdEnum("defaultAction", spec["defaultAction"], crdActions); err != nil {
		return err
	}
	arches, _ := spec["architectures"].([]any)
	for _, a := range arches {
		if err := crdEnum("architectures", a, crdArches); err != nil {
			return err
		}
	}
	syscalls, _ := spec["syscalls"].([]any)
	for i, sc := range syscalls {
		if err := crdSyscall(sc); err != nil {
			return fmt.Errorf("syscalls[%d]: %w", i, err)
		}
	}
	return nil
}

func crdSyscall(v any) error {
	sc, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("is %T", v)
	}
	if err := crdObject("syscall", sc); err != nil {
		return err
	}
	if err := crdEnum("action", sc["action"], crdActions); err != nil {
		return err
	}
	if ret, ok := sc["errnoRet"]; ok {
		if err := crdInt("errnoRet", ret); err != nil {
			return err
		}
	}
	args, _ := sc["args"].([]any)
	if len(args) > 6 {
		return fmt.Errorf("%d args, at most 6", len(args))
	}
	for i, a := range args {
		if err := crdArg(a); err != nil {
			return fmt.Errorf("args[%d]: %w", i, err)
		}
	}
	return nil
}

func crdArg(v any) error {
	arg, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("is %T", v)
	}
	if err := crdObject("arg", arg); err != nil {
		return err
	}
	for _, key := range []string{"index", "value", "valueTwo"} {
		if x, ok := arg[key]; ok {
			if err := crdInt(key, x); err != nil {
				return err
			}
		}
	}
	return crdEnum("op", arg["op"], crdOps)
}

// crdObject checks an object's keys against the CRD's.
func crdObject(kind string, obj map[string]any) error {
	for key := range obj {
		if !slices.Contains(crdKeys[kind], key) {
			return fmt.Errorf("%s: unknown field %q", kind, key)
		}
	}
	for _, key := range crdRequired[kind] {
		if _, ok := obj[key]; !ok {
			return fmt.Errorf("%s: missing %q", kind, key)
		}
	}
	return nil
}

func crdEnum(key string, v any, values []string) error {
	if s, ok := v.(string); !ok || !slices.Contains(values, s) {
		return fmt.Errorf("%s: %v is not one of %v", key, v, values)
	}
	return nil
}

// crdInt accepts what the CRD's int64 with minimum 0 holds. yaml.v3 decodes
// integers that do not fit an int (64 bits here) as uint64, which is how
// values of 2^63 and more show.
func crdInt(key string, v any) error {
	if n, ok := v.(int); !ok || n < 0 {
		return fmt.Errorf("%s: %v (%T) is not an integer from 0 to 2^63-1", key, v, v)
	}
	return nil
}

// TestCheckCRDRefuses shows that checkCRD can fail: each change to a good
// resource is one the CRD refuses.
func TestCheckCRDRefuses(t *testing.T) {
	tests := []struct {
		name   string
		change func(spec map[string]any)
	}{
		{"defaultErrnoRet", func(s map[string]any) { s["defaultErrnoRet"] = 38 }},
		{"unknown action", func(s map[string]any) { s["defaultAction"] = "SCMP_ACT_DENY" }},
		{"unknown arch", func(s map[string]any) { s["architectures"] = []any{"x86_64"} }},
		{"errnoRet as a string", func(s map[string]any) { syscall0(s)["errnoRet"] = "38" }},
		{"no names", func(s map[string]any) { delete(syscall0(s), "names") }},
		{"value beyond int64", func(s map[string]any) {
			syscall0(s)["args"] = []any{map[string]any{"index": 0, "value": uint64(math.MaxUint64), "op": "SCMP_CMP_EQ"}}
		}},
		{"unknown operator", func(s map[string]any) {
			syscall0(s)["args"] = []any{map[string]any{"index": 0, "value": 1, "op": "SCMP_CMP_NEQ"}}
		}},
	}
	p := mustParse(t, "testdata/spo/good_allow.toml")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var doc map[string]any
			if err := yaml.Unmarshal(writeSPO(t, p, SPOOptions{}), &doc); err != nil {
				t.Fatal(err)
			}
			if err := checkCRD(doc); err != nil {
				t.Fatalf("good resource refused: %v", err)
			}
			tt.change(doc["spec"].(map[string]any))
			if err := checkCRD(doc); err == nil {
				t.Errorf("checkCRD accepted a resource with %s", tt.name)
			}
		})
	}
}

func syscall0(spec map[string]any) map[string]any {
	return spec["syscalls"].([]any)[0].(map[string]any)
}
