package main

import (
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/syscell/syscell/attribute"
	"github.com/syscell/syscell/infer"
	"github.com/syscell/syscell/infer/image"
	"github.com/syscell/syscell/internal/shebang"
	"github.com/syscell/syscell/record"
	"github.com/syscell/syscell/syscalls"
)

type inferCmd struct {
	output  string
	format  string
	dlopen  []string
	check   string
	showMap bool
	explain []string
	cache   cacheFlags
	quiet   bool
}

// cacheFlags choose where the analysis of objects is cached.
type cacheFlags struct {
	dir     string
	noCache bool
}

func (f *cacheFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.dir, "cache", "", "keep objects' analyses in `DIR` (default: $XDG_CACHE_HOME/syscell or ~/.cache/syscell)")
	cmd.Flags().BoolVar(&f.noCache, "no-cache", false, "analyse every object, and keep nothing")
}

// options are the inference options for the program's environment.
func (f *cacheFlags) options() (infer.Options, error) {
	opt := infer.Options{Env: os.Environ(), LoaderCache: "/etc/ld.so.cache", Runtime: attribute.DefaultRuntime()}
	if f.noCache {
		return opt, nil
	}
	dir := f.dir
	if dir == "" {
		var err error
		if dir, err = infer.DefaultCacheDir(); err != nil {
			return opt, err
		}
	}
	opt.Cache = &infer.Cache{Dir: dir}
	return opt, nil
}

func inferCommand() *cobra.Command {
	var c inferCmd
	cmd := &cobra.Command{
		Use:   "infer [flags] -- CMD [ARGS...]",
		Short: "Infer, with no run, which system calls each library of a program can make",
		Long: `Read the program CMD and every object it loads (its DT_NEEDED closure,
found as the dynamic loader finds it, and the libraries --dlopen names)
and write a policy in the form syscell record writes: one compartment per
object, named by its path with its GNU build-id, listing the calls its
code can make, directly or through libc; [runtime] for the calls libc
makes with no caller outside it; the union, with the loader's start-up
calls, as the rule that allows them; EPERM for everything else. CMD is
not run: ARGS are ignored. The analysis reads stripped binaries (x86-64
code, relocations, CFI) and needs no debugging information.

A call libc (or the loader, or the vDSO) makes belongs to the object that
called libc, as record attributes it. The analysis of each object is
cached by build-id (--cache, --no-cache), so that libc is read once.

--check FILE compares the inferred calls with a recorded policy (record's
TOML or syso JSON) compartment by compartment, programs the recording saw
started included: it lists the calls recorded but not inferred (a bug of
the analysis or of the attribution) and those inferred but not recorded,
and exits with status 1 if any call was recorded but not inferred.

--map writes, instead of a policy, the map from each function libc
exports to the calls a call of it can make for its caller, in the
program's context: a line per function, its calls after a tab ("*" for
any call), "(number: argument N)" where its argument N is the number of a
call (syscall(2)), "(indirect: taken functions)" where it makes an
indirect call the analysis bounds only by the runtime's functions whose
addresses are taken.

--explain CALL says, instead of writing a policy, why each compartment
that holds CALL does: a shortest path of functions from its live code to
the instruction that makes the call, each reached by a call, a tail call,
a pointer, or a pool of functions the analysis cannot tell apart (an
indirect call it does not resolve). "all" explains every call of the
union. A function a library does not export is named by its address in
the object.`,
		Example: `  syscell infer -o redis.toml -- redis-server
  syscell infer --format syso-json -o nginx.json -- nginx
  syscell infer --dlopen libnss_files.so.2 -- ./server
  syscell infer --check recorded.toml -- ./server
  syscell infer --explain mremap -- redis-server`,
		Args: needCommand,
		RunE: func(cmd *cobra.Command, args []string) error { return c.run(cmd, args) },
	}
	fs := cmd.Flags()
	fs.SetInterspersed(false)
	fs.StringVarP(&c.output, "output", "o", "", "write the policy to `FILE` (default: standard output)")
	fs.StringVar(&c.format, "format", "toml", "toml (a syscell policy) or syso-json")
	fs.StringArrayVar(&c.dlopen, "dlopen", nil, "also load `LIB` and what it needs, as dlopen would (repeatable)")
	fs.StringVar(&c.check, "check", "", "compare with the recorded policy in `FILE` instead of writing one")
	fs.BoolVar(&c.showMap, "map", false, "write the runtime's map of functions to calls instead of a policy")
	fs.StringSliceVar(&c.explain, "explain", nil, "say why each compartment holds `CALL` (repeatable, comma-separated; all: every call) instead of writing a policy")
	fs.BoolVarP(&c.quiet, "quiet", "q", false, "no summary or progress lines")
	c.cache.register(cmd)
	return cmd
}

