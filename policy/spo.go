package policy

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
	"gopkg.in/yaml.v3"
)

// The Kubernetes Security Profiles Operator's seccomp resource.
const (
	SPOAPIVersion = "security-profiles-operator.x-k8s.io/v1beta1"
	SPOKind       = "SeccompProfile"
)

// SPOOptions name the SeccompProfile resource WriteSPO writes.
type SPOOptions struct {
	// Name is metadata.name, a DNS-1123 subdomain; empty means the
	// policy file's base name without its extension, made a DNS-1123
	// label (lowercase letters, digits and dashes, at most 63).
	Name string
	// Namespace is metadata.namespace, a DNS-1123 label; empty leaves the
	// namespace to kubectl's context.
	Namespace string
}

// spoProfile is the resource as the operator's v1beta1 API defines it
// (api/seccompprofile/v1beta1), with only the fields syscell writes. Its
// spec is an OCI seccomp profile without defaultErrnoRet, which the
// operator writes out as JSON for the runtime; fields are in the order of
// WriteOCI's JSON, so the two outputs read alike.
type spoProfile struct {
	APIVersion string      `yaml:"apiVersion"`
	Kind       string      `yaml:"kind"`
	Metadata   spoMetadata `yaml:"metadata"`
	Spec       spoSpec     `yaml:"spec"`
}

type spoMetadata struct {
	Name      string `yaml:"name"`
	Namespace string `yaml:"namespace,omitempty"`
}

type spoSpec struct {
	DefaultAction specs.LinuxSeccompAction `yaml:"defaultAction"`
	Architectures []specs.Arch             `yaml:"architectures,omitempty"`
	Syscalls      []spoSyscall             `yaml:"syscalls,omitempty"`
}

// spoSyscall has errnoRet as the operator's Go type has it: a uint that is
// left out when zero, so zero cannot be said (see checkSPO).
type spoSyscall struct {
	Names    []string                 `yaml:"names"`
	Action   specs.LinuxSeccompAction `yaml:"action"`
	ErrnoRet uint                     `yaml:"errnoRet,omitempty"`
	Args     []spoArg                 `yaml:"args,omitempty"`
}

type spoArg struct {
	Index    uint                       `yaml:"index"`
	Value    uint64                     `yaml:"value"`
	ValueTwo uint64                     `yaml:"valueTwo,omitempty"`
	Op       specs.LinuxSeccompOperator `yaml:"op"`
}

// WriteSPO writes p as a SeccompProfile resource of the Kubernetes Security
// Profiles Operator, in YAML for kubectl apply. The spec says what p's OCI
// profile says (see OCI, which also tells what is left out), and the output
// depends only on what p means and on opt.
//
// The resource cannot say everything an OCI profile can; WriteSPO fails
// rather than let the runtime decide differently: a default errno other
// than EPERM (there is no defaultErrnoRet), errno(0) on a rule (the
// operator drops a zero errnoRet), and argument values of 2^63 and more
// (the CRD's values are int64). Such errors are *Error, at the rule (at the
// file for the default, whose line a Policy does not keep). Names that
// Kubernetes would refuse are errors too.
func (p *Policy) WriteSPO(w io.Writer, opt SPOOptions) error {
	prof, err := p.spo(opt)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(prof); err != nil {
		return fmt.Errorf("export SeccompProfile: %w", err)
	}
	if err := enc.Close(); err != nil {
		return fmt.Errorf("export SeccompProfile: %w", err)
	}
	if _, err := w.Write(b.Bytes()); err != nil {
		return fmt.Errorf("write SeccompProfile: %w", err)
	}
	return nil
}

// spo builds the resource from p's OCI profile, so that both exports share
// every decision about what runtimes make of a policy.
func (p *Policy) spo(opt SPOOptions) (*spoProfile, error) {
	meta, err := opt.metadata(p.Source)
	if err != nil {
		return nil, fmt.Errorf("export SeccompProfile: %w", err)
	}
	if err := p.checkSPO(); err != nil {
		return nil, err
	}
	oci, err := p.OCI()
	if err != nil {
		return nil, err
	}
	prof := &spoProfile{
		APIVersion: SPOAPIVersion,
		Kind:       SPOKind,
		Metadata:   meta,
		Spec:       spoSpec{DefaultAction: oci.DefaultAction, Architectures: oci.Architectures},
	}
	for _, sc := range oci.Syscalls {
		prof.Spec.Syscalls = append(prof.Spec.Syscalls, spoSyscallOf(sc))
	}
	return prof, nil
}

