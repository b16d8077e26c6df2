package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/syscell/syscell/bpf"
	"github.com/syscell/syscell/compile"
	"github.com/syscell/syscell/policies"
	"github.com/syscell/syscell/policy"
	"github.com/syscell/syscell/syscalls"
)

// policyFlags are the flags of every command that reads a policy: the
// container and host an OCI profile is imported for.
type policyFlags struct {
	caps   []string
	kernel string
}

func (f *policyFlags) register(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringSliceVar(&f.caps, "caps", nil, "capabilities of the container an OCI profile is imported for; '' for none (default: Docker's 14)")
	fs.StringVar(&f.kernel, "kernel", "", "kernel version `X.Y` that an OCI profile's minKernel is compared with (default: the running kernel's)")
}

// load reads a TOML policy or an OCI profile, a file or a bundled
// policy. The import's warnings go to stderr: they are about the input,
// not the output. A bundled policy's are not said: Docker's profile names
// calls of other architectures, which the user can do nothing about.
func (f *policyFlags) load(cmd *cobra.Command, path string) (*policy.Policy, error) {
	data, bundled, err := readInput(path)
	if err != nil {
		return nil, err
	}
	p, warnings, err := policy.ParseAny(path, data, f.ociOptions(cmd))
	if err != nil {
		return nil, fileError(path, err)
	}
	if !bundled {
		warn(cmd, warnings)
	}
	return p, nil
}

// warn writes an import's warnings to stderr.
func warn(cmd *cobra.Command, warnings []string) {
	for _, w := range warnings {
		fmt.Fprintf(cmd.ErrOrStderr(), "syscell: warning: %s\n", w)
	}
}

// readInput reads a file that may hold a policy; where no file has the
// name, the bundled policy of that name (runtime-default,
// deny-dangerous), and then bundled is true.
func readInput(path string) (data []byte, bundled bool, err error) {
	data, err = os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) && policies.Known(path) {
		data, err = policies.Read(path)
		return data, err == nil, err
	}
	if err != nil {
		return nil, false, fileError(path, err)
	}
	return data, false, nil
}

// ociOptions are the OCI import options the flags set.
func (f *policyFlags) ociOptions(cmd *cobra.Command) policy.OCIOptions {
	opt := policy.OCIOptions{Kernel: f.kernel}
	if cmd.Flags().Changed("caps") {
		opt.Caps = append([]string{}, f.caps...)
	}
	return opt
}

// loadFor loads the policy at path and, when --arch names ABIs, makes them
// the policy's: for commands that write the policy out again.
func (f archFlag) loadFor(cmd *cobra.Command, pf *policyFlags, path string) (*policy.Policy, error) {
	arches, err := f.parse()
	if err != nil {
		return nil, err
	}
	p, err := pf.load(cmd, path)
	if err != nil {
		return nil, err
	}
	if len(arches) > 0 {
		p.Arches = arches
	}
	return p, nil
}

// archFlag is --arch: the ABIs a program covers.
type archFlag []string

func (f *archFlag) register(cmd *cobra.Command) {
	cmd.Flags().StringSliceVar((*[]string)(f), "arch", nil, "ABIs to cover, of x86_64, x86 and x32 (default: the policy's, else x86_64)")
}

// resolve loads the policy at path for the ABIs of --arch, else the
// policy's, else x86_64.
func (f archFlag) resolve(cmd *cobra.Command, pf *policyFlags, path string) (*policy.Resolved, error) {
	arches, err := f.parse()
	if err != nil {
		return nil, err
	}
	p, err := pf.load(cmd, path)
	if err != nil {
		return nil, err
	}
	return resolveFor(p, arches), nil
}

// resolveFor resolves p for arches, else for the policy's, else for
// x86_64.
func resolveFor(p *policy.Policy, arches []syscalls.Arch) *policy.Resolved {
	if len(arches) == 0 {
		arches = p.Arches
	}
	if len(arches) == 0 {
		arches = []syscalls.Arch{syscalls.X86_64}
	}
	return p.Resolve(arches)
}