func (c *inferCmd) run(cmd *cobra.Command, args []string) error {
	if c.format != "toml" && c.format != "syso-json" {
		return inputErrorf("--format: unknown format %q (want toml or syso-json)", c.format)
	}
	for _, name := range c.explain {
		if _, ok := syscalls.Lookup(syscalls.X86_64, name); !ok && name != "all" {
			return inputErrorf("--explain: unknown x86_64 system call %q", name)
		}
	}
	var recorded *record.Recording
	if c.check != "" {
		var err error
		if recorded, err = record.Load(c.check); err != nil {
			return fileError(c.check, err)
		}
	}
	path, err := programPath(args[0])
	if err != nil {
		return err
	}
	opt, err := c.cache.options()
	if err != nil {
		return err
	}
	opt.Dlopen = c.dlopen
	if !c.quiet {
		opt.Progress = cmd.ErrOrStderr()
	}
	switch {
	case recorded != nil:
		inferred, err := infer.Bound(recorded, path, opt)
		if err != nil {
			return inferError(err)
		}
		return checkRecording(cmd.ErrOrStderr(), recorded, inferred)
	case c.showMap:
		m, err := infer.RuntimeMap(path, opt)
		if err != nil {
			return inferError(err)
		}
		return writeOutput(cmd, c.output, formatMap(m))
	case len(c.explain) > 0:
		names := c.explain
		if slices.Contains(names, "all") {
			names = nil
		}
		whys, err := infer.Explain(path, opt, names)
		if err != nil {
			return inferError(err)
		}
		return writeOutput(cmd, c.output, formatWhys(whys))
	}
	res, err := infer.Infer(path, opt)
	if err != nil {
		return inferError(err)
	}
	if !c.quiet {
		fmt.Fprint(cmd.ErrOrStderr(), summary(res))
	}
	return writeRecording(cmd, c.output, c.format, res.Recording())
}

// inferError makes a program or library that cannot be found or read as
// an x86-64 ELF object bad input.
func inferError(err error) error {
	var pathErr *os.PathError
	var format *elf.FormatError
	if errors.As(err, &pathErr) || errors.As(err, &format) || errors.Is(err, infer.ErrNotFound) || errors.Is(err, image.ErrNotX86_64) {
		return badInput{err}
	}
	return err
}

// checkRecording compares a recording with what its program and the
// programs and libraries it saw can do, and fails if a recorded call was
// not inferred.
func checkRecording(w io.Writer, recorded, inferred *record.Recording) error {
	report := infer.Compare(recorded, inferred)
	report.Write(w)
	if n := report.FalseNegatives(); n > 0 {
		return fmt.Errorf("%d recorded calls were not inferred", n)
	}
	return nil
}

// programPath finds the program name runs: the file on PATH, or for a
// #! script the interpreter the kernel would start, which is what is
// analysed.
func programPath(name string) (string, error) {
	path, err := exec.LookPath(name)
	if err != nil {
		return "", inputErrorf("%s: %w", name, errors.Unwrap(err))
	}
	program, err := shebang.Program("", path)
	if err != nil {
		return "", inputErrorf("%w", err)
	}
	if !isELF(program) {
		return "", inputErrorf("%s: neither an ELF program nor a #! script", program)
	}
	return program, nil
}

// isELF reports whether the file at path starts as an ELF file does.
func isELF(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	magic := make([]byte, len(elf.ELFMAG))
	_, err = io.ReadFull(f, magic)
	return err == nil && string(magic) == elf.ELFMAG
}

// summary describes an inference in a few lines for people.
func summary(res *infer.Result) string {
	var b strings.Builder
	union := map[string]bool{}
	for _, c := range res.Recording().Compartments {
		for name := range c.Calls {
			union[name] = true
		}
	}
	for _, name := range res.StartUp.Names() {
		union[name] = true
	}
	fmt.Fprintf(&b, "syscell: inferred %d compartments of %d objects (%d analyses from the cache) in %.1f s: %d calls in the union\n",
		len(res.Compartments)+1, res.Stats.Objects, res.Cached, res.Elapsed.Seconds(), len(union))
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, c := range res.Compartments {
		fmt.Fprintf(tw, "  %s\t%d calls\n", c.Path, len(c.Calls.Names()))
	}
	fmt.Fprintf(tw, "  %s\t%d calls\n", record.RuntimeName, len(res.Runtime.Names()))
	tw.Flush()
	return b.String()
}

// formatMap writes the runtime's map: a line per function, its calls
// after a tab, "*" for every call, the parameters that give the number
// of a call, and whether it makes an indirect call the analysis resolves
// only to the pool of the runtime's functions whose address is taken
// (whose calls are included).
func formatMap(m []infer.Entry) []byte {
	var b bytes.Buffer
	for _, e := range m {
		calls := strings.Join(e.Calls.Names(), " ")
		if e.Calls.All {
			calls = "*"
		}
		fmt.Fprintf(&b, "%s\t%s", e.Name, calls)
		if e.Params != 0 {
			fmt.Fprintf(&b, "\t(number: argument %s)", argList(e.Params))
		}
		if e.Indirect {
			b.WriteString("\t(indirect: taken functions)")
		}
		b.WriteByte('\n')
	}
	return b.Bytes()
}

func argList(bits uint8) string {
	var out []string
	for i := range 6 {
		if bits&(1<<i) != 0 {
			out = append(out, fmt.Sprint(i+1))
		}
	}
	return strings.Join(out, ", ")
}

// formatWhys writes a path per call and compartment: the compartment's
// function first, each next one with how it is reached, and how the last
// makes the call.
func formatWhys(whys []infer.Why) []byte {
	var b bytes.Buffer
	for _, w := range whys {
		fmt.Fprintf(&b, "%s in %s:\n", w.Call, w.Compartment)
		for i, s := range w.Steps {
			switch {
			case i == 0 && s.How == "":
				fmt.Fprintf(&b, "  %s\n", s)
			case i == 0:
				fmt.Fprintf(&b, "  %s: %s\n", s.How, s)
			default:
				fmt.Fprintf(&b, "  -> %s: %s\n", s.How, s)
			}
		}
		fmt.Fprintf(&b, "  => %s\n", w.End)
	}
	return b.Bytes()
}