func spoSyscallOf(sc specs.LinuxSyscall) spoSyscall {
	s := spoSyscall{Names: sc.Names, Action: sc.Action}
	if sc.ErrnoRet != nil {
		s.ErrnoRet = *sc.ErrnoRet
	}
	for _, a := range sc.Args {
		s.Args = append(s.Args, spoArg{Index: a.Index, Value: a.Value, ValueTwo: a.ValueTwo, Op: a.Op})
	}
	return s
}

// checkSPO refuses what the resource cannot say but a runtime would read
// without complaint, deciding differently. Rules with the default action
// are skipped: OCI leaves them out.
func (p *Policy) checkSPO() error {
	if d := p.Default; returnsErrno(d) && d.Data != uint16(unix.EPERM) {
		return errorAt(Pos{File: p.Source}, "cannot export to a SeccompProfile: default %s: it has no defaultErrnoRet, so runtimes would return EPERM", d)
	}
	for _, r := range p.Rules {
		if r.Action == p.Default {
			continue
		}
		if err := checkSPORule(r); err != nil {
			return errorAt(r.Pos, "cannot export to a SeccompProfile: %v", err)
		}
	}
	return nil
}

func checkSPORule(r Rule) error {
	if returnsErrno(r.Action) && r.Action.Data == 0 {
		return fmt.Errorf("%s: the operator drops a zero errnoRet, and runtimes then return EPERM", r.Action)
	}
	for _, c := range r.Conds {
		if a := c.oci(); a.Value > math.MaxInt64 || a.ValueTwo > math.MaxInt64 {
			return fmt.Errorf("%s: the CRD's argument values are int64, at most %#x", c, uint64(math.MaxInt64))
		}
	}
	return nil
}

// returnsErrno tells the actions whose data runtimes read from errnoRet.
func returnsErrno(a Action) bool { return a.Kind == Errno || a.Kind == Trace }

// Kubernetes' rules for names (k8s.io/apimachinery's IsDNS1123Subdomain and
// IsDNS1123Label), compiled when first used, not at every start of
// syscell.
var (
	dns1123Label     = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`) })
	dns1123Subdomain = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	})
)

const (
	maxLabel     = 63
	maxSubdomain = 253
)

// metadata checks the names, deriving the resource's from source when
// none is given.
func (o SPOOptions) metadata(source string) (spoMetadata, error) {
	name := o.Name
	if name == "" {
		var err error
		if name, err = spoName(source); err != nil {
			return spoMetadata{}, err
		}
	}
	if len(name) > maxSubdomain || !dns1123Subdomain().MatchString(name) {
		return spoMetadata{}, fmt.Errorf("metadata.name %q is not a DNS-1123 subdomain (lowercase letters, digits, '-' and '.', starting and ending with a letter or digit, at most %d characters)", name, maxSubdomain)
	}
	if ns := o.Namespace; ns != "" && (len(ns) > maxLabel || !dns1123Label().MatchString(ns)) {
		return spoMetadata{}, fmt.Errorf("metadata.namespace %q is not a DNS-1123 label (lowercase letters, digits and '-', starting and ending with a letter or digit, at most %d characters)", ns, maxLabel)
	}
	return spoMetadata{Name: name, Namespace: o.Namespace}, nil
}

// spoName makes a resource name of a file's base name without its
// extension: lowercase, each run of other characters than letters and
// digits one dash, none at the ends, at most 63 characters. That is a
// DNS-1123 label, the strictest of Kubernetes' rules for names, so the
// name is valid wherever a tool copies it.
func spoName(source string) (string, error) {
	base := filepath.Base(source)
	base = strings.TrimSuffix(base, filepath.Ext(base))
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(base) {
		if ('a' <= r && r <= 'z') || ('0' <= r && r <= '9') {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
			continue
		}
		dash = true
	}
	name := b.String()
	if len(name) > maxLabel {
		name = strings.TrimRight(name[:maxLabel], "-")
	}
	if name == "" {
		return "", fmt.Errorf("cannot make a metadata.name of %q, which has no letters or digits: name the resource", filepath.Base(source))
	}
	return name, nil
}