func (f archFlag) parse() ([]syscalls.Arch, error) {
	arches := make([]syscalls.Arch, len(f))
	for i, name := range f {
		a, err := parseArch(name)
		if err != nil {
			return nil, err
		}
		arches[i] = a
	}
	return arches, nil
}

func parseArch(name string) (syscalls.Arch, error) {
	a, err := syscalls.ParseArch(name)
	if err != nil {
		return 0, inputErrorf("--arch: %w", err)
	}
	return a, nil
}

// compileFlags are the compiler's options.
type compileFlags struct {
	hot        []string
	noOptimize bool
}

func (f *compileFlags) register(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringSliceVar(&f.hot, "hot", nil, "syscalls expected most often, most frequent first, whose paths are made shortest")
	fs.BoolVar(&f.noOptimize, "no-optimize", false, "use the unoptimized compiler, a plain list of tests")
}

func (f *compileFlags) options() (compile.Options, error) {
	for _, name := range f.hot {
		if !syscalls.Known(name) {
			return compile.Options{}, inputErrorf("--hot: unknown syscall %q", name)
		}
	}
	return compile.Options{Hot: f.hot, NoOptimize: f.noOptimize}, nil
}

// compilePolicy compiles r. A policy the compiler cannot render (one too
// large for the kernel) comes back as a *policy.Error, which is bad input;
// any other error is the compiler's failure.
func compilePolicy(r *policy.Resolved, opt compile.Options) ([]bpf.Instruction, error) {
	prog, err := compile.Compile(r, opt)
	var perr *policy.Error
	if errors.As(err, &perr) {
		return nil, perr
	}
	if err != nil {
		return nil, fmt.Errorf("compile %s: %w", r.Source, err)
	}
	return prog, nil
}

// isRawProgram tells a raw program from a policy: every instruction of a
// raw program holds a zero byte (the high byte of its opcode), and no
// policy text does.
func isRawProgram(data []byte) bool { return bytes.IndexByte(data, 0) >= 0 }

// readProgram reads a raw program (an array of struct sock_filter) and
// checks that the kernel would accept it.
func readProgram(path string) ([]bpf.Instruction, error) {
	data, _, err := readInput(path)
	if err != nil {
		return nil, err
	}
	return parseProgram(path, data)
}

// parseProgram decodes a raw program and checks that the kernel would
// accept it.
func parseProgram(path string, data []byte) ([]bpf.Instruction, error) {
	prog, err := decodeProgram(path, data)
	if err != nil {
		return nil, err
	}
	if err := bpf.Validate(prog); err != nil {
		return nil, programError(path, err)
	}
	return prog, nil
}

// decodeProgram decodes a raw program without judging more than its
// length.
func decodeProgram(path string, data []byte) ([]bpf.Instruction, error) {
	switch {
	case len(data) == 0:
		return nil, programError(path, bpf.ErrEmpty)
	case !isRawProgram(data):
		return nil, inputErrorf("%s: text, a policy perhaps, not a compiled seccomp program: compile it first (syscell compile %[1]s -o PROGRAM)", path)
	case bytes.HasPrefix(data, []byte("\x7fELF")):
		return nil, inputErrorf("%s: an ELF object, not a compiled seccomp program", path)
	}
	prog, err := bpf.Decode(data)
	if err != nil {
		return nil, programError(path, err)
	}
	return prog, nil
}

// programError says which file a bpf error is about, as bad input.
func programError(path string, err error) error {
	return inputErrorf("%s: %s", path, strings.TrimPrefix(err.Error(), "bpf: "))
}

// fileError makes err, about reading the file at path, bad input. A policy
// error already names the file and line; an I/O error is reduced to
// "path: reason".
func fileError(path string, err error) error {
	var perr *policy.Error
	if errors.As(err, &perr) {
		return perr
	}
	var pathErr *fs.PathError
	if errors.As(err, &pathErr) {
		return inputErrorf("%s: %w", path, pathErr.Err)
	}
	return badInput{err}
}
